"""A cancel takes back only its own input, and a line the shell did not run is said, end to
end for one shell dialect through the real `dshpty-repl --json` (docs/shell-backend.md,
"Cancel" and "A line not run"; docs/tool-protocol.md).

    line_state_e2e.py PATH/TO/dshpty-repl bash|zsh|fish

Scenarios:
  typed-ahead-cancel  20 rounds: `sleep 1; echo FIRST-DONE >> F` left running (idle), then
                      `echo SECOND-RAN >> F` typed ahead and cancelled once its echo shows
                      (or in the same write as the send, every third round): FIRST-DONE is
                      in F once, SECOND-RAN never (counted once the shell is back at its
                      prompt, by the cancelled send's own result)
  late-cancel         the cancel aimed at the moment the first command ends: FIRST-DONE once
                      whatever happened; when the result says the text was taken back,
                      SECOND-RAN never ran
  multi-line-cancel   a two-line send typed ahead and cancelled: neither line runs
  continuation        bash, zsh: an unclosed quote and a heredoc say `continuation`; fish: an
                      open block does; keys ["C-c"] clear it and the next send runs alone
  refused             fish: a bash heredoc is refused and cleared (status 2); the next send
                      runs alone, its output `ok`; in one multi-line send the lines after
                      the refused one run alone (`rm -f F` removes F), never appended to it
  kept                `submit: false` text left on the line says `kept`; C-c clears it
  queued              `false` typed ahead of a running sleep says `queued`, behind the
                      sleep's pid and command line; it runs once the sleep ends
  typed-ahead-secret  bash: a secret sent while `sleep 1` runs, ahead of `read -s`'s prompt
                      (then `cat`, or the prompt): `queued` (or `swallowed`) behind the
                      sleep, never a plain answer

Exit 0 on pass, 1 on failure, 77 when the dialect's shell is not installed.
"""

import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from prompts_e2e import (RESPONSE_DEADLINE_S, SEND_TIMEOUT_MS, Failure, Repl, Sent,  # noqa: E402
                         show)


def count_in(path, word):
    try:
        with open(path) as f:
            return sum(1 for line in f if line.strip() == word)
    except FileNotFoundError:
        return 0


def start_send(repl, sid, text, **fields):
    request = dict({"op": "send", "sessionId": sid, "text": text, "timeoutMs": SEND_TIMEOUT_MS,
                    "id": repl.new_id()}, **fields)
    repl.write(request)
    return request


def wait_for_echo(repl, request, fragment):
    """Polls the send's output until the terminal echoed `fragment` (the text reached the
    terminal's input), with a deadline."""
    seen = ""
    deadline = time.monotonic() + RESPONSE_DEADLINE_S
    while fragment not in seen:
        if time.monotonic() > deadline:
            raise Failure(f"the echo of {fragment!r} never came: {seen!r}")
        r = repl.ok({"op": "output", "sendId": request["id"]})
        seen += r["delta"]
        if fragment not in seen:
            time.sleep(0.01)  # polling a condition with a deadline


def cancel_and_result(repl, request, may_be_late=False):
    cancelled = repl.ok({"op": "cancel", "sendId": request["id"]})
    if cancelled != {"cancelled": True} and not (may_be_late and cancelled == {"cancelled": False}):
        raise Failure(f"expected cancelled true, got {show(cancelled)} for {show(request)}")
    r = repl.response(request["id"], request)
    if r.get("ok") is not True:
        raise Failure(f"the cancelled send failed\n    request: {show(request)}\n    result:  {show(r)}")
    return Sent(request, r["result"])


def first_command(repl, sid, path, seconds, n):
    """`sleep S; echo FIRST-DONE >> F`, settled idle while the sleep runs; False when the
    machine was too slow for that (the round then proves nothing)."""
    first = repl.send(sid, f"sleep {seconds}; echo FIRST-DONE >> {path}", idleMs=150)
    if first.result["waitReason"] != "inferred_idle":
        first.at_prompt(exit_code=0)
        return False
    return True


def back_at_prompt(repl, sid, sent):
    """The cancelled send's own result ended with the shell reading, or a check-in waits
    for that (a line erased from the editor leaves the shell reading at its prompt without
    a new one: evidence stdin_probe)."""
    result = sent.result
    if result["waitReason"] != "stdin_read":
        result = repl.send(sid, "", idleMs=60000).result
    if result["waitReason"] != "stdin_read" or result.get("evidence") not in ("prompt_marks", "stdin_probe"):
        sent.fail(f"the shell is not back reading: {show(result)}")
    if result.get("lineState"):
        sent.fail(f"a line left behind: {show(result)}")


