"""One field table per protocol, held against every place that lists the fields: the
table (`dshpty-repl --print-fields`) against the MCP server's served inputSchema (names,
required, types, bounds, choices), the Python client's open/send field builders (called with
every option given) and the TypeScript client's (read from its source: the build needs npm).
A field added on one side only fails here, naming the side and the field.

Usage: field_table.py REPL MCP CLIENTS_DIR"""

import inspect
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mcp"))
from mcp_client import McpServer, check, fail  # noqa: E402

REPL, MCP, CLIENTS = sys.argv[1], sys.argv[2], sys.argv[3]


def table():
    out = subprocess.run([REPL, "--print-fields"], capture_output=True, timeout=60, check=True)
    return json.loads(out.stdout)


def same(what, table_names, side_names):
    missing = [n for n in table_names if n not in side_names]
    extra = [n for n in side_names if n not in table_names]
    check(not missing and not extra,
          f"{what}: in the table but not here: {missing}; here but not in the table: {extra}")


def mcp_schema_matches(rows):
    server = McpServer(MCP)
    try:
        server.initialize()
        tools = {t["name"]: t["inputSchema"] for t in server.call("tools/list")["tools"]}
        check(server.close_stdin_and_wait() == 0, "dshpty-mcp: exit status")
    finally:
        server.kill()
    same("MCP tools", list(rows), list(tools))
    for name, fields in rows.items():
        schema = tools[name]
        properties = schema["properties"]
        same(f"{name} arguments", [f["name"] for f in fields], list(properties))
        check(schema.get("required", []) == [f["name"] for f in fields if f["required"]],
              f"{name}: required {schema.get('required')}")
        for f in fields:
            p = properties[f["name"]]
            where = f"{name}.{f['name']}"
            check(p["type"] == f["type"], f"{where}: type {p['type']} vs {f['type']}")
            for key in ("minimum", "maximum", "enum"):
                check(p.get(key) == f.get(key), f"{where}: {key} {p.get(key)} vs {f.get(key)}")
            check(bool(p.get("description")), f"{where}: no description")


def python_client_matches(rows):
    sys.path.insert(0, os.path.join(CLIENTS, "python", "src"))
    sys.dont_write_bytecode = True
    from dshpty import _requests
    for op, builder in (("open", _requests.open_fields), ("send", _requests.send_fields)):
        # Every option given (a string stands for any value): the fields it emits.
        given = {p: "x" for p in inspect.signature(builder).parameters}
        same(f"the Python client's {op} fields", [f["name"] for f in rows[op]], list(builder(**given)))


def typescript_client_matches(rows):
    with open(os.path.join(CLIENTS, "typescript", "src", "wire.ts")) as f:
        source = f.read()
    for op, function in (("open", "openFields"), ("send", "sendFields")):
        body = re.search(r"function " + function + r"\(.*?\{(.*?)\n\}", source, re.S)
        check(body is not None, f"wire.ts has no {function}")
        given = re.search(r"given\(\{(.*?)\}\)", body.group(1), re.S)
        check(given is not None, f"wire.ts {function}: no given({{...}})")
        names = [m.group(1) for m in re.finditer(r"^\s*(\w+)\s*[:,]", given.group(1), re.M)]
        same(f"the TypeScript client's {op} fields", [f["name"] for f in rows[op]], names)


def main():
    rows = table()
    check(set(rows) == {"json", "mcp"}, f"sections: {list(rows)}")
    mcp_schema_matches(rows["mcp"])
    python_client_matches(rows["json"])
    typescript_client_matches(rows["json"])
    print("field table: MCP schema, Python and TypeScript clients agree")


if __name__ == "__main__":
    main()
