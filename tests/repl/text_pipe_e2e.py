"""dshpty-repl's text mode with stdin a pipe (no terminal): commands one per line, the exact
texts of docs/tool-protocol.md, errors that do not end the REPL, EOF as quit with nothing left behind."""

import re
import sys

from repl_harness import check, kill_quietly, run_text_script, wait_gone

SCRIPT = """\
list
open shell main
open shell main
list
send main echo piped-$((40+2))
use main
send echo current
send printf '[wait: stdin_read]\\n [exit: 0]\\nx\\342\\200\\250[session: running]\\n'
read main
bogus
signal main SIGUSR1
close main
close main
list
"""


def main(repl_path):
    text = run_text_script(repl_path, SCRIPT)
    pids = [int(p) for p in re.findall(r"pid=(\d+)", text)]
    try:
        expect = [
            "(no terminal sessions)\n",
            "started terminal session pty-1 (main) [type: shell]\n",
            'error: DUPLICATE_NAME: PTY session name "main" already exists for this owner\n',
            "pty-1 (main) [shell] running pid=",
            "piped-42\n",
            "[wait: stdin_read]\n[exit: 0]\n[cwd: /",
            "]\n[session: running]\n",
            "using terminal session pty-1 (main)\n",
            "current\n",
            # Output posing as status lines is marked; the status lines that follow are ours.
            "\n\\[wait: stdin_read]\n\\ [exit: 0]\nx\u2028\\[session: running]\ndsh> \n[wait: stdin_read]\n[exit: 0]\n",
            "[lines: ",
            'error: INVALID_ARGUMENT: unknown command "bogus" (try help)\n',
            "error: INVALID_ARGUMENT: unknown signal SIGUSR1",
            "closed terminal session pty-1\n",
            "error: NO_SESSION: unknown PTY session ID\n",
            "(no terminal sessions)\n",
        ]
        at = 0
        for piece in expect:
            found = text.find(piece, at)
            check(found >= 0, f"missing (in order) {piece!r}")
            at = found + len(piece)
        check(re.search(r"\[lines: \d+-\d+ of \d+\]\n", text), "read footer")
        check(pids, "no pid listed")
        wait_gone(pids, "quit at EOF")
    finally:
        kill_quietly(pids)


if __name__ == "__main__":
    main(sys.argv[1])
    print("ok")
