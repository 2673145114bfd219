#!/usr/bin/env python3
"""The README's embedding example is tests/embed/readme_example.cpp, byte for byte.

Usage: check_readme.py README.md readme_example.cpp

The first ```cpp block under the "## Embedding" heading must equal the file, so the
example the suite compiles and runs is the one readers copy.
"""
import difflib
import re
import sys


def main():
    readme, example = sys.argv[1:3]
    text = open(readme, encoding="utf-8").read()
    section = re.search(r"^## Embedding\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    if not section:
        print("embed: README.md has no '## Embedding' section")
        return 1
    block = re.search(r"^```cpp\n(.*?)^```", section.group(1), re.S | re.M)
    if not block:
        print("embed: the Embedding section has no ```cpp block")
        return 1
    want = open(example, encoding="utf-8").read()
    if block.group(1) == want:
        print("embed: the README's embedding example matches", example)
        return 0
    print("embed: the README's embedding example differs from", example)
    sys.stdout.writelines(difflib.unified_diff(
        block.group(1).splitlines(True), want.splitlines(True), "README.md", example))
    return 1


if __name__ == "__main__":
    sys.exit(main())