def typed_ahead_cancel(repl, dialect):
    sid, _ = repl.open()
    taken = 0
    for n in range(20):
        path = os.path.join(repl.home, f"F-{n}")
        if not first_command(repl, sid, path, 1, n):
            continue
        second = start_send(repl, sid, f"echo SECOND-RAN >> {path}", idleMs=60000)
        if n % 3 == 2:
            # The worst moment on our side: the cancel in the same write as the send.
            cancel = {"op": "cancel", "sendId": second["id"], "id": repl.new_id()}
            repl.write(cancel)
            if repl.response(cancel["id"], cancel).get("result") != {"cancelled": True}:
                raise Failure(f"round {n}: the cancel was refused")
            r = repl.response(second["id"], second)
            if r.get("ok") is not True:
                raise Failure(f"round {n}: the cancelled send failed: {show(r)}")
            sent = Sent(second, r["result"])
        else:
            wait_for_echo(repl, second, "SECOND-RAN")
            sent = cancel_and_result(repl, second)
            sent.expect(sent.result.get("takenBackBytes") == len(second["text"]) + 1,
                        f"round {n}: expected the whole line taken back")
            taken += 1
        back_at_prompt(repl, sid, sent)
        firsts, seconds = count_in(path, "FIRST-DONE"), count_in(path, "SECOND-RAN")
        if firsts != 1 or seconds != 0:
            sent.fail(f"round {n}: expected FIRST-DONE once and SECOND-RAN never, "
                      f"found {firsts} and {seconds}")
    repl.close(sid)
    print(f"     typed-ahead-cancel: {taken} sends taken back after their echo", flush=True)


def late_cancel(repl, dialect):
    # The cancel as the first command ends: the shell may be reading the typed line right
    # then. Whatever it did, the first command is never the one interrupted.
    sid, _ = repl.open()
    outcomes = {"taken back": 0, "ran": 0}
    for n in range(10):
        path = os.path.join(repl.home, f"L-{n}")
        if not first_command(repl, sid, path, 0.3, n):
            continue
        second = start_send(repl, sid, f"echo SECOND-RAN >> {path}", idleMs=60000)
        wait_for_echo(repl, second, "SECOND-RAN")
        while count_in(path, "FIRST-DONE") == 0:  # the first command is ending: cancel now
            time.sleep(0.002)  # polling a condition; the deadline is the send's own
        # Too late is a possible answer too: the line ran and its send settled first.
        sent = cancel_and_result(repl, second, may_be_late=True)
        back_at_prompt(repl, sid, sent)
        firsts, seconds = count_in(path, "FIRST-DONE"), count_in(path, "SECOND-RAN")
        sent.expect(firsts == 1, f"round {n}: FIRST-DONE {firsts} times")
        sent.expect(seconds <= 1, f"round {n}: SECOND-RAN {seconds} times")
        if sent.result.get("takenBackBytes"):
            outcomes["taken back"] += 1
            sent.expect(seconds == 0, f"round {n}: taken back, yet SECOND-RAN ran")
        else:
            outcomes["ran"] += 1
    repl.close(sid)
    print(f"     late-cancel: {outcomes}", flush=True)


def multi_line_cancel(repl, dialect):
    sid, _ = repl.open()
    for n in range(5):
        path = os.path.join(repl.home, f"M-{n}")
        if not first_command(repl, sid, path, 1, n):
            continue
        second = start_send(repl, sid, f"echo LINE-ONE >> {path}\necho LINE-TWO >> {path}", idleMs=60000)
        wait_for_echo(repl, second, "LINE-TWO")
        sent = cancel_and_result(repl, second)
        sent.expect(sent.result.get("takenBackBytes") == len(second["text"]) + 1,
                    f"round {n}: expected both lines taken back")
        back_at_prompt(repl, sid, sent)
        counts = [count_in(path, w) for w in ("FIRST-DONE", "LINE-ONE", "LINE-TWO")]
        sent.expect(counts == [1, 0, 0], f"round {n}: expected [1, 0, 0], found {counts}")
    repl.close(sid)


def clear_and_check(repl, sid, what):
    cleared = repl.send(sid, "", keys=["C-c"])
    cleared.expect(cleared.result["waitReason"] == "stdin_read", f"{what}: C-c should end at a prompt")
    cleared.expect("lineState" not in cleared.result, f"{what}: cleared, yet a line state")
    repl.send(sid, "echo ok").at_prompt(exit_code=0).has_line("ok")


def continuation(repl, dialect):
    sid, _ = repl.open()
    cases = ["for i in 1 2"] if dialect == "fish" else ["echo 'abc", 'echo "abc', "cat <<EOF"]
    for text in cases:
        sent = repl.send(sid, text)
        sent.expect(sent.result["waitReason"] == "stdin_read", f"{text!r}: expected stdin_read")
        sent.expect(sent.result.get("lineState") == "continuation", f"{text!r}: expected continuation")
        clear_and_check(repl, sid, text)
    repl.close(sid)


