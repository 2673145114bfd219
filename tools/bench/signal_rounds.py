"""Signal-then-send rounds through dshpty-repl --json, driven the way an agent drives it:
`sleep 5` left running (idle 300 ms), SIGINT, and at once `echo tick-N`. A round is
misattributed when that send's result does not hold its own `tick-N` line or does not
complete stdin_read. Prints one line: rounds, misattributed, seconds.

    signal_rounds.py PATH/TO/dshpty-repl [ROUNDS]
"""

import json
import subprocess
import sys
import time


def main():
    repl_path = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    repl = subprocess.Popen([repl_path, "--json"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, bufsize=1)
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

    session = call("open", type="shell")["sessionId"]
    misattributed = 0
    started = time.monotonic()
    for n in range(rounds):
        call("send", sessionId=session, text="sleep 5", idleMs=300)
        call("signal", sessionId=session, signal="SIGINT")
        word = f"tick-{n}"
        result = call("send", sessionId=session, text=f"echo {word}", idleMs=10000)
        if result["waitReason"] != "stdin_read" or f"{word}\n" not in result["viewport"]:
            misattributed += 1
    elapsed = time.monotonic() - started
    call("shutdown")
    repl.wait(timeout=30)
    print(f"signal-then-send: {rounds} rounds, {misattributed} misattributed, {elapsed:.1f} s")
    return 1 if misattributed else 0


if __name__ == "__main__":
    sys.exit(main())
