"""What a host can hold, read and never changed (docs/scale.md says what to set), and the
process-tree helpers the rollout bench and the rollout test both prove teardown with."""

import os
import resource

PER_SESSION_PIDS = 3  # bwrap, helper, shell (docs/scale.md)
PER_SESSION_FDS = 4   # the host's fds for one confined session
SPARE_PTYS, SPARE_PIDS, SPARE_FDS = 16, 512, 64


def read_int(path):
    with open(path) as f:
        return int(f.read().split()[0])


def capacity(n):
    """How many of n confined sessions this host holds: (fit, the setting that binds, every
    setting's count)."""
    ptys = read_int("/proc/sys/kernel/pty/max") - read_int("/proc/sys/kernel/pty/nr") - SPARE_PTYS
    procs = sum(1 for d in os.listdir("/proc") if d.isdigit())
    pids = (read_int("/proc/sys/kernel/pid_max") - procs - SPARE_PIDS) // PER_SESSION_PIDS
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    fds = n if hard == resource.RLIM_INFINITY else (hard - SPARE_FDS) // PER_SESSION_FDS
    limits = {"kernel.pty.max": ptys, "kernel.pid_max": pids, "the hard RLIMIT_NOFILE": fds}
    worst = min(limits, key=limits.get)
    return min(n, limits[worst]), worst, limits


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def descendants(root):
    children = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    children.setdefault(int(f.read().rsplit(")", 1)[1].split()[1]), []).append(int(d))
            except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
                pass
    out, stack = [], [root]
    while stack:
        for kid in children.get(stack.pop(), []):
            out.append(kid)
            stack.append(kid)
    return out