def refused(repl, dialect):
    if dialect != "fish":
        return
    sid, _ = repl.open()
    for n in range(3):
        sent = repl.send(sid, "cat <<EOF").at_prompt(exit_code=2)
        sent.expect(sent.result.get("lineState") == "refused", "expected lineState refused")
        after = repl.send(sid, "echo ok").at_prompt(exit_code=0).has_line("ok")
        after.expect("lineState" not in after.result, "the next send should run alone")
        after.expect(not any("EOF" in line for line in after.lines), "the refused line was kept")
    # Within one send: the refused line is cleared before the next line is read, so each
    # later line runs alone, never appended to it; the result still says refused.
    block = repl.send(sid, "cat <<EOF\nhello\nEOF").at_prompt()
    block.expect(block.result.get("lineState") == "refused", "a refused first line: expected lineState refused")
    block.expect(not any("EOFhello" in line for line in block.lines), "the next line was appended to the refused one")
    repl.send(sid, "echo ok").at_prompt(exit_code=0).has_line("ok")
    victim = os.path.join(repl.home, "victim")
    open(victim, "w").close()
    typed = repl.send(sid, f"cat <<\nrm -f '{victim}'").at_prompt(exit_code=0)
    typed.expect(not any("<<rm" in line for line in typed.lines), "rm was appended to the refused line")
    typed.expect(not os.path.exists(victim), "the line after the refused one did not run alone")
    repl.close(sid)


def kept(repl, dialect):
    sid, _ = repl.open()
    sent = repl.send(sid, "q", submit=False)
    sent.expect(sent.result["waitReason"] == "stdin_read", "expected stdin_read")
    sent.expect(sent.result.get("lineState") == "kept", "expected lineState kept")
    clear_and_check(repl, sid, "submit false")
    repl.close(sid)


def queued(repl, dialect):
    sid, _ = repl.open()
    for n in range(3):
        running = repl.send(sid, "sleep 2", idleMs=150)
        if running.result["waitReason"] != "inferred_idle":
            continue
        sent = repl.send(sid, "false", idleMs=150)
        sent.expect(sent.result["waitReason"] == "inferred_idle", "expected inferred_idle")
        sent.expect(sent.result.get("lineState") == "queued", "expected lineState queued")
        behind = sent.result.get("queuedBehind") or {}
        sent.expect(isinstance(behind.get("pid"), int) and "sleep 2" in behind.get("command", ""),
                    "expected queuedBehind the sleep")
        # Once the sleep ends the line runs: a check-in sees its status.
        repl.send(sid, "", idleMs=60000).at_prompt(exit_code=1)
    repl.close(sid)


def typed_ahead_secret(repl, dialect):
    """A secret sent while `sleep` runs, ahead of the `read -s` prompt that follows it: the
    terminal echoes it (echo is on while sleep runs), and the result must say it was typed
    ahead behind the sleep, never read as an answer at a prompt."""
    if dialect != "bash":
        return
    sid, _ = repl.open()
    checked = 0
    for tail in ("", "; cat"):
        for n in range(3):
            first = repl.send(sid, f"sleep 1; read -s -p 'Password: ' pw; echo; echo len=${{#pw}}{tail}", idleMs=300)
            if first.result["waitReason"] != "inferred_idle":
                repl.send(sid, "", keys=["C-c"], idleMs=3000)  # not idle in time: try again
                continue
            sent = repl.send(sid, "typed-ahead-secret", idleMs=5000)
            sent.expect(sent.result["waitReason"] == "stdin_read", "expected stdin_read")
            sent.expect(sent.result.get("lineState") in ("queued", "swallowed"),
                        "a secret typed ahead of its prompt reads as an answer at the prompt")
            behind = sent.result.get("queuedBehind") or {}
            sent.expect("sleep 1" in behind.get("command", ""), "expected queuedBehind the sleep")
            checked += 1
            if tail:
                sent.expect(sent.result.get("lineState") == "queued", "cat reads: expected queued")
                repl.send(sid, "", keys=["C-d"], submit=False).at_prompt(exit_code=0)
            break
    if checked < 2:
        raise Failure("the first command never went idle before its prompt")
    repl.close(sid)


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("bash", "zsh", "fish"):
        print("usage: line_state_e2e.py DSHPTY_REPL bash|zsh|fish", file=sys.stderr)
        return 2
    repl_path, dialect = os.path.abspath(sys.argv[1]), sys.argv[2]
    if shutil.which(dialect) is None:
        print(f"SKIP: {dialect} is not installed", flush=True)
        return 77

    def in_own_repl(scenario):
        def run():
            repl = Repl(repl_path, dialect)
            try:
                scenario(repl, dialect)
                repl.shutdown()
            finally:
                leaked = repl.destroy()
            if leaked:
                raise Failure(f"processes left behind: {leaked}")
        return run

    scenarios = [
        ("typed-ahead-cancel", typed_ahead_cancel),
        ("late-cancel", late_cancel),
        ("multi-line-cancel", multi_line_cancel),
        ("continuation", continuation),
        ("refused", refused),
        ("kept", kept),
        ("queued", queued),
        ("typed-ahead-secret", typed_ahead_secret),
    ]
    only = os.environ.get("LINE_STATE_E2E_ONLY")  # a comma-separated subset
    failed = []
    for name, scenario in scenarios:
        if only and name not in only.split(","):
            continue
        started = time.monotonic()
        try:
            in_own_repl(scenario)()
            print(f"ok   {dialect} {name} ({time.monotonic() - started:.1f} s)", flush=True)
        except Failure as e:
            failed.append(name)
            print(f"FAIL {dialect} {name} ({time.monotonic() - started:.1f} s): {e}", flush=True)
    if failed:
        print(f"FAILED ({dialect}): {', '.join(failed)}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
