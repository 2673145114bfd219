"""`until.output` end to end through the real `dshpty-repl --json` (docs/shell-backend.md,
"Output conditions"), bash.

    until_e2e.py PATH/TO/dshpty-repl

Scenarios:
  no-freeze   two owners. alice's send waits for `(\\w+\\s?)+$` (exponential for a
              backtracking engine) while her command prints a line of 40 words ending in
              '!' and then sleeps (the old engine froze the host here: no answer to
              anything); bob's `echo bob-alive` must be answered while alice's
              send still waits (the host's one loop is free), and alice's send is then
              cancelled. The same pattern against the 40 words without '!' matches.
  redrawn     lines redrawn with a carriage return after text match as the terminal shows
              them: `printf '\\r%s%%' 10 50 100; echo` and the same with pauses (`100%`),
              `working...\\rDONE` (`^DONE`: `DONEing...`), a spinner
              `frame1\\r\\e[Kframe2\\rdone` (`^done`).
  refused     a backreference is INVALID_ARGUMENT naming it, and nothing is typed.
  flood       alice's command floods 20000 lines of 1000 a's against `[ab]{0,500}c` (some half
              a million regex steps a line: before the match budget 3000 such lines cost the
              loop 9.4 s of CPU), then prints `the-end-ac` and sleeps: bob's `echo` is
              answered, and alice's send matches the last line (put off by the budget, tried
              once output went quiet).
  relayed     through a relay the far shell's line editor draws the echo: `script -q -c` with
              bash, zsh and fish inside (those installed), and `ssh -tt` to bash over the
              loopback sshd (tests/remote/sshd_fixture.py; skipped without sshd). Each
              command holds the pattern in its own typed line (`echo RE''ADY` for `READY`,
              `: fin-2` at its end), some wider than the terminal (readline scrolls it to
              `<` and its tail, fish draws it in pieces and redraws it) or than the matcher's
              line bound: the match is the command's output line, never the echo. A line
              typed ahead of a far `sleep 1` is echoed twice (the terminal, then the far
              editor after its prompt): neither is output.

Exit 0 on pass, 1 on failure, 77 when bash is missing (a missing relay or shell skips
its part of `relayed`, saying so).
"""

import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from prompts_e2e import Failure, Repl, show  # noqa: E402

WORDS = " ".join(["word"] * 40)


def no_freeze(repl):
    alice, _ = repl.open(owner="alice")
    bob, _ = repl.open(owner="bob")
    # The words are in a variable: the typed line stays short and ends in ')', so its echo
    # can match neither way.
    repl.send(alice, "w=$(for i in $(seq 40); do printf 'word '; done)", owner="alice").at_prompt(exit_code=0)
    waiting = {"op": "send", "owner": "alice", "sessionId": alice, "id": "alice-wait",
               "text": '(sleep 0.2; echo "${w% }!"; sleep 60)',
               "until": {"output": "(\\w+\\s?)+$"}, "timeoutMs": 120000}
    repl.write(waiting)
    # alice's line is printed and judged before bob's send is written: it shows in her
    # session first.
    deadline = time.monotonic() + 20
    while True:
        r = repl.ok({"op": "read", "owner": "alice", "sessionId": alice})
        if f"{WORDS}!" in r.get("text", ""):
            break
        if time.monotonic() > deadline:
            raise Failure(f"alice's line never showed: {show(r)}")
        time.sleep(0.05)  # polling the scrollback for the line, with a deadline
    bob_sent = repl.send(bob, "echo bob-alive", owner="bob")
    bob_sent.expect(bob_sent.result["waitReason"] == "stdin_read", "bob's send should end at his prompt")
    bob_sent.has_line("bob-alive")
    if "alice-wait" in repl.responses:
        raise Failure(f"alice's send settled, it should still wait: {show(repl.responses['alice-wait'])}")
    repl.ok({"op": "cancel", "owner": "alice", "sendId": "alice-wait"})
    settled = repl.response("alice-wait", waiting)
    if settled.get("ok") is not True or settled["result"].get("waitReason") == "matched":
        raise Failure(f"alice's send should end unmatched: {show(settled)}")
    for owner, sid in (("alice", alice), ("bob", bob)):
        repl.ok({"op": "close", "owner": owner, "sessionId": sid})
        repl.sessions.remove(sid)

    # The same pattern, the same words without the '!': matched, the line reported.
    sid, _ = repl.open()
    repl.send(sid, "w=$(for i in $(seq 40); do printf 'word '; done)").at_prompt(exit_code=0)
    matched = repl.send(sid, '(sleep 0.2; echo "${w% }"; sleep 60)', until={"output": "(\\w+\\s?)+$"})
    r = matched.result
    matched.expect(r["waitReason"] == "matched", "expected matched")
    matched.expect(r.get("match") == {"output": WORDS}, "expected the line of words as the match")
    repl.close(sid)


