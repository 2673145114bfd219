"""The session cgroups a dshpty host made (docs/security.md, "Resource limits"): each is
named dshpty-HOSTPID-... below the host's own cgroup in each hierarchy. A limits test lists
them while the host runs and checks, once it is gone, that none is left; whatever is left
is emptied and removed (the test still fails), so no test leaves one behind."""

import os
import signal

CONTROLLERS = ("pids", "memory", "cpu")


def _parents(host_pid):
    """The host's cgroup directories (v1: /sys/fs/cgroup/CONTROLLERS/PATH; v2: the unified one)."""
    out = set()
    with open(f"/proc/{host_pid}/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            names = controllers.split(",") if controllers else []
            if any(c in CONTROLLERS for c in names):
                out.add(f"/sys/fs/cgroup/{controllers}{path}".rstrip("/"))
            elif not controllers:
                for root in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
                    if os.path.exists(f"{root}/cgroup.controllers"):
                        out.add(f"{root}{path}".rstrip("/"))
                        break
    return sorted(out)


class SessionCgroups:
    def __init__(self, host_pid):
        self.prefix = f"dshpty-{host_pid}-"
        self.parents = _parents(host_pid)

    def present(self):
        found = []
        for parent in self.parents:
            try:
                found += [f"{parent}/{n}" for n in os.listdir(parent) if n.startswith(self.prefix)]
            except OSError:
                pass
        return found

    def sessions(self):
        """How many sessions have a cgroup (one in each hierarchy carrying their limits)."""
        return len({os.path.basename(path) for path in self.present()})

    def remove_left(self):
        """Empties and removes what is left; returns what was."""
        left = self.present()
        for path in left:
            try:
                with open(f"{path}/cgroup.procs") as f:
                    for pid in f.read().split():
                        try:
                            os.kill(int(pid), signal.SIGKILL)
                        except ProcessLookupError:
                            pass
            except OSError:
                pass
            remove_dir(path)
        return left


def remove_dir(path):
    """Removes an emptied cgroup directory, retried while the killed leave it as they exit."""
    for _ in range(100000):  # bounded
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            pass
