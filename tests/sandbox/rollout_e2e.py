"""A thousand confined sessions through dshpty-repl --json (docs/scale.md): every open posted
at once (the backend admits them at the CPUs' pace, the rest queued), one send each whose
output proves it ran in its own workspace, then every session closed at once, with proof:
each close answered ok, every process the sessions had (the shells, their helpers, bwrap)
gone, the host's fds back to where they started. Skipped, with the reason, where the host
cannot hold that many (kernel.pty.max, kernel.pid_max, the hard fd limit: docs/scale.md
says what to set) or cannot confine.

Usage: rollout_e2e.py DSHPTY_REPL [SESSIONS]"""

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bench"))
from host_capacity import alive, capacity, descendants  # noqa: E402

SKIP = 77
DEADLINE_S = 540.0


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr, flush=True)
    raise SystemExit(1)


def shortfall(n):
    """Why this host cannot hold n confined sessions, or None."""
    fit, worst, limits = capacity(n)
    if fit < n:
        return f"{worst} holds {max(fit, 0)} confined sessions, {n} needed (docs/scale.md)"
    if not shutil.which("bwrap"):
        return "bwrap is not installed"
    return None


class Repl:
    def __init__(self, path, workspace):
        self.proc = subprocess.Popen([path, "--json", "--workspace", workspace],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sys.stderr,
                                     start_new_session=True)
        self.buffer = b""
        self.responses = {}

    def post(self, requests):
        self.proc.stdin.write(("".join(json.dumps(r) + "\n" for r in requests)).encode())
        self.proc.stdin.flush()

    def wait_for(self, ids, deadline):
        missing = set(ids) - set(self.responses)
        while missing:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                fail(f"{len(missing)} responses missing at the deadline, e.g. {sorted(missing)[:3]}")
            ready, _, _ = select.select([self.proc.stdout], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
            if not chunk:
                fail("the REPL closed its output")
            self.buffer += chunk
            *lines, self.buffer = self.buffer.split(b"\n")
            for line in lines:
                r = json.loads(line)
                if r.get("id") in self.responses:
                    fail(f"a second response to {r.get('id')}: {r}")
                self.responses[r.get("id")] = r
                missing.discard(r.get("id"))
        return [self.responses[i] for i in ids]

    def fds(self):
        names = []
        for fd in sorted(os.listdir(f"/proc/{self.proc.pid}/fd"), key=int):
            try:
                names.append(f"{fd}:{os.readlink(f'/proc/{self.proc.pid}/fd/{fd}')}")
            except FileNotFoundError:
                pass
        return names


def main():
    repl_path = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    why = shortfall(n)
    if why:
        print(f"SKIP: {why} (docs/scale.md)", flush=True)
        return SKIP
    root = tempfile.mkdtemp(prefix="dshpty-rollout-", dir=os.environ.get("DSHPTY_SANDBOX_SCRATCH"))
    repl = Repl(repl_path, root)
    processes = []
    try:
        deadline = time.monotonic() + DEADLINE_S
        repl.post([{"id": "ready", "op": "list"}])
        repl.wait_for(["ready"], deadline)  # its loop is up: the fds it keeps are open
        fds0 = repl.fds()
        opens = []
        for i in range(n):
            os.mkdir(f"{root}/w{i}")
            opens.append({"id": f"o{i}", "op": "open", "type": "shell", "sandbox": "workspace-write",
                          "cwd": f"{root}/w{i}"})
        t0 = time.monotonic()
        repl.post(opens)
        opened = repl.wait_for([o["id"] for o in opens], deadline)
        t_open = time.monotonic() - t0
        refused = [r for r in opened if not r.get("ok")]
        if refused and all(r["error"]["code"] == "BACKEND_FAILED" and "sandbox" in r["error"]["message"]
                           for r in refused) and len(refused) == n:
            print(f"SKIP: cannot confine here: {refused[0]['error']['message']}", flush=True)
            return SKIP
        if refused:
            fail(f"{len(refused)} of {n} opens failed, e.g. {refused[0]}")
        ids = [r["result"]["sessionId"] for r in opened]
        if len(set(ids)) != n:
            fail("session ids repeat")
        processes = descendants(repl.proc.pid)
        if len(processes) < 2 * n:
            fail(f"{len(processes)} processes under the host for {n} confined sessions")

        sends = [{"id": f"s{i}", "op": "send", "sessionId": sid, "text": f"echo hi > f && echo ran-$((1000+{i})) $(cat f) $PWD"}
                 for i, sid in enumerate(ids)]
        t0 = time.monotonic()
        repl.post(sends)
        sent = repl.wait_for([s["id"] for s in sends], deadline)
        t_send = time.monotonic() - t0
        for i, r in enumerate(sent):
            want = f"ran-{1000 + i} hi {root}/w{i}"
            if not r.get("ok") or want not in r["result"].get("viewport", ""):
                fail(f"send {i}: expected {want!r} in {r}")
            if not os.path.exists(f"{root}/w{i}/f"):
                fail(f"send {i} wrote no file in its workspace")

        closes = [{"id": f"c{i}", "op": "close", "sessionId": sid} for i, sid in enumerate(ids)]
        t0 = time.monotonic()
        repl.post(closes)
        closed = repl.wait_for([c["id"] for c in closes], deadline)
        t_close = time.monotonic() - t0
        bad = [r for r in closed if not r.get("ok")]
        if bad:
            fail(f"{len(bad)} closes failed, e.g. {bad[0]}")
        left = [p for p in processes if alive(p)]
        if left:
            fail(f"{len(left)} of the sessions' {len(processes)} processes outlived their close: {left[:5]}")
        if descendants(repl.proc.pid):
            fail(f"the host still has children after every close: {descendants(repl.proc.pid)[:5]}")
        fds1 = repl.fds()
        if fds1 != fds0:
            fail(f"the host held {fds0} fds before the sessions and {fds1} after closing them")
        print(f"ok: {n} confined sessions: opened in {t_open:.2f} s, one send each in {t_send:.2f} s, "
              f"closed in {t_close:.2f} s; {len(processes)} processes, every one gone; host fds {len(fds0)} -> {len(fds1)}",
              flush=True)
        repl.proc.stdin.close()
        if repl.proc.wait(timeout=60) != 0:
            fail(f"the REPL exited {repl.proc.returncode}")
        return 0
    finally:
        if repl.proc.poll() is None:
            repl.proc.kill()
            repl.proc.wait()
        for p in processes:
            try:
                os.kill(p, 9)
            except (ProcessLookupError, PermissionError):
                pass
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