def flood(repl):
    alice, _ = repl.open(owner="alice")
    bob, _ = repl.open(owner="bob")
    repl.send(alice, "A=$(printf 'a%.0s' $(seq 1000))", owner="alice").at_prompt(exit_code=0)
    flooding = {"op": "send", "owner": "alice", "sessionId": alice, "id": "alice-flood",
                "text": 'yes "$A" | head -n 20000; echo the-end-ac; sleep 60',
                "until": {"output": "[ab]{0,500}c"}, "idleMs": 300, "timeoutMs": 120000}
    repl.write(flooding)
    bob_sent = repl.send(bob, "echo bob-alive", owner="bob")
    bob_sent.expect(bob_sent.result["waitReason"] == "stdin_read", "bob's send should end at his prompt")
    bob_sent.has_line("bob-alive")
    settled = repl.response("alice-flood", flooding)
    if settled.get("ok") is not True or settled["result"].get("match") != {"output": "the-end-ac"}:
        raise Failure(f"alice's send should match the flood's last line: {show(settled)}")
    for owner, sid in (("alice", alice), ("bob", bob)):
        repl.ok({"op": "close", "owner": owner, "sessionId": sid})
        repl.sessions.remove(sid)


def redrawn(repl):
    cases = [
        ("printf '\\r%s%%' 10 50 100; echo", "100%", "100%"),
        ("for i in 10 50 100; do printf '\\r%s%%' $i; sleep 0.3; done; echo", "^100%$", "100%"),
        ("sleep 0.2; printf 'working...\\rDONE\\n'", "^DONE", "DONEing..."),
        ("sleep 0.2; printf 'frame1\\r\\e[Kframe2\\rdone\\n'", "^done", "donee2"),
        ("sleep 0.2; printf 'x\\rready\\n'", "^ready$", "ready"),
    ]
    for command, pattern, line in cases:
        # The sleep after it: a line that is not matched leaves the send waiting (a timeout),
        # never settled by the prompt first.
        sid, _ = repl.open()  # a session each: closing it ends the sleep
        sent = repl.send(sid, f"{command}; sleep 60", until={"output": pattern}, timeoutMs=20000)
        r = sent.result
        sent.expect(r["waitReason"] == "matched", f"expected {pattern!r} to match")
        sent.expect(r.get("match") == {"output": line}, f"expected the match {line!r}")
        repl.close(sid)


def refused(repl):
    sid, _ = repl.open()
    request, r = repl.call({"op": "send", "sessionId": sid, "text": "echo aa",
                            "until": {"output": "(a)\\1"}, "timeoutMs": 20000})
    error = r.get("error") or {}
    if r.get("ok") is not False or error.get("code") != "INVALID_ARGUMENT" or \
            "until.output: backreferences are not supported" not in error.get("message", ""):
        raise Failure(f"expected INVALID_ARGUMENT naming backreferences: {show(r)}")
    after = repl.send(sid, "echo next").at_prompt(exit_code=0)
    after.lacks_line("aa")


