"""What the screen settle rule costs, through dshpty-repl --json (docs/tool-protocol.md,
"Screens settle"): round-trip milliseconds (median, min, max) of

  shell        `true` at the shell's prompt: no keys, normal screen (the rule never looks)
  vim-j        keys [j] in vim: a reader that waits without a short timeout (no settle)
  vim-escape   keys [i x Escape] in `vim -u NONE -N` (vim waits out 'timeoutlen', 1 s,
               after the Escape: the send waits with it) and in stock vim ('ttimeoutlen'
               100 ms from defaults.vim)

    settle_cost.py PATH/TO/dshpty-repl [ROUNDS]
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    repl_path = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    if not shutil.which("vim"):
        print("vim is not installed: skipped")
        return 0
    work = tempfile.TemporaryDirectory(prefix="dshpty-bench-settle-")
    target = os.path.join(work.name, "lines.txt")
    with open(target, "w") as f:
        f.write("\n".join(f"line {i}" for i in range(200)))
    repl = subprocess.Popen([repl_path, "--json"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=dict(os.environ, HOME=work.name))
    serial = 0

    def call(request):
        nonlocal serial
        serial += 1
        request = dict(request, id=serial)
        repl.stdin.write((json.dumps(request) + "\n").encode())
        repl.stdin.flush()
        while True:
            response = json.loads(repl.stdout.readline())
            if response.get("id") == serial:
                if "error" in response:
                    raise SystemExit(f"error: {response['error']}")
                return response["result"]

    def figure(name, request, n):
        times = []
        for _ in range(n):
            start = time.monotonic()
            result = call(request)
            times.append((time.monotonic() - start) * 1000)
            if result["waitReason"] != "stdin_read":
                raise SystemExit(f"{name}: {result['waitReason']}")
        print(f"{name:24} ms median {statistics.median(times):9.3f}  min {min(times):9.3f}  max {max(times):9.3f}")

    try:
        sid = call({"op": "open", "type": "shell", "terminal": "xterm"})["sessionId"]
        figure("shell true", {"op": "send", "sessionId": sid, "text": "true"}, rounds * 2)
        call({"op": "send", "sessionId": sid, "text": f"vim -u NONE -N {target}"})
        figure("vim -u NONE keys j", {"op": "send", "sessionId": sid, "keys": ["j"]}, rounds)
        figure("vim -u NONE i x Escape", {"op": "send", "sessionId": sid, "keys": ["i", "x", "Escape"]}, rounds)
        call({"op": "send", "sessionId": sid, "text": ":q!"})
        call({"op": "send", "sessionId": sid, "text": f"vim {target}"})
        figure("vim i x Escape", {"op": "send", "sessionId": sid, "keys": ["i", "x", "Escape"]}, rounds)
        call({"op": "send", "sessionId": sid, "text": ":q!"})
        call({"op": "shutdown"})
    finally:
        repl.stdin.close()
        repl.wait()
        work.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
