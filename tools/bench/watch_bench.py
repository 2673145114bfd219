"""What watchers cost a session (docs/watch.md, "Figures"): a send's round trip and the
throughput of a flood through `dshpty-repl --json`, with 0, 1 and 10 observers attached to
the session over the host's watch socket (each a thread that reads every frame), in one run
so the rows compare. Usage: python3 watch_bench.py DSHPTY_REPL [ROUNDS] [FLOOD_LINES]"""

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time


class Host:
    def __init__(self, repl, state):
        self.proc = subprocess.Popen([repl, "--json", "--state-dir", state], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, bufsize=0)
        self.next = 1

    def call(self, obj):
        obj = dict(obj, id=self.next)
        self.next += 1
        self.proc.stdin.write((json.dumps(obj) + "\n").encode())
        line = self.proc.stdout.readline()
        r = json.loads(line)
        assert r["ok"], r
        return r["result"]


class Watcher(threading.Thread):
    def __init__(self, path, sid):
        super().__init__(daemon=True)
        self.conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.conn.connect(path)
        self.conn.sendall(json.dumps({"op": "watch", "session": sid}).encode() + b"\n")
        self.frames = 0
        self.start()

    def run(self):
        buf = b""
        while True:
            try:
                chunk = self.conn.recv(1 << 16)
            except OSError:
                return
            if not chunk:
                return
            buf += chunk
            self.frames += buf.count(b"\n")
            buf = buf[buf.rfind(b"\n") + 1:]

    def close(self):
        self.conn.close()


def measure(host, sid, rounds, flood_lines):
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        host.call({"op": "send", "sessionId": sid, "text": "true"})
        times.append((time.perf_counter() - t0) * 1e6)
    times.sort()
    t0 = time.perf_counter()
    host.call({"op": "send", "sessionId": sid, "text": f"seq 1 {flood_lines}", "timeoutMs": 600000})
    elapsed = time.perf_counter() - t0
    flood_bytes = sum(len(str(i)) + 1 for i in range(1, flood_lines + 1))
    return statistics.median(times), times[int(len(times) * 0.99) - 1], flood_bytes / elapsed / 1e6


def main():
    repl = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    flood = int(sys.argv[3]) if len(sys.argv) > 3 else 2_000_000
    work = tempfile.mkdtemp(prefix="dshpty-watch-bench-")
    state = os.path.join(work, "state")
    host = Host(repl, state)
    try:
        sid = host.call({"op": "open", "type": "shell", "name": "bench"})["sessionId"]
        path = os.path.join(state, f"host-{host.proc.pid}.watch")
        print(f"{'observers':>9}  {'send p50 us':>11}  {'p99 us':>8}  {'flood MB/s':>10}  frames")
        for count in (0, 1, 10, 0, 1, 10):
            watchers = [Watcher(path, sid) for _ in range(count)]
            p50, p99, mbs = measure(host, sid, rounds, flood)
            frames = sum(w.frames for w in watchers)
            for w in watchers:
                w.close()
            print(f"{count:>9}  {p50:>11.0f}  {p99:>8.0f}  {mbs:>10.1f}  {frames}")
        host.call({"op": "shutdown"})
        host.proc.wait(timeout=60)
    finally:
        if host.proc.poll() is None:
            host.proc.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
