#!/usr/bin/env python3
"""The pexpect peer of dshpty-bench: the same bash under pexpect, the way a user drives it.

usage: pexpect_peer.py MODE COUNT FLOOD_COMMAND NAME=VALUE...
  spawn  COUNT times: spawn bash, expect the first prompt     -> "ms ..."
  send   COUNT round trips: sendline('true'), expect prompt   -> "us ..."
  flood  COUNT runs of FLOOD_COMMAND read to EOF (pexpect keeps every byte) -> "mbps ..."
Prints "skip REASON" when pexpect cannot be imported. Always ends with "maxrss_kib N".
"""
import resource
import sys
import time

try:
    import pexpect
except ImportError as e:  # reported as skipped by the bench, never faked
    print("skip pexpect not importable:", e)
    sys.exit(0)

PROMPT = rb"\x1b\]133;D;\d+\x07dsh> "
BASH = ["--noprofile", "--norc", "-i"]
# As its docs advise for speed: no 50 ms sleep before each send, 64 KiB reads (default 2000).
TUNED = {"maxread": 65536}


def main():
    mode, count, flood_cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    env = dict(kv.split("=", 1) for kv in sys.argv[4:])
    if mode == "spawn":
        out = []
        for _ in range(count):
            t0 = time.perf_counter()
            child = pexpect.spawn("/bin/bash", BASH, env=env, dimensions=(24, 80), **TUNED)
            child.expect(PROMPT, timeout=10)
            out.append((time.perf_counter() - t0) * 1e3)
            child.close(force=True)
        print("ms", *("%.4f" % v for v in out))
    elif mode == "send":
        child = pexpect.spawn("/bin/bash", BASH, env=env, dimensions=(24, 80), **TUNED)
        child.delaybeforesend = None
        child.expect(PROMPT, timeout=10)
        out = []
        for _ in range(count):
            t0 = time.perf_counter()
            child.sendline("true")
            child.expect(PROMPT, timeout=10)
            out.append((time.perf_counter() - t0) * 1e6)
        child.close(force=True)
        print("us", *("%.2f" % v for v in out))
    elif mode == "flood":
        out = []
        for _ in range(count):
            t0 = time.perf_counter()
            child = pexpect.spawn("/bin/sh", ["-c", flood_cmd], env=env, dimensions=(24, 80),
                                  timeout=None, **TUNED)
            child.expect(pexpect.EOF)
            secs = time.perf_counter() - t0
            out.append(len(child.before) / secs / 1e6)
            child.close(force=True)
            del child
        print("mbps", *("%.3f" % v for v in out))
    else:
        raise SystemExit("unknown mode " + mode)
    print("maxrss_kib", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


if __name__ == "__main__":
    main()
