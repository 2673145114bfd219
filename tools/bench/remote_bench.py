"""Remote sessions over ssh on loopback, beside a local session and a remote one over a plain
pipe (the far helper as its own transport: the protocol's cost without ssh's), in the same
run and the same dshpty-repl --json process (so the REPL's own cost is in all): send round
trip, output throughput, spawn to first prompt with and without ssh connection reuse
(ControlMaster); and ssh's own round trip measured the same way (a line through a remote
`cat`, sequentially). A lingering ssh session (`ssh-linger`, docs/outlive.md "Links that
reconnect") runs beside the plain one: its send round trip and throughput carry the
reconnect's bookkeeping (input kept until written, the far ring), and its reconnect time is
measured: the ssh client killed, then a send, timed from the kill to its answer.
Uses the remote suite's private sshd (tests/remote/sshd_fixture.py); never the network.

    remote_bench.py PATH/TO/dshpty-repl PATH/TO/dshpty-supervisor [ROUNDS]
"""

import json
import os
import signal
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "remote"))
from sshd_fixture import SshServer, Skip  # noqa: E402


class Repl:
    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.next_id = 0

    def call(self, op, **fields):
        self.next_id += 1
        self.proc.stdin.write((json.dumps({"id": self.next_id, "op": op, **fields}) + "\n").encode())
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit("dshpty-repl ended")
            reply = json.loads(line)
            if reply.get("id") == self.next_id:
                if not reply.get("ok"):
                    raise SystemExit(f"{op} failed: {reply}")
                return reply["result"] if "result" in reply else reply

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def pct(samples, p):
    s = sorted(samples)
    return s[min(len(s) - 1, int(p / 100 * len(s)))]


