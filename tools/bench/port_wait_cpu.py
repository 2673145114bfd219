"""What a send waiting on a port costs while nothing listens there: the CPU time (utime +
stime from /proc/PID/stat) of the host (dshpty-repl) and, for a remote session, of the far
helper (`dshpty-supervisor --stdio`, which watches the port next to its tree), over SECONDS of
the wait, as a share of one core, beside the same background job with no wait. The wait's first seconds poll fastest (proc/port_poll.hpp).

Usage: port_wait_cpu.py DSHPTY_REPL [SUPERVISOR] [SECONDS]
  with SUPERVISOR: a remote session over `sh -c 'exec SUPERVISOR --stdio'`; else a local one."""

import os
import shlex
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "repl"))
from repl_harness import JsonRepl  # noqa: E402


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime


def far_helper(root):
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if ppid == root and b"--stdio" in argv:
            return int(entry)
    return None


def main():
    repl_path = sys.argv[1]
    supervisor = sys.argv[2] if len(sys.argv) > 2 and not sys.argv[2].isdigit() else None
    seconds = float(sys.argv[-1]) if sys.argv[-1].replace(".", "").isdigit() else 10.0
    hz = os.sysconf("SC_CLK_TCK")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # free once closed; nothing listens there during the wait
    with tempfile.TemporaryDirectory(prefix="dshpty-port-cpu-") as tmp:
        os.environ["HOME"] = tmp
        args = []
        if supervisor:
            args = ["--remote", f"far=sh -c {shlex.quote('exec ' + shlex.quote(supervisor) + ' --stdio')}"]
        repl = JsonRepl(repl_path, args)
        try:
            repl.ok({"id": "open", "op": "open", "type": "far" if supervisor else "shell", "name": "cpu", "cwd": tmp})
            watched = {"host": repl.proc.pid}
            if supervisor:
                watched["far helper"] = far_helper(repl.proc.pid)
            # The same background job without and with the port wait: the difference is the poll's.
            for label, until in (("no wait", {}), ("port wait", {"until": {"port": port}})):
                repl.ok({"id": label, "op": "send", "sessionId": "pty-1", "background": True,
                         "timeoutMs": int((seconds + 5) * 1000), "text": "sleep 600", **until})
                time.sleep(0.2)  # the job is under way
                before = {k: cpu_ticks(p) for k, p in watched.items()}
                t0 = time.monotonic()
                time.sleep(seconds)
                elapsed = time.monotonic() - t0
                for k, p in watched.items():
                    used = (cpu_ticks(p) - before[k]) / hz
                    print(f"{label:9s} {k:10s} {used * 1000:7.1f} ms CPU in {elapsed:.1f} s: {100 * used / elapsed:.2f}% of a core")
                repl.ok({"id": f"{label}-stop", "op": "stop", "sendId": label})
            repl.request({"id": "bye", "op": "shutdown"})
            repl.wait_exit()
        finally:
            repl.close()


if __name__ == "__main__":
    main()
