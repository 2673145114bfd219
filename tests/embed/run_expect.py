#!/usr/bin/env python3
"""Runs a program and checks its exit status and that its output matches a pattern.

Usage: run_expect.py REGEX PROGRAM [ARGS...]
"""
import re
import subprocess
import sys

def main():
    pattern, cmd = sys.argv[1], sys.argv[2:]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=120)
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        print(f"embed: {cmd[0]} exited with status {proc.returncode}")
        return 1
    if not re.search(pattern, proc.stdout, re.S):
        print(f"embed: output does not match {pattern!r}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
