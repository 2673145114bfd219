"""dshpty-repl and dshpty-mcp raise their soft RLIMIT_NOFILE to the hard one at start
(docs/scale.md: each session holds three or four of the host's fds). Started with a soft
limit of 256 under a hard one of 4096, each is read from /proc/PID/limits while it waits
on its stdin; then its stdin closes and it exits.

Usage: fd_limit_e2e.py DSHPTY_REPL DSHPTY_MCP"""

import resource
import subprocess
import sys
import time

from repl_harness import check, fail

SOFT, HARD = 256, 4096


def lower_limit():
    resource.setrlimit(resource.RLIMIT_NOFILE, (SOFT, HARD))


def soft_limit_of(pid):
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith("Max open files"):
                return int(line.split()[3])
    fail(f"no 'Max open files' in /proc/{pid}/limits")


def check_raised(argv, what):
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sys.stderr,
                            preexec_fn=lower_limit, start_new_session=True)
    try:
        # The raise happens before the program reads its stdin; it cannot be seen to happen, so
        # the limit is polled (with a deadline) until it moves or the program is done starting.
        deadline = time.monotonic() + 30
        soft = soft_limit_of(proc.pid)
        while soft != HARD and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
            soft = soft_limit_of(proc.pid)
        check(soft == HARD, f"{what}: soft RLIMIT_NOFILE {soft}, expected the hard {HARD}")
        proc.stdin.close()
        check(proc.wait(timeout=30) == 0, f"{what}: exit status {proc.returncode}")
        print(f"ok: {what} raised its soft fd limit {SOFT} -> {soft}", flush=True)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def main():
    check_raised([sys.argv[1], "--json"], "dshpty-repl --json")
    check_raised([sys.argv[2]], "dshpty-mcp")
    return 0


if __name__ == "__main__":
    sys.exit(main())
