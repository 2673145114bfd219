"""Rounds through dshpty-repl --json, driven the way an agent drives it, on one dialect:

  signal-then-send  `sleep 5` left running (idle 300 ms), SIGINT, and at once `echo tick-N`
  type-ahead        `sleep 0.6` left running (idle 150 ms), and at once `echo ahead-N`

A round is misattributed when the second send's result does not hold its own output line
(`tick-N` / `ahead-N`, as output, not only the echo of the command) or does not complete
stdin_read. Prints one line per figure: rounds, misattributed, seconds.

    signal_rounds.py PATH/TO/dshpty-repl [ROUNDS] [bash|zsh|fish] [signal|type-ahead|both]
"""

import json
import shutil
import subprocess
import sys
import tempfile
import time


def main():
    repl_path = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    dialect = sys.argv[3] if len(sys.argv) > 3 else "bash"
    which = sys.argv[4] if len(sys.argv) > 4 else "both"
    if not shutil.which(dialect):
        print(f"{dialect} is not installed: skipped")
        return 0
    home = tempfile.TemporaryDirectory(prefix="dshpty-bench-home-")
    repl = subprocess.Popen([repl_path, "--json"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, bufsize=1, env={**__import__("os").environ, "HOME": home.name})
    next_id = 0

    def call(op, **fields):
        nonlocal next_id
        next_id += 1
        repl.stdin.write(json.dumps({"id": next_id, "op": op, **fields}) + "\n")
        repl.stdin.flush()
        while True:  # requests are sequential here: the next line with our id is the answer
            line = repl.stdout.readline()
            if not line:
                raise SystemExit(f"dshpty-repl ended during {op}")
            response = json.loads(line)
            if response.get("id") == next_id:
                if not response["ok"]:
                    raise SystemExit(f"{op} failed: {response['error']}")
                return response["result"]

    session = call("open", type="shell", shell=dialect)["sessionId"]

    def figure(name, first, between, word_of):
        misattributed = 0
        started = time.monotonic()
        for n in range(rounds):
            call("send", sessionId=session, **first)
            between()
            word = word_of(n)
            result = call("send", sessionId=session, text=f"echo {word}", idleMs=10000)
            if result["waitReason"] != "stdin_read" or f"\n{word}\n" not in "\n" + result["viewport"]:
                misattributed += 1
        elapsed = time.monotonic() - started
        print(f"{name} ({dialect}): {rounds} rounds, {misattributed} misattributed, {elapsed:.1f} s")
        return misattributed

    failed = 0
    if which in ("signal", "both"):
        failed += figure("signal-then-send", {"text": "sleep 5", "idleMs": 300},
                         lambda: call("signal", sessionId=session, signal="SIGINT"), lambda n: f"tick-{n}")
    if which in ("type-ahead", "both"):
        failed += figure("type-ahead", {"text": "sleep 0.6", "idleMs": 150}, lambda: None, lambda n: f"ahead-{n}")
    call("shutdown")
    repl.wait(timeout=30)
    home.cleanup()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
