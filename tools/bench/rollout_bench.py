"""The rollout bench (docs/scale.md): N confined sessions from one dshpty-repl --json, each
running a short scripted trajectory at once (cd, write a file, run a tiny test, read the
output back, an interrupt), then closed with proof. It prints the open-all time and spawns/s,
the host's memory a session and the sessions' total, send p50/p99 under that load and with N
idle sessions beside one session alone, the idle wake-ups of the host and the helpers, the
close-all time, and what one session running away under limits (a fork loop, a memory hog)
did to its neighbours' send p99.

It changes no kernel setting: it reads kernel.pty.max, kernel.pid_max and the hard fd limit,
runs the largest size that fits, and says what it skipped and why.

Usage: rollout_bench.py DSHPTY_REPL [--sessions N] [--quick] [--json]"""

import argparse
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

from host_capacity import alive, capacity, descendants


def pct(samples, p):
    s = sorted(samples)
    return s[min(len(s) - 1, int(p / 100.0 * len(s)))] if s else float("nan")


def status_field(pid, name):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(name + ":"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def pss_kib(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return 0


def switches(pid):
    return status_field(pid, "voluntary_ctxt_switches") + status_field(pid, "nonvoluntary_ctxt_switches")


class Repl:
    """dshpty-repl --json with many requests in flight: each answer goes to its request's
    continuation, with the time it took."""

    def __init__(self, path, args):
        self.proc = subprocess.Popen([path, "--json", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=sys.stderr, start_new_session=True)
        self.buffer = b""
        self.waiting = {}  # id -> (posted at, continuation)
        self.next_id = 0
        self.out = []

    def post(self, request, then):
        self.next_id += 1
        request["id"] = self.next_id
        self.waiting[self.next_id] = (time.monotonic(), then)
        self.out.append(json.dumps(request) + "\n")

    def flush(self):
        if self.out:
            self.proc.stdin.write("".join(self.out).encode())
            self.proc.stdin.flush()
            self.out = []

    def run_until(self, done, limit_s=900):
        deadline = time.monotonic() + limit_s
        while not done():
            self.flush()
            ready, _, _ = select.select([self.proc.stdout], [], [], max(0, deadline - time.monotonic()))
            if not ready:
                raise SystemExit(f"rollout: no answer in {limit_s} s ({len(self.waiting)} waiting)")
            chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
            if not chunk:
                raise SystemExit("rollout: dshpty-repl closed its output")
            now = time.monotonic()
            self.buffer += chunk
            *lines, self.buffer = self.buffer.split(b"\n")
            for line in lines:
                r = json.loads(line)
                posted, then = self.waiting.pop(r["id"])
                then(r, (now - posted) * 1000.0)
            self.flush()

    def call(self, request):
        got = []
        self.post(request, lambda r, ms: got.append((r, ms)))
        self.run_until(lambda: got)
        return got[0]

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=60)
            except (subprocess.TimeoutExpired, BrokenPipeError):
                self.proc.kill()
                self.proc.wait()


def must(r, what):
    if not r.get("ok"):
        raise SystemExit(f"rollout: {what} failed: {r}")
    return r["result"]


def open_sessions(repl, root, count, tag, extra=None):
    ids = [None] * count

    def opened(i):
        def then(r, ms):
            ids[i] = must(r, f"open {tag}{i}")["sessionId"]
        return then

    for i in range(count):
        d = f"{root}/{tag}{i}"
        os.mkdir(d)
        repl.post({"op": "open", "type": "shell", "sandbox": "workspace-write", "cwd": d, **(extra or {})}, opened(i))
    repl.run_until(lambda: all(ids))
    return ids


def sequential_sends(repl, sid, rounds):
    ms = []
    for _ in range(rounds):
        r, t = repl.call({"op": "send", "sessionId": sid, "text": "true"})
        must(r, "send true")
        ms.append(t)
    return ms


def trajectory(repl, sid, i, latencies, finished):
    """cd, write a file, a tiny test, read the output back, an interrupt, then a send that
    shows the shell is back; each step posted when the one before answered."""
    steps = [
        ("send", {"text": "mkdir -p t && cd t"}),
        ("send", {"text": f"printf 'x=%s\\n' {i} > f.txt"}),
        ("send", {"text": f"test \"$(cat f.txt)\" = x={i} && echo PASS-{i}", "want": f"PASS-{i}"}),
        ("send", {"text": "cat f.txt", "want": f"x={i}"}),
        ("read", {}),
        ("send", {"text": "sleep 30", "timeoutMs": 300, "slow": True}),
        ("signal", {"signal": "SIGINT"}),
        ("send", {"text": f"echo back-{i}", "want": f"back-{i}"}),
    ]

    def step(k):
        if k == len(steps):
            finished.append(i)
            return
        op, fields = steps[k]
        want = fields.pop("want", None)
        slow = fields.pop("slow", False)
        req = {"op": op, "sessionId": sid, **fields}

        def then(r, ms):
            result = must(r, f"session {i} step {k} ({op})")
            if want and want not in result.get("viewport", ""):
                raise SystemExit(f"rollout: session {i} step {k}: {want!r} not in {result}")
            if op == "send" and not slow:
                latencies.append(ms)
            step(k + 1)

        repl.post(req, then)

    step(0)


def runaway(repl_path, root, neighbours, rounds):
    """A second host with the operator's limits: `neighbours` confined sessions' send p99,
    quiet, then beside a session running a fork loop under limits.pids 64, then beside one
    running a memory hog under limits.memory 64 MiB."""
    repl = Repl(repl_path, ["--workspace", root, "--limit-pids", "256", "--limit-memory", str(512 << 20)])
    out = {}
    try:
        probe, _ = repl.call({"op": "open", "type": "shell", "sandbox": "workspace-write", "cwd": root,
                              "limits": {"pids": 64}})
        if not probe.get("ok"):
            return {"skipped": f"no cgroup here: {probe['error']['message']}"}
        repl.call({"op": "close", "sessionId": probe["result"]["sessionId"]})
        ids = open_sessions(repl, root, neighbours, "n")

        def p99_of_neighbours():
            ms = []
            for k in range(rounds):
                r, t = repl.call({"op": "send", "sessionId": ids[k % len(ids)], "text": "true"})
                must(r, "neighbour send")
                ms.append(t)
            return pct(ms, 50), pct(ms, 99)

        out["quiet"] = p99_of_neighbours()
        for name, limits, text in [
            ("fork loop", {"pids": 64}, "while :; do sleep 5 & done"),
            ("memory hog", {"memory": 64 << 20}, "while :; do head -c 300M /dev/zero | tail > /dev/null; done"),
        ]:
            os.makedirs(f"{root}/r-{name[0]}", exist_ok=True)
            r, _ = repl.call({"op": "open", "type": "shell", "sandbox": "workspace-write",
                              "cwd": f"{root}/r-{name[0]}", "limits": limits})
            sid = must(r, f"open the {name}")["sessionId"]
            repl.post({"op": "send", "sessionId": sid, "text": text, "timeoutMs": 600000}, lambda r, ms: None)
            repl.flush()
            time.sleep(2)  # let it reach its limit before the neighbours are measured
            out[name] = p99_of_neighbours()
            listed = must(repl.call({"op": "list"})[0], "list")
            hit = [s.get("limitHit") for s in listed["sessions"] if s["sessionId"] == sid]
            out[name + " limitHit"] = hit[0] if hit else None
            must(repl.call({"op": "close", "sessionId": sid})[0], f"close the {name}")
            repl.run_until(lambda: not repl.waiting)  # the runaway's send answers at its close
        closes = []
        for sid in ids:
            repl.post({"op": "close", "sessionId": sid}, lambda r, ms: closes.append(must(r, "close")))
        repl.run_until(lambda: len(closes) == len(ids))
    finally:
        repl.stop()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("repl")
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--quick", action="store_true", help="fewer rounds")
    ap.add_argument("--idle-seconds", type=float, default=5.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rounds = 100 if args.quick else 300
    report = {"requested": args.sessions, "load at start": os.getloadavg()[0], "cpus": os.cpu_count()}

    def say(key, value):
        report[key] = value
        if not args.json:
            print(f"{key}: {value}", flush=True)

    say("machine", f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    n, worst, limits = capacity(args.sessions)
    say("host settings (sessions each allows)", limits)
    if n < args.sessions:
        say("skipped", f"{args.sessions} sessions: {worst} holds {max(n, 0)} (docs/scale.md says what to set)")
    if n < 10:
        say("ran", "nothing: fewer than 10 sessions fit")
        return 0
    if not shutil.which("bwrap"):
        say("ran", "nothing: bwrap is not installed (confined sessions)")
        return 0

    root = tempfile.mkdtemp(prefix="dshpty-rollout-")
    repl = Repl(args.repl, ["--workspace", root])
    processes = []
    try:
        must(repl.call({"op": "list"})[0], "list")
        pid = repl.proc.pid
        # One session alone: the send it gets, before the crowd.
        alone = open_sessions(repl, root, 1, "alone")[0]
        one = sequential_sends(repl, alone, rounds)
        say("send `true`, one session alone, p50/p99 ms", f"{pct(one, 50):.3f} / {pct(one, 99):.3f}")

        rss0, pss0 = status_field(pid, "VmRSS"), pss_kib(pid)
        t0 = time.monotonic()
        ids = open_sessions(repl, root, n, "w")
        t_open = time.monotonic() - t0
        say("ran", f"{n} confined sessions (workspace-write), every open posted at once")
        say("open all, s", f"{t_open:.2f} ({n / t_open:.0f} spawns/s; load {os.getloadavg()[0]:.2f})")
        rss1, pss1 = status_field(pid, "VmRSS"), pss_kib(pid)
        processes = descendants(pid)
        total = sum(pss_kib(p) for p in processes) + pss1
        say("host memory a session, KiB", f"RSS {(rss1 - rss0) / n:.1f}, PSS {(pss1 - pss0) / n:.1f} "
            f"(host RSS {rss0} -> {rss1} KiB)")
        say("memory in all, PSS", f"{total / 1024:.0f} MiB, {total / (n + 1):.0f} KiB a session "
            f"({len(processes)} processes)")

        latencies, finished = [], []
        t0 = time.monotonic()
        for i, sid in enumerate(ids):
            trajectory(repl, sid, i, latencies, finished)
        repl.run_until(lambda: len(finished) == n)
        t_traj = time.monotonic() - t0
        say("trajectories, s", f"{t_traj:.2f} for {n} at once (6 sends, a read and a SIGINT each)")
        say("send under load, p50/p99 ms", f"{pct(latencies, 50):.2f} / {pct(latencies, 99):.2f} "
            f"({len(latencies)} sends)")

        crowd = sequential_sends(repl, alone, rounds)
        say("send `true`, one session beside the idle crowd, p50/p99 ms",
            f"{pct(crowd, 50):.3f} / {pct(crowd, 99):.3f} ({pct(crowd, 50) / pct(one, 50):.2f}x alone's p50)")

        helpers = [p for p in processes if alive(p)]
        sw_host, sw_helpers = switches(pid), sum(switches(p) for p in helpers)
        time.sleep(args.idle_seconds)  # the measured idle interval itself
        say(f"idle wake-ups over {args.idle_seconds:.0f} s",
            f"host {switches(pid) - sw_host} context switches; {len(helpers)} session processes "
            f"{sum(switches(p) for p in helpers) - sw_helpers}")

        closes = []
        t0 = time.monotonic()
        for sid in ids + [alone]:
            repl.post({"op": "close", "sessionId": sid}, lambda r, ms: closes.append(must(r, "close")))
        repl.run_until(lambda: len(closes) == n + 1)
        t_close = time.monotonic() - t0
        left = [p for p in processes if alive(p)]
        say("close all, s", f"{t_close:.2f}; " + (f"{len(left)} processes LEFT" if left
                                                  else f"verified: all {len(processes)} processes gone"))
    finally:
        repl.stop()
        for p in processes:
            if alive(p):
                try:
                    os.kill(p, 9)
                except ProcessLookupError:
                    pass
        if sys.exc_info()[0] is not None:  # interrupted or failed: the runaway part does not run
            shutil.rmtree(root, ignore_errors=True)

    try:
        r = runaway(args.repl, root, 20, rounds)
        if "skipped" in r:
            say("runaway under limits", "skipped: " + r["skipped"])
        else:
            q = r["quiet"]
            for name in ("fork loop", "memory hog"):
                p50, p99 = r[name]
                say(f"neighbours' send beside a {name}, p50/p99 ms",
                    f"{p50:.2f} / {p99:.2f} (quiet {q[0]:.2f} / {q[1]:.2f}: p99 {p99 / q[1]:.2f}x); "
                    f"its limitHit {r[name + ' limitHit']}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
