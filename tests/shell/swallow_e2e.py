"""A line typed ahead and read by the program in front is said, never reported as run, end
to end for one shell dialect through the real `dshpty-repl --json` (docs/shell-backend.md,
"A line not run"; docs/tool-protocol.md, lineState `swallowed`).

    swallow_e2e.py PATH/TO/dshpty-repl bash|zsh|fish

Scenarios (each round first leaves a command running, its send settled idle):
  reader      `python3 -c '...; time.sleep(2); sys.stdin.readline()'`, then `touch F; false`
              typed ahead: python reads the line and exits 0. The result is the shell's
              prompt, `lineState: swallowed`, `queuedBehind` python, no `exitCode`; F was
              never made; the next send runs alone with its own status
  relay       `script -q -c 'echo start; sleep 2; echo done' /dev/null`, then the same:
              script relays the line into its inner terminal, where nobody reads it; a
              relay's far side may run what it read, so the line is `relayed`, never
              `swallowed` (the same fields otherwise: queuedBehind script, no exitCode)
  relay-exit  `script -q -c 'sh -i' /dev/null`, then `touch F; exit` typed to it: the far
              shell runs it and ends the relay; F is made and the result says `relayed`
              (it said `swallowed`, "send it again": the re-sent `exit` ends the session)
  ran         the control: `false` typed behind `sleep 2` runs once the sleep ends: its
              own exit code 1, no lineState
  typed-to    the control: `sys.exit(5)` typed to python's REPL waiting at its prompt ends
              it: exit code 5, no lineState (the line was python's to read)

Exit 0 on pass, 1 on failure, 77 when the dialect's shell (or python3, script) is missing.
"""

import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from prompts_e2e import Failure, Repl, status_command  # noqa: E402

ROUNDS = 2


def swallowed_round(repl, sid, dialect, first, marker, state="swallowed"):
    """One round: `first` left running, then a line typed behind it. False when the machine
    was too slow to type ahead (the first send did not settle idle): the round proves nothing."""
    running = repl.send(sid, first, idleMs=300)
    if running.result["waitReason"] != "inferred_idle":
        return False
    path = os.path.join(repl.home, marker)
    sent = repl.send(sid, f"touch {path}; {status_command(dialect, 3)}", idleMs=6000)
    r = sent.result
    sent.expect(r["waitReason"] == "stdin_read", "expected the shell's prompt back")
    sent.expect(r.get("evidence") == "prompt_marks", "expected evidence prompt_marks")
    sent.expect(not os.path.exists(path), "the line ran: the test's premise failed")
    sent.expect(r.get("exitCode") is None, "a swallowed line carries no exitCode")
    sent.expect(r.get("lineState") == state, f"expected lineState {state}")
    behind = r.get("queuedBehind") or {}
    word = first.split()[0]
    sent.expect(isinstance(behind.get("pid"), int) and word in behind.get("command", ""),
                f"expected queuedBehind naming {word}")
    after = repl.send(sid, status_command(dialect, 4)).at_prompt(exit_code=4)
    after.expect("lineState" not in after.result, "the next send should run alone")
    return True


def scenario(first, state="swallowed"):
    def run(repl, dialect):
        sid, _ = repl.open()
        proved = sum(swallowed_round(repl, sid, dialect, first, f"ran-{n}", state) for n in range(ROUNDS))
        repl.close(sid)
        if proved == 0:
            raise Failure(f"no round typed ahead of {first!r}: the machine was too slow")
    return run


def relay_exit(repl, dialect):
    """A line typed to a relay's far shell that runs it and exits: it ran, so it is never
    called swallowed (which says "send it again")."""
    sid, _ = repl.open()
    for n in range(ROUNDS):
        inner = repl.send(sid, "script -q -c 'sh -i' /dev/null", idleMs=500)
        inner.expect(inner.result.get("evidence") == "relay", "expected the relay seen as one")
        path = os.path.join(repl.home, f"far-ran-{n}")
        sent = repl.send(sid, f"touch {path}; exit", idleMs=6000)
        r = sent.result
        sent.expect(r["waitReason"] == "stdin_read", "expected the shell's prompt back")
        sent.expect(os.path.exists(path), "the far shell did not run the line")
        sent.expect(r.get("lineState") == "relayed", "expected lineState relayed (never swallowed)")
        behind = r.get("queuedBehind") or {}
        sent.expect("script" in behind.get("command", ""), "expected queuedBehind naming script")
        repl.send(sid, status_command(dialect, 4)).at_prompt(exit_code=4)
    repl.close(sid)


def ran(repl, dialect):
    sid, _ = repl.open()
    for n in range(ROUNDS):
        running = repl.send(sid, "sleep 2", idleMs=150)
        if running.result["waitReason"] != "inferred_idle":
            continue
        sent = repl.send(sid, "false", idleMs=6000).at_prompt(exit_code=1)
        sent.expect("lineState" not in sent.result, "a line that ran has no lineState")
    repl.close(sid)


def typed_to(repl, dialect):
    """A line typed to a program that waits for it (python's REPL at its prompt) and ends it
    is that program's input, not swallowed: the status at the prompt is the line's."""
    sid, _ = repl.open()
    for n in range(ROUNDS):
        repl.send(sid, "python3 -q").probe_read()
        sent = repl.send(sid, f"import sys; sys.exit({5 + n})").at_prompt(exit_code=5 + n)
        sent.expect("lineState" not in sent.result, "a line its reader took is not swallowed")
    repl.close(sid)


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("bash", "zsh", "fish"):
        print("usage: swallow_e2e.py DSHPTY_REPL bash|zsh|fish", file=sys.stderr)
        return 2
    repl_path, dialect = os.path.abspath(sys.argv[1]), sys.argv[2]
    for tool in (dialect, "python3", "script"):
        if shutil.which(tool) is None:
            print(f"SKIP: {tool} is not installed", flush=True)
            return 77

    scenarios = [
        ("reader", scenario("python3 -c 'import sys,time; time.sleep(2); sys.stdin.readline()'")),
        ("relay", scenario("script -q -c 'echo start; sleep 2; echo done' /dev/null", "relayed")),
        ("relay-exit", relay_exit),
        ("ran", ran),
        ("typed-to", typed_to),
    ]
    failed = []
    for name, run in scenarios:
        started = time.monotonic()
        repl = Repl(repl_path, dialect)
        try:
            try:
                run(repl, dialect)
                repl.shutdown()
            finally:
                leaked = repl.destroy()
            if leaked:
                raise Failure(f"processes left behind: {leaked}")
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
