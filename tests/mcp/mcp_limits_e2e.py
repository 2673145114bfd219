"""Per-session limits through dshpty-mcp (docs/mcp.md, docs/security.md "Resource limits"),
with the real shell backend and real cgroups: terminal_open's `limits` argument (its schema
from the field table) may lower the operator's --limit-* but never raise them; a fork loop
under limits.pids 64 stops at the cap and the send's status lines and terminal_list say
"[limit: pids]", a neighbour's say nothing. Close leaves no session cgroup. A machine where no
cgroup can be made reports the cgroup case skipped, with the reason.

usage: mcp_limits_e2e.py DSHPTY_MCP"""

import os
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "repl"))
import mcp_client  # noqa: E402
from mcp_client import McpServer, check  # noqa: E402
from session_cgroups import SessionCgroups  # noqa: E402

# The storm: bash retries a refused fork (1+2+4+8 s) before it gives the loop up; the
# sleeps end soon after (the shell then forks again for its prompt), bounding the test.
mcp_client.DEADLINE_S = 150.0
STORM = "for i in $(seq 300); do sleep 30 & done; echo looped"


def main(binary):
    server = McpServer(binary, ["--limit-pids", "200"])
    cgroups = SessionCgroups(server.proc.pid)
    try:
        server.initialize()
        tools = {t["name"]: t for t in server.call("tools/list")["tools"]}
        limits = tools["terminal_open"]["inputSchema"]["properties"]["limits"]
        check(limits["type"] == "object" and set(limits["properties"]) == {"pids", "memory", "cpu"} and
              limits["additionalProperties"] is False, str(limits))
        text = server.tool_error("terminal_open", {"limits": {"pids": 201}}, "INVALID_ARGUMENT")
        check("limits.pids" in text, text)
        text = server.tool_error("terminal_open", {"limits": {"cpu": "half"}}, "INVALID_ARGUMENT")
        check("limits.cpu" in text, text)

        text, is_error = server.tool_result(server.start_tool("terminal_open",
                                                              {"name": "capped", "limits": {"pids": 64}}))
        if is_error:
            check(text.startswith("error: BACKEND_FAILED"), text)
            print(f"SKIP: no cgroup can be made here: {text}", flush=True)
            check(server.close_stdin_and_wait() == 0, "exit status")
            return 77
        server.tool("terminal_open", {"name": "free"})
        items, is_error = server.tool_items(server.start_tool(
            "terminal_send", {"session": "capped", "text": STORM, "timeout_ms": 140000, "idle_ms": 140000}))
        check(is_error is False and len(items) == 2, str(items))
        check("fork: retry" in items[0] or "Resource temporarily unavailable" in items[0], str(items))
        check(items[1].endswith("[limit: pids]\n"), str(items))  # a status line, never in the output
        beside = server.tool("terminal_send", {"session": "free", "text": "echo n-$((6*7))"})
        check("n-42" in beside and "[limit:" not in beside, beside)
        listed = server.tool("terminal_list")
        capped_line = next(line for line in listed.splitlines() if "(capped)" in line)
        free_line = next(line for line in listed.splitlines() if "(free)" in line)
        check(capped_line.endswith(" [limit: pids]") and "[limit:" not in free_line, listed)
        # The neighbour has the operator's default: a cgroup of its own too.
        check(cgroups.sessions() == 2, f"not two session cgroups: {cgroups.present()}")
        server.tool("terminal_close", {"session": "capped"})
        check(cgroups.sessions() == 1, f"close left {cgroups.present()}")
        check(server.close_stdin_and_wait() == 0, "exit status")
        check(not cgroups.present(), f"EOF left {cgroups.present()}")
        return 0
    except Exception:
        traceback.print_exc()  # shown before the cleanup's own check can mask it
        raise
    finally:
        server.kill()
        left = cgroups.remove_left()
        check(not left, f"session cgroups left behind: {left}")


if __name__ == "__main__":
    status = main(sys.argv[1])
    if status == 0:
        print("ok")
    raise SystemExit(status)
