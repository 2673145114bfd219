"""What the bash integration (docs/shell-backend.md, "Marks and dialects") costs the shell
itself, apart from any host: a bare PTY loop in this process types `true` into bash and
reads until the prompt ends, for two shells taking turns:

  plain       bash --norc with PS1='dsh> ' (the bench's bare loop)
  integrated  bash with dshpty's integration script as its rcfile (marks with a nonce)

For each it prints the round trip (median and p10, us), the reads the loop needed per send,
and what bash spent per send: CPU time (from /proc/PID/schedstat, so load moves it less
than the wall clock) and the bytes it wrote. The difference between the two is the floor
any host pays for exact prompts, whatever it does.

    integration_cost.py [ROUNDS]
    integration_cost.py --startup [SPAWNS]

--startup measures the start instead: bash's CPU time from its exec to its first prompt
(median and p10, ms; the fork and exec of the measuring process included, the same for
both), for the same two shells taking turns.
"""

import os
import pty
import statistics
import sys
import tempfile
import time

NONCE = "0123456789abcdef"
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "backends", "shell",
                      "dialect", "integration", "bash.sh")


def start(variant, work):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": work, "TERM": "dumb"}
    if variant == "plain":
        argv = ["/bin/bash", "--noprofile", "--norc", "-i"]
        env["PS1"] = "dsh> "
        end = b"dsh> "
    else:
        rc = os.path.join(work, "rc.sh")
        with open(SCRIPT) as f:
            source = f.read().replace("@DSHPTY_INIT@", rc)
        with open(rc, "w") as f:
            f.write(source)
        argv = ["/bin/bash", "--noprofile", "--rcfile", rc, "-i"]
        env.update(DSHPTY_NONCE=NONCE, DSHPTY_RC="none", DSHPTY_HISTORY="private")
        end = b"\x1b]133;B;dshpty=" + NONCE.encode() + b"\x07"
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(work)
        os.execve(argv[0], argv, env)
    return pid, fd, end


def until_prompt(fd, end):
    """Reads until the prompt's end is the last thing but blanks and backspaces (readline
    clears the rest of a dumb terminal's line after a prompt with invisible parts)."""
    buf, reads = b"", 0
    while True:
        buf += os.read(fd, 65536)
        reads += 1
        at = buf.rfind(end)
        if at >= 0 and not buf[at + len(end):].strip(b" \b"):
            return buf, reads


def cpu_ns(pid):
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def measure(variant, rounds, work):
    pid, fd, end = start(variant, work)
    try:
        until_prompt(fd, end)
        for _ in range(50):  # warm up
            os.write(fd, b"true\r")
            until_prompt(fd, end)
        times, reads, written = [], [], 0
        cpu_before = cpu_ns(pid)
        for _ in range(rounds):
            t0 = time.perf_counter_ns()
            os.write(fd, b"true\r")
            out, n = until_prompt(fd, end)
            times.append((time.perf_counter_ns() - t0) / 1000)
            reads.append(n)
            written += len(out)
        cpu = (cpu_ns(pid) - cpu_before) / rounds / 1000
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(fd)
    times.sort()
    print(f"{variant:10} round trip us median {statistics.median(times):7.1f}  p10 {times[len(times) // 10]:7.1f}  "
          f"reads/send {statistics.mean(reads):.2f}  bash CPU/send {cpu:6.1f} us  bytes/send {written / rounds:.0f}")


def measure_startup(variant, spawns, work):
    cpu = []
    for _ in range(spawns):
        pid, fd, end = start(variant, work)
        try:
            until_prompt(fd, end)
            cpu.append(cpu_ns(pid) / 1e6)
        finally:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            os.close(fd)
    cpu.sort()
    print(f"{variant:10} CPU to the first prompt ms median {statistics.median(cpu):5.2f}  p10 {cpu[len(cpu) // 10]:5.2f}")


def main():
    startup = len(sys.argv) > 1 and sys.argv[1] == "--startup"
    args = sys.argv[2:] if startup else sys.argv[1:]
    count = int(args[0]) if args else (100 if startup else 1000)
    run = measure_startup if startup else measure
    with tempfile.TemporaryDirectory(prefix="dshpty-bench-integration-") as work:
        for _ in range(2):
            for variant in ("plain", "integrated"):
                run(variant, count, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
