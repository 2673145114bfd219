"""How soon `until` answers: the time from a server's listen(2) (or a line's write) to the
result reaching the host, over ROUNDS rounds through dshpty-repl --json, beside a client's
own loop that polls the port with connect() every 100 ms. Each round starts the server as a
background job and ends it with `stop`. The server writes CLOCK_MONOTONIC right after its
listen() (or its print) to a file; the host reads the same clock when the answer arrives.

Usage: until_bench.py DSHPTY_REPL [ROUNDS] [SUPERVISOR]   (tools/dev bench runs it)
  with SUPERVISOR: a remote session over `sh -c 'exec SUPERVISOR --stdio'` (docs/remote.md, "Jobs")."""

import os
import shlex
import socket
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "repl"))
from repl_harness import JsonRepl  # noqa: E402

LISTEN = ("python3 -c \"import socket,time; s=socket.socket(); s.bind(('127.0.0.1',{port})); s.listen(); "
          "open('{mark}','w').write(repr(time.clock_gettime(time.CLOCK_MONOTONIC))); time.sleep(60)\"")
PRINT = ("python3 -c \"import time; time.sleep(0.05); t=time.clock_gettime(time.CLOCK_MONOTONIC); "
         "print('rea'+'dy', flush=True); open('{mark}','w').write(repr(t)); time.sleep(60)\"")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mark_time(path):
    for _ in range(1000):
        try:
            with open(path) as f:
                text = f.read()
            if text:
                os.unlink(path)
                return float(text)
        except FileNotFoundError:
            pass
        time.sleep(0.001)
    raise SystemExit(f"no mark in {path}")


def poll_port(port, interval=0.1):
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return time.monotonic()
        except OSError:
            time.sleep(interval)


def stop(repl, job):
    out = repl.ok({"id": f"{job}-stop", "op": "stop", "sendId": job})
    if not out["stopped"]:
        raise SystemExit(f"stop {job}: {out}")


def percentiles(samples):
    ms = sorted(x * 1000 for x in samples)
    p99 = ms[min(len(ms) - 1, int(round(0.99 * (len(ms) - 1))))]
    return f"p50 {statistics.median(ms):6.1f} ms  p99 {p99:6.1f} ms  (n={len(ms)})"


def main():
    repl_path = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    with tempfile.TemporaryDirectory(prefix="dshpty-until-bench-") as tmp:
        os.environ["HOME"] = tmp
        mark = os.path.join(tmp, "mark")
        far = sys.argv[3] if len(sys.argv) > 3 else None
        args = ["--remote", f"far=sh -c {shlex.quote('exec ' + shlex.quote(far) + ' --stdio')}"] if far else []
        repl = JsonRepl(repl_path, args)
        try:
            repl.ok({"id": "open", "op": "open", "type": "far" if far else "shell", "name": "bench", "cwd": tmp})
            port_lat, poll_lat, line_lat = [], [], []
            for n in range(rounds):
                port = free_port()
                repl.ok({"id": f"u{n}", "op": "send", "sessionId": "pty-1", "background": True,
                         "until": {"port": port}, "text": LISTEN.format(port=port, mark=mark)})
                port_lat.append(time.monotonic() - mark_time(mark))
                stop(repl, f"u{n}")
                port = free_port()
                repl.ok({"id": f"p{n}", "op": "send", "sessionId": "pty-1", "background": True,
                         "text": LISTEN.format(port=port, mark=mark)})
                seen = poll_port(port)
                poll_lat.append(seen - mark_time(mark))
                stop(repl, f"p{n}")
                repl.ok({"id": f"o{n}", "op": "send", "sessionId": "pty-1", "background": True,
                         "until": {"output": "^ready$"}, "text": PRINT.format(mark=mark)})
                line_lat.append(time.monotonic() - mark_time(mark))
                stop(repl, f"o{n}")
            print(f"until port   (listen() to the answer):      {percentiles(port_lat)}")
            print(f"client poll  (listen() to a 100 ms connect loop): {percentiles(poll_lat)}")
            print(f"until output (the line's write to the answer): {percentiles(line_lat)}")
            repl.request({"id": "bye", "op": "shutdown"})
            repl.wait_exit()
        finally:
            repl.close()


if __name__ == "__main__":
    main()
