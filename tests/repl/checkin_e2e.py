"""Check-ins and the shown-output cursor through dshpty-repl --json, with the real shell:
a send with no text (and no keys, no submit) writes nothing and completes at once when the
shell is at its prompt, else as a send does; every result holds what no earlier result
showed: output that arrived between calls (a command that ran on after its send ended
idle, a line typed into a running job), with the status of what finished meanwhile.
`keys: []` presses nothing. No sleeps: each check-in waits as long as the case needs."""

import os
import shutil
import sys
import tempfile

from repl_harness import JsonRepl, check, wait_gone


def late_output(repl):
    # The send ends idle while the command runs on; its tail, its prompt and its status
    # belong to the next look.
    sent = repl.ok({"id": "late", "op": "send", "sessionId": "pty-1",
                    "text": "sleep 1; echo LATE; (exit 5)", "idleMs": 300})
    check(sent["waitReason"] == "inferred_idle" and sent["exitCode"] is None, sent)
    look = repl.ok({"id": "look1", "op": "send", "sessionId": "pty-1", "idleMs": 20000})
    check(look["waitReason"] == "stdin_read" and look["evidence"] == "prompt_marks", look)
    check("\nLATE\n" in "\n" + look["viewport"], look)
    check(look["exitCode"] == 5, look)
    # Nothing new since: at once, at the prompt, with the same status; nothing repeated.
    again = repl.ok({"id": "look2", "op": "send", "sessionId": "pty-1", "idleMs": 20000})
    check(again["waitReason"] == "stdin_read" and again["exitCode"] == 5, again)
    check("LATE" not in again["viewport"], again)
    # keys: [] is a check-in too: no Enter pressed (no new prompt line, no new status).
    keys = repl.ok({"id": "look3", "op": "send", "sessionId": "pty-1", "keys": [], "idleMs": 20000})
    check(keys["waitReason"] == "stdin_read" and keys["viewport"] == "", keys)


def typed_during_job(repl, marker_file):
    # A line typed into a running job; the job interrupted; the line then runs, and what it
    # printed is the next look's, with its status.
    first = repl.ok({"id": "job", "op": "send", "sessionId": "pty-1", "text": "sleep 30", "idleMs": 200})
    check(first["waitReason"] == "inferred_idle", first)
    typed = repl.ok({"id": "typed", "op": "send", "sessionId": "pty-1",
                     "text": f"echo during >> {marker_file}; echo during-out", "idleMs": 200})
    check(typed["waitReason"] == "inferred_idle", typed)
    repl.ok({"id": "int", "op": "signal", "sessionId": "pty-1", "signal": "SIGINT"})
    look = repl.ok({"id": "look4", "op": "send", "sessionId": "pty-1", "idleMs": 20000})
    check(look["waitReason"] == "stdin_read", look)
    status = repl.ok({"id": "status", "op": "send", "sessionId": "pty-1", "text": "cat " + marker_file})
    seen = look["viewport"] + status["viewport"]
    with open(marker_file) as f:
        ran = f.read().count("during")
    # bash reads the typed-ahead line after the job's end (or drops it with the interrupt):
    # either way the results say what happened, and it ran at most once.
    check(ran <= 1, f"typed line ran {ran} times")
    if ran == 1:
        check("during-out" in seen, (look, status))


def vim_escape(repl, home):
    # Keys ending in Escape: the result's screen is vim's after it left insert mode, every
    # time (vim waits out its escape timeout reading the terminal first: the send waits too).
    opened = repl.ok({"id": "vim-open", "op": "open", "type": "shell", "name": "vim", "terminal": "xterm"})
    sid = opened["sessionId"]
    target = os.path.join(home, "edit.txt")
    started = repl.ok({"id": "vim", "op": "send", "sessionId": sid, "text": f"vim -u NONE -N {target}"})
    check(started["waitReason"] == "stdin_read" and started.get("screen"), started)
    for n in range(20):
        r = repl.ok({"id": f"esc-{n}", "op": "send", "sessionId": sid, "keys": ["i", "x", "Escape"]})
        screen = "\n".join(r["screen"]["lines"]) if r.get("screen") else ""
        check(r["waitReason"] == "stdin_read", r)
        check("-- INSERT --" not in screen, f"round {n}: the screen still in insert mode: {r}")
        check("x" * (n + 1) in screen, f"round {n}: the edit is not drawn: {r}")
    done = repl.ok({"id": "vim-quit", "op": "send", "sessionId": sid, "text": ":wq"})
    check(done["waitReason"] == "stdin_read" and done["exitCode"] == 0, done)
    with open(target) as f:
        check(f.read().strip() == "x" * 20, "the file vim wrote")
    repl.ok({"id": "vim-close", "op": "close", "sessionId": sid})


def main():
    repl_path = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="dshpty-checkin-") as home:
        os.environ["HOME"] = home
        repl = JsonRepl(repl_path)
        try:
            repl.ok({"id": 1, "op": "open", "type": "shell", "name": "main"})
            late_output(repl)
            typed_during_job(repl, os.path.join(home, "typed"))
            if shutil.which("vim"):
                vim_escape(repl, home)
            else:
                print("vim is not installed: the screen-settle case is skipped")
            repl.request({"id": "bye", "op": "shutdown"})
            check(repl.wait_exit() == 0, "shutdown")
            wait_gone(repl.pids, "after shutdown")
        finally:
            repl.close()
    print("ok: check-ins and the shown-output cursor")


if __name__ == "__main__":
    main()
