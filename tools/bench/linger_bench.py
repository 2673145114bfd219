#!/usr/bin/env python3
"""Figures for sessions that outlive their host (docs/outlive.md): the time a new host takes to
attach 1 and N lingering sessions, the idle wakeups of a lingering helper, and the memory of a
lingering session's helpers. Prints figures; asserts nothing about them.

  python3 tools/bench/linger_bench.py build/tools/dshpty-repl [N=100] [IDLE_SECONDS=10]

Needs DSHPTY_SUPERVISOR (or the build tree's helper next to the REPL). Uses a private state
directory and HOME, and leaves nothing behind."""

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPL = os.path.abspath(sys.argv[1])
N = int(sys.argv[2]) if len(sys.argv) > 2 else 100
IDLE = float(sys.argv[3]) if len(sys.argv) > 3 else 10.0
WORK = tempfile.mkdtemp(prefix="dshpty-linger-bench-")
STATE = os.path.join(WORK, "state")
os.mkdir(STATE, 0o700)
os.environ["HOME"] = WORK


class Host:
    def __init__(self):
        self.proc = subprocess.Popen([REPL, "--json", "--state-dir", STATE], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, start_new_session=True)
        self.buf = b""
        self.next_id = 0

    def call(self, obj, deadline=600):
        self.next_id += 1
        obj["id"] = self.next_id
        self.proc.stdin.write((json.dumps(obj) + "\n").encode())
        self.proc.stdin.flush()
        end = time.monotonic() + deadline
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                r = json.loads(line)
                if r.get("id") == obj["id"]:
                    if not r["ok"]:
                        raise SystemExit(f"{obj['op']} failed: {r}")
                    return r["result"]
            ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, end - time.monotonic()))
            if not ready:
                raise SystemExit(f"no answer to {obj}")
            chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
            if not chunk:
                raise SystemExit("the host exited")
            self.buf += chunk

    def kill(self):
        self.proc.kill()
        self.proc.wait()


def records():
    out = []
    for f in os.listdir(STATE):
        if f.endswith(".info"):
            fields = {}
            with open(os.path.join(STATE, f)) as fh:
                for line in fh:
                    k, _, v = line.rstrip("\n").partition("=")
                    fields[k] = v
            out.append(fields)
    return out


def wait_detached(count):
    end = time.monotonic() + 120
    while time.monotonic() < end:
        r = records()
        if len(r) == count and all(x["attached"] == "0" for x in r):
            return r
        time.sleep(0.05)
    raise SystemExit("the helpers did not notice their host's death")


def proc_field(pid, name):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    return 0


def pss_kib(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def switches(pid):
    return proc_field(pid, "voluntary_ctxt_switches") + proc_field(pid, "nonvoluntary_ctxt_switches")


def round_of(n):
    a = Host()
    for i in range(n):
        a.call({"op": "open", "type": "shell", "name": f"s{i}", "linger": 600})
    a.kill()
    recs = wait_detached(n)
    b = Host()
    t0 = time.monotonic()
    got = b.call({"op": "attach"})["sessions"]
    elapsed = time.monotonic() - t0
    if len(got) != n:
        raise SystemExit(f"attached {len(got)} of {n}")
    return b, recs, elapsed


try:
    host, _, one = round_of(1)
    print(f"reattach, 1 session:    {one * 1000:.1f} ms  (the attach request to its answer)")
    host.call({"op": "shutdown"})
    host.proc.wait()

    host, recs, many = round_of(N)
    print(f"reattach, {N} sessions: {many * 1000:.1f} ms  ({many * 1000 / N:.2f} ms a session)")
    host.call({"op": "shutdown"})
    host.proc.wait()

    # One lingering helper with nothing printing: its wakeups over IDLE seconds.
    a = Host()
    a.call({"op": "open", "type": "shell", "name": "idle", "linger": 600})
    a.kill()
    rec = wait_detached(1)[0]
    bridge = int(rec["helper_pid"])
    local = [c for c in children(bridge)]
    time.sleep(1.0)  # the detach's own work settles
    before = {p: switches(p) for p in [bridge, *local]}
    time.sleep(IDLE)
    after = {p: switches(p) for p in [bridge, *local]}
    wake = {p: after[p] - before[p] for p in before}
    print(f"idle wakeups of a lingering helper over {IDLE:.0f} s: --stdio helper {wake[bridge]}, "
          f"its subreaper {sum(wake[p] for p in local)} (context switches)")
    pss = pss_kib(bridge) + sum(pss_kib(p) for p in local)
    rss = proc_field(bridge, "VmRSS") + sum(proc_field(p, "VmRSS") for p in local)
    print(f"memory of a lingering session's helpers (the shell not counted): PSS {pss} KiB, RSS {rss} KiB "
          f"(--stdio helper PSS {pss_kib(bridge)} KiB, subreaper {sum(pss_kib(p) for p in local)} KiB)")
    b = Host()
    b.call({"op": "attach"})
    b.call({"op": "shutdown"})
    b.proc.wait()
finally:
    for r in records():
        try:
            os.kill(int(r["helper_pid"]), signal.SIGKILL)
        except (OSError, ValueError):
            pass
    shutil.rmtree(WORK, ignore_errors=True)