# (command, pattern, the output line it must match): the pattern is in each typed line too.
RELAYED = [
    ("sleep 1; echo RE''ADY", "READY", "READY"),
    ("sleep 1; echo done-4''2; : done-42", "done-42", "done-42"),
    ("sleep 1; echo " + "x" * 200 + " ; echo fin-''2 ; : fin-2", "fin-2", "fin-2"),
    ("sleep 1; echo " + "y" * 300 + " ; echo fin-''3 ; : fin-3", "fin-\\d", "fin-3"),
    ("sleep 1; echo " + "z" * 1300 + " ; echo fin-''4 ; : fin-4", "fin-4", "fin-4"),
]


def through(repl, relay, what):
    sid, _ = repl.open()
    inner = repl.send(sid, relay, idleMs=1500)
    inner.expect(inner.result.get("evidence") == "relay", f"{what}: expected the relay to hold the terminal")
    for command, pattern, line in RELAYED:
        sent = repl.send(sid, command, until={"output": pattern}, idleMs=20000, timeoutMs=20000)
        r = sent.result
        sent.expect(r["waitReason"] == "matched", f"{what}: expected {pattern!r} to match")
        sent.expect(r.get("match") == {"output": line}, f"{what}: expected the output line {line!r}, not the echo")
    # Typed ahead of a far command: the terminal echoes the line, the far editor draws it
    # again after its prompt; neither is output.
    repl.send(sid, "sleep 1", idleMs=200)
    sent = repl.send(sid, "echo ahead-4''2; : ahead-42", until={"output": "ahead-42"}, idleMs=20000, timeoutMs=20000)
    sent.expect(sent.result["waitReason"] == "matched", f"{what}: expected the typed-ahead line's output to match")
    sent.expect(sent.result.get("match") == {"output": "ahead-42"}, f"{what}: expected the output line, not an echo")
    repl.close(sid)


def relayed(repl):
    if shutil.which("script") is None:
        print("     relayed: script is not installed: skipped", flush=True)
    else:
        for shell in ("bash --norc -i", "zsh -f -i", "fish --no-config -i"):
            if shutil.which(shell.split()[0]) is None:
                print(f"     relayed: {shell.split()[0]} is not installed: skipped", flush=True)
                continue
            through(repl, f"script -q -c '{shell}' /dev/null", f"script, {shell.split()[0]}")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "remote"))
    import shlex
    from sshd_fixture import Skip, SshServer
    try:
        server = SshServer().start()
    except Skip as why:
        print(f"     relayed: ssh skipped: {why}", flush=True)
        return
    try:
        argv = server.ssh_argv()
        argv[argv.index("-T")] = "-tt"
        through(repl, shlex.join(argv) + " 'PS1=far\\$\\  exec bash --norc -i'", "ssh -tt")
    finally:
        server.stop()


def main():
    if len(sys.argv) != 2:
        print("usage: until_e2e.py DSHPTY_REPL", file=sys.stderr)
        return 2
    repl_path = os.path.abspath(sys.argv[1])
    if shutil.which("bash") is None:
        print("SKIP: bash is not installed", flush=True)
        return 77
    failed = []
    for name, run in [("no-freeze", no_freeze), ("redrawn", redrawn), ("refused", refused), ("flood", flood),
                      ("relayed", relayed)]:
        started = time.monotonic()
        repl = Repl(repl_path, "bash")
        try:
            try:
                run(repl)
                repl.shutdown()
            finally:
                leaked = repl.destroy()
            if leaked:
                raise Failure(f"processes left behind: {leaked}")
            print(f"ok   {name} ({time.monotonic() - started:.1f} s)", flush=True)
        except Failure as e:
            failed.append(name)
            print(f"FAIL {name} ({time.monotonic() - started:.1f} s): {e}", flush=True)
    if failed:
        print(f"FAILED: {', '.join(failed)}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
