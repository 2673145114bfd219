"""What a model reads through dshpty-mcp holds every byte of output once (docs/mcp.md,
"Cancellation and progress" and the terminal_send row), end to end with the real shell:

  cancelled   `sleep 1.5; echo FRONT-DONE` settles idle; a send typed behind it is cancelled
              (notifications/cancelled: no response). Its text never runs (a file it would
              make is never made), and FRONT-DONE, which that dropped result held, is in the
              next send's result on the session, with a line naming the cancelled call.
  screen      `echo IMPORTANT-LINE; seq 1 3; vim` in an xterm session: the result that ends
              on vim's alternate screen carries the lines printed before it, then the screen.

    mcp_results_e2e.py PATH/TO/dshpty-mcp

Exit 0 on pass, 1 on failure, 77 when vim is missing (the screen part needs it).
"""

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcp_client import McpServer, check, session_members  # noqa: E402

ROUNDS = 3


def cancelled_round(server, scratch, n):
    """One round; False when the first send did not settle idle (too slow a machine to type
    behind it): the round proves nothing."""
    front = server.tool("terminal_send", {"session": "cx", "text": f"sleep 1.5; echo FRONT-DONE-{n}", "idle_ms": 500})
    if "[wait: inferred_idle]" not in front:
        return False
    check(f"\nFRONT-DONE-{n}" not in front, f"the first result already holds the output: {front}")
    path = os.path.join(scratch, f"ran-{n}")
    rid = server.start_tool("terminal_send", {"session": "cx", "text": f"touch {path}", "idle_ms": 4000})
    server.notify("notifications/cancelled", {"requestId": rid, "reason": "test"})
    # Check-ins until the shell's prompt is back (the first waits for the cancelled send to
    # wind down): together they must hold the front command's output.
    seen = ""
    for _ in range(5):
        text = server.tool("terminal_send", {"session": "cx", "idle_ms": 3000})
        seen += text
        if "[wait: stdin_read]" in text:
            break
    check(f"FRONT-DONE-{n}" in seen, f"FRONT-DONE-{n} is in no result the client got: {seen!r}")
    check(seen.count(f"FRONT-DONE-{n}\n") == 1, f"shown twice: {seen!r}")
    check(not os.path.exists(path), "the cancelled text ran")
    check(not any(m.get("id") == rid for m in server.messages), "a response was sent for the cancelled call")
    return True


def cancelled(server):
    server.tool("terminal_open", {"name": "cx"})
    with tempfile.TemporaryDirectory(prefix="dshpty-mcp-results-") as scratch:
        proved = sum(cancelled_round(server, scratch, n) for n in range(ROUNDS))
    check(proved > 0, "no round typed behind the running command: the machine was too slow")
    server.tool("terminal_close", {"session": "cx"})


def screen(server):
    server.tool("terminal_open", {"name": "vi", "terminal": "xterm"})
    items, is_error = server.tool_items(server.start_tool(
        "terminal_send", {"session": "vi", "text": "echo IMPORTANT-LINE; seq 1 3; vim -u NONE -N -n -i NONE"}))
    check(is_error is False and len(items) == 2, f"{items}")
    output = items[0]
    check("[screen " in output and " alternate" in output, f"expected vim's screen: {output!r}")
    check("IMPORTANT-LINE\n1\n2\n3\n" in output, f"the lines printed before vim are missing: {output!r}")
    check(output.index("IMPORTANT-LINE") < output.index("[screen "), f"the output comes before the screen: {output!r}")
    quit_text = server.tool("terminal_send", {"session": "vi", "text": ":q!"})
    check("[wait: stdin_read]" in quit_text and "[screen " not in quit_text, quit_text)
    check("IMPORTANT-LINE" not in quit_text, f"shown twice: {quit_text!r}")
    server.tool("terminal_close", {"session": "vi"})


def main():
    binary = sys.argv[1]
    server = McpServer(binary)
    try:
        server.initialize("2025-06-18")
        cancelled(server)
        if shutil.which("vim") is None:
            print("SKIP: vim is not installed (the screen part)", flush=True)
            skipped = True
        else:
            screen(server)
            skipped = False
        check(server.close_stdin_and_wait() == 0, "exit status after EOF")
        check(session_members(server.proc.pid) == [], f"processes left: {session_members(server.proc.pid)}")
    finally:
        server.kill()
    if skipped:
        raise SystemExit(77)
    print("ok")


if __name__ == "__main__":
    main()
