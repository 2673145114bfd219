#!/usr/bin/env python3
"""libdshpty.so exports the public API and nothing else (style.md point 10).

Usage: check_exports.py LIBDSHPTY_SO NM

Every defined dynamic symbol must be in namespace dshpty (or be its vtable / typeinfo),
outside dshpty::detail (a public template instantiated over an internal type is allowed:
it is a weak inline copy), and carry the DSHPTY_0 version; no libev symbol (ev_*) and no
std:: template instantiation may leak. A few API symbols must be there, so an empty or
wrongly scoped version script fails too.
"""
import re
import subprocess
import sys

ALLOWED = re.compile(r"^(?:(?:typeinfo name for|typeinfo for|vtable for) )?dshpty::")
REQUIRED = [
    "dshpty::Service::Service(ev_loop*)",
    "dshpty::Service::spawn(",
    "dshpty::make_error(dshpty::Code)",
    "dshpty::Deferred::post(",
    "dshpty::ScriptedBackend::ScriptedBackend(",
    "dshpty::make_shell_backend(",
]


def strip_template_args(name):
    """The name without its template arguments: `dshpty::Result<dshpty::detail::Record*>::
    ~Result()` is a public template's weak instantiation, not an internal helper."""
    out, depth = [], 0
    for ch in name:
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def main():
    lib, nm = sys.argv[1:3]
    out = subprocess.run([nm, "-D", "--defined-only", "-C", lib], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    raw = subprocess.run([nm, "-D", "--defined-only", lib], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    bad, names = [], []
    for line in out.splitlines():
        parts = line.split(None, 2)
        if len(parts) < 3:
            continue
        kind, name = parts[1], parts[2]
        if kind == "A" and name == "DSHPTY_0":
            continue  # the version node itself
        if not name.endswith("@@DSHPTY_0"):
            bad.append(f"unversioned: {name}")
            continue
        name = name[: -len("@@DSHPTY_0")]
        names.append(name)
        if not ALLOWED.match(name) or "::detail::" in strip_template_args(name.split("(")[0]):
            bad.append(name)
    for line in raw.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[2].startswith("ev_"):
            bad.append(f"libev leaks: {parts[2]}")
    missing = [r for r in REQUIRED if not any(n.startswith(r) for n in names)]
    print(f"embed: {len(names)} exported symbols, {len(bad)} unexpected, {len(missing)} missing")
    for name in bad:
        print("  unexpected:", name)
    for name in missing:
        print("  missing:", name)
    return 1 if bad or missing else 0


if __name__ == "__main__":
    sys.exit(main())