def ssh_round_trip(argv, rounds):
    cat = subprocess.Popen(argv + ["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    samples = []
    for i in range(rounds + 10):
        t = timed(lambda: (cat.stdin.write(b"x\n"), cat.stdout.readline()))
        if i >= 10:
            samples.append(t * 1e6)
    cat.stdin.close()
    cat.wait(timeout=30)
    return samples


def ssh_client_of(root, marker):
    """The ssh client below `root` whose command line holds `marker`."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == root and os.path.basename(argv[0]) == b"ssh" and marker.encode() in argv:
            return int(entry)
    raise SystemExit("no ssh client of the lingering session")


def main():
    repl_path, supervisor = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 300
    try:
        server = SshServer().__enter__()
    except Skip as why:
        print(f"remote-bench: skipped: {why}")
        return 77
    control_dir = tempfile.mkdtemp(prefix="dshpty-bench-cm-")
    # The host's records of its lingering session: a directory of the bench's own.
    host_state = tempfile.mkdtemp(prefix="dshpty-bench-host-")
    try:
        far = [supervisor, "--stdio"]
        plain = server.ssh_argv(far)
        far_state = tempfile.mkdtemp(prefix="dshpty-bench-far-")
        lingering = server.ssh_argv(far + ["--state-dir", far_state])
        reuse = plain[:1] + ["-o", "ControlMaster=auto", "-o", f"ControlPath={control_dir}/cm",
                             "-o", "ControlPersist=60"] + plain[1:]
        repl = Repl([repl_path, "--json", "--state-dir", host_state,
                     "--remote", "pipe=" + shlex.join(far),
                     "--remote", "ssh=" + shlex.join(plain),
                     "--remote", "ssh-reuse=" + shlex.join(reuse),
                     "--remote", "ssh-linger=" + shlex.join(lingering)])

        ssh_rt = ssh_round_trip(server.ssh_argv(), rounds)

        sessions = {kind: repl.call("open", type=kind, **({"linger": 600} if kind == "ssh-linger" else {}))["sessionId"]
                    for kind in ("shell", "pipe", "ssh", "ssh-linger")}
        rt = {kind: [] for kind in sessions}
        for i in range(rounds + 10):
            for kind, sid in sessions.items():
                t = timed(lambda: repl.call("send", sessionId=sid, text="true"))
                if i >= 10:
                    rt[kind].append(t * 1e6)

        # Reconnects: the lingering session's ssh client killed, then a send; from the kill
        # to the send's answer (the reconnect, the far helper's relay, the send's round trip).
        reconnect = []
        for _ in range(20):
            client = ssh_client_of(repl.proc.pid, far_state)
            start = time.perf_counter()
            os.kill(client, signal.SIGKILL)
            answer = repl.call("send", sessionId=sessions["ssh-linger"], text="echo back")
            reconnect.append((time.perf_counter() - start) * 1e3)
            if "back" not in answer["viewport"] or answer["waitReason"] != "stdin_read":
                raise SystemExit(f"the send after a reconnect: {answer}")

        flood_bytes = 64 * 1024 * 1024
        line = "0123456789" * 7
        flood = f"yes {line} | head -c {flood_bytes}"
        rate = {}
        for kind, sid in sessions.items():
            t = timed(lambda: repl.call("send", sessionId=sid, text=flood, timeoutMs=300000, idleMs=60000))
            rate[kind] = flood_bytes / t / 1e6
        for sid in sessions.values():
            repl.call("close", sessionId=sid)

        spawn = {}
        for kind in ("shell", "pipe", "ssh", "ssh-reuse"):
            samples = []
            for i in range(11):
                opened = {}
                t = timed(lambda: opened.update(repl.call("open", type=kind)))
                if not (kind == "ssh-reuse" and i == 0):  # the first one makes the master
                    samples.append(t * 1e3)
                repl.call("close", sessionId=opened["sessionId"])
            spawn[kind] = statistics.median(samples)
        repl.close()
        # The master outlives its clients by ControlPersist: end it now.
        user_host = plain[-3]
        subprocess.run(["ssh", "-F", "/dev/null", "-o", f"ControlPath={control_dir}/cm", "-O", "exit", user_host],
                       capture_output=True)

        print(f"ssh's own round trip (a line through a remote cat), p50 / p99: "
              f"{statistics.median(ssh_rt):.0f} / {pct(ssh_rt, 99):.0f} us")
        for kind in sessions:
            print(f"send `true` to stdin_read, {kind:5}, p50 / p99: "
                  f"{statistics.median(rt[kind]):.0f} / {pct(rt[kind], 99):.0f} us")
        # The target: a send over ssh costs the local send plus at most one and a half of
        # ssh's own round trips (the input out, the prompt back, half a round trip of slack
        # for the frames' own work on both sides).
        local, remote, ssh_p50 = (statistics.median(rt["shell"]), statistics.median(rt["ssh"]),
                                  statistics.median(ssh_rt))
        limit = local + 1.5 * ssh_p50
        print(f"target: ssh send p50 <= local + 1.5 ssh round trips: {remote:.0f} vs "
              f"{local:.0f} + 1.5 x {ssh_p50:.0f} = {limit:.0f} us "
              f"({(remote - local) / ssh_p50:.2f} round trips): {'met' if remote <= limit else 'MISSED'}")
        print(f"raw, us: " + "; ".join(f"{kind} " + " ".join(f"{v:.0f}" for v in rt[kind]) for kind in rt))
        print(f"raw, us: ssh round trip " + " ".join(f"{v:.0f}" for v in ssh_rt))
        for kind in sessions:
            print(f"throughput, {flood_bytes >> 20} MiB of 70-column lines, {kind:5}: {rate[kind]:.1f} MB/s")
        for kind, ms in spawn.items():
            print(f"spawn to first prompt, median of 10, {kind:9}: {ms:.1f} ms")
        print(f"reconnect, the ssh client killed to a send's answer, {len(reconnect)} cuts, p50 / max: "
              f"{statistics.median(reconnect):.1f} / {max(reconnect):.1f} ms")
        return 0
    finally:
        server.__exit__(None, None, None)
        subprocess.run(["rm", "-rf", control_dir, far_state, host_state])


if __name__ == "__main__":
    sys.exit(main())
