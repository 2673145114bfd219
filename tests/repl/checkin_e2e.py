"""Check-ins and the shown-output cursor through dshpty-repl --json, with the real shell:
a send with no text (and no keys, no submit) writes nothing and completes at once when the
shell is at its prompt, else as a send does; every result holds what no earlier result
showed: output that arrived between calls (a command that ran on after its send ended
idle, a line typed into a running job), with the status of what finished meanwhile.
`keys: []` presses nothing. No sleeps: each check-in waits as long as the case needs."""

import os
import shutil
import subprocess
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


def cancel_before_write(repl):
    # A send cancelled before its text was written (held behind a signal's aftermath) types
    # nothing and is answered as a check-in: at once at the prompt, never its idle time.
    for n in range(5):
        job = repl.ok({"id": f"cbw-job-{n}", "op": "send", "sessionId": "pty-1", "text": "sleep 30", "idleMs": 100})
        check(job["waitReason"] == "inferred_idle", job)
        repl.request({"id": f"cbw-int-{n}", "op": "signal", "sessionId": "pty-1", "signal": "SIGINT"})
        repl.request({"id": f"cbw-send-{n}", "op": "send", "sessionId": "pty-1",
                      "text": f"echo never-typed-{n}", "idleMs": 60000, "timeoutMs": 120000})
        repl.request({"id": f"cbw-cancel-{n}", "op": "cancel", "sendId": f"cbw-send-{n}"})
        check(repl.response(f"cbw-int-{n}").get("result", {}).get("delivered") is True, "the signal")
        sent = repl.response(f"cbw-send-{n}")["result"]
        cancelled = repl.response(f"cbw-cancel-{n}")["result"]
        # The cancel may also land after the write (then it interrupts the echo, or nothing):
        # either way the send comes back at the prompt, without waiting out its idle time.
        check(sent["waitReason"] == "stdin_read", (sent, cancelled))
        if f"echo never-typed-{n}" not in sent["viewport"]:
            check(sent["exitCode"] == 130, sent)  # the sleep's end, seen by the check-in
        after = repl.ok({"id": f"cbw-after-{n}", "op": "send", "sessionId": "pty-1", "text": f"echo after-{n}"})
        check(after["waitReason"] == "stdin_read" and f"\nafter-{n}\n" in after["viewport"], after)


def first_line_is_own(repl):
    # An unended line from an earlier command stays out of a later send's viewport, even when
    # the line editor redraws that line (a backspace at the prompt).
    junk = repl.ok({"id": "junk", "op": "send", "sessionId": "pty-1", "text": "printf EARLIER-JUNK"})
    check(junk["waitReason"] == "stdin_read", junk)
    typed = repl.ok({"id": "half", "op": "send", "sessionId": "pty-1", "text": "echo abcd", "submit": False,
                     "idleMs": 300})
    check("EARLIER-JUNK" not in typed["viewport"], typed)
    erased = repl.ok({"id": "bs", "op": "send", "sessionId": "pty-1", "keys": ["BSpace"], "idleMs": 300})
    check("EARLIER-JUNK" not in erased["viewport"] and "dsh>" not in erased["viewport"], erased)
    ran = repl.ok({"id": "enter", "op": "send", "sessionId": "pty-1", "keys": ["Enter"]})
    check(ran["waitReason"] == "stdin_read" and "\nabc\n" in ran["viewport"], ran)
    check("EARLIER-JUNK" not in ran["viewport"], ran)


def rebase_escape(repl, home):
    # git rebase -i in vim, `c w squash Escape` in one call, 20 times: the screen returned
    # shows the edit every time (vim draws it after its escape delay, here 50 ms as a
    # vimrc's ttimeoutlen makes it; the send waits).
    repo = os.path.join(home, "repo")
    os.makedirs(repo)
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "first"],
                 ["commit", "-q", "--allow-empty", "-m", "second"], ["commit", "-q", "--allow-empty", "-m", "third"]):
        subprocess.run(["git", "-C", repo, *args], check=True, env=env, stdin=subprocess.DEVNULL)
    opened = repl.ok({"id": "rb-open", "op": "open", "type": "shell", "name": "rebase", "terminal": "xterm",
                      "cwd": repo})
    sid = opened["sessionId"]
    repl.ok({"id": "rb-env", "op": "send", "sessionId": sid,
             "text": "export GIT_EDITOR=\"vim -u NONE -N --cmd 'set ttimeout ttimeoutlen=50'\" GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.invalid "
                     "GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.invalid"})
    for n in range(20):
        started = repl.ok({"id": f"rb-{n}", "op": "send", "sessionId": sid, "text": "git rebase -i HEAD~2"})
        check(started["waitReason"] == "stdin_read" and started.get("screen"), started)
        first = started["screen"]["lines"][0]
        check(first.startswith("pick "), f"round {n}: the todo list: {started}")
        r = repl.ok({"id": f"rb-keys-{n}", "op": "send", "sessionId": sid,
                     "keys": ["j", "c", "w", "s", "q", "u", "a", "s", "h", "Escape"]})
        lines = r["screen"]["lines"] if r.get("screen") else []
        check(r["waitReason"] == "stdin_read", r)
        check(len(lines) > 1 and lines[1].startswith("squash "), f"round {n}: the edit is not drawn: {lines[:3]}")
        check(not any("-- INSERT --" in line for line in lines), f"round {n}: still in insert mode: {lines}")
        # :cq leaves vim with an error: git aborts the rebase and the repository is as it was.
        quit_ = repl.ok({"id": f"rb-quit-{n}", "op": "send", "sessionId": sid, "text": ":cq"})
        check(quit_["waitReason"] == "stdin_read" and quit_["exitCode"] not in (0, None), quit_)
    log = subprocess.run(["git", "-C", repo, "log", "--format=%s"], check=True, capture_output=True, text=True)
    check(log.stdout.split() == ["third", "second", "first"], log.stdout)
    repl.ok({"id": "rb-close", "op": "close", "sessionId": sid})


def main():
    repl_path = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="dshpty-checkin-") as home:
        os.environ["HOME"] = home
        repl = JsonRepl(repl_path)
        try:
            repl.ok({"id": 1, "op": "open", "type": "shell", "name": "main"})
            late_output(repl)
            typed_during_job(repl, os.path.join(home, "typed"))
            cancel_before_write(repl)
            first_line_is_own(repl)
            if shutil.which("vim") and shutil.which("git"):
                vim_escape(repl, home)
                rebase_escape(repl, home)
            else:
                print("vim or git is not installed: the screen-settle cases are skipped")
            repl.request({"id": "bye", "op": "shutdown"})
            check(repl.wait_exit() == 0, "shutdown")
            wait_gone(repl.pids, "after shutdown")
        finally:
            repl.close()
    print("ok: check-ins and the shown-output cursor")


if __name__ == "__main__":
    main()
