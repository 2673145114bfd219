"""Limits of sessions a helper holds for its host (docs/security.md, "Resource limits"), and a
cancel across a reconnect (docs/outlive.md, "Links that reconnect"), through the real
dshpty-repl --json:

  linger    a lingering local session with limits.pids 64: its cgroup is below the host's
            own (made by its helper); a fork loop stops short of 64 and the send says
            limitHit pids; the host SIGKILLed, the cgroup and the tree stay; a new host
            takes the session over: still in its cgroup, pids.max still 64, `list` says
            limitHit, a second loop is bounded again; close leaves no cgroup
  remote    a remote session over the suite's sshd with pids and memory limits: the far
            helper makes the cgroup below its own; a fork loop and a memory hog are each
            stopped and reported (send result and `list`); close leaves no cgroup
  nocgroup  a far side that sees no cgroup file system (its helper in a mount namespace
            without /sys/fs/cgroup): the open fails BACKEND_FAILED naming it, nothing runs
  instances a limited spawn where the user's inotify instances are used up (a user
            namespace of the test's whose user.max_inotify_instances is 1, the one each helper
            holds while its shell starts; the host's own
            setting untouched): on cgroup v1 it runs (no instance taken), on v2 it fails
            BACKEND_FAILED naming fs.inotify.max_user_instances
  startwatch any spawn where the user's inotify instances are used up (the same namespace,
            its bound lowered to 0 by a first session's shell): it fails at once
            BACKEND_FAILED naming fs.inotify.max_user_instances and ": 0 here", never at the
            prompt's timeout; the first session (one instance free) is the control
  oldfar    a far helper that predates limits (fake_far.py, WELCOME without the capability):
            a limited open fails BACKEND_FAILED saying so, no session left
  cancel    a lingering remote session's ssh client killed while a send's command runs,
            then a cancel: the SIGINT reaches the far command once the link is back (the
            file it would have made is never made)

Usage: far_limits_e2e.py REPL SUPERVISOR CASE

Loopback only. Every wait has a deadline; every process, temp dir and cgroup a case makes
is gone when it ends, pass or fail (a cgroup is removed only when the test saw its own
session's shell in it). No cgroup here, or no sshd, is a skip (77) with the reason."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "repl"))
sys.path.insert(0, HERE)

import remote_e2e as e2e  # noqa: E402
import repl_harness  # noqa: E402
from remote_e2e import Cleanup, Ids, alive, children_named, far_helpers, send, wait_until  # noqa: E402
from repl_harness import JsonRepl, check, fail, kill_quietly  # noqa: E402
from sshd_fixture import Skip, SshServer, skip  # noqa: E402
from session_cgroups import SessionCgroups  # noqa: E402

SKIP = 77
WAIT_S = 60.0
repl_harness.DEADLINE_S = 120.0

# A fork loop that cannot hang: it forks up to 100 sleepers, stops at the first refusal,
# says how many it made, and ends them (so the shell has pids for its prompt again).
BOMB = """import os, signal, time
kids = []
for i in range(100):
    try:
        pid = os.fork()
    except OSError as e:
        print("refused", e.errno)
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    kids.append(pid)
print("forked", len(kids))
for k in kids:
    os.kill(k, signal.SIGKILL)
for k in kids:
    os.waitpid(k, 0)
"""
# A memory hog: grows until the OOM killer ends it (the limit is far below this).
HOG = "b = []\nwhile True:\n    b.append(bytearray(8 << 20))\n"


class Cgroups:
    """The session cgroups a case saw its own sessions' shells in: only those are checked and,
    at the end, emptied and removed."""

    def __init__(self):
        self.paths = set()

    def of(self, pid):
        """The cgroup directories holding `pid` that carry a dshpty session name."""
        out = []
        with open(f"/proc/{pid}/cgroup") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if not os.path.basename(path).startswith("dshpty-"):
                    continue
                root = f"/sys/fs/cgroup/{controllers}" if controllers else "/sys/fs/cgroup"
                if not controllers and not os.path.exists(f"{root}/cgroup.controllers"):
                    root = "/sys/fs/cgroup/unified"
                out.append(root + path)
        self.paths.update(out)
        return out

    def present(self):
        return sorted(p for p in self.paths if os.path.isdir(p))

    def remove_left(self):
        left = self.present()
        for path in left:
            try:
                with open(f"{path}/cgroup.procs") as f:
                    kill_quietly(int(p) for p in f.read().split())
            except OSError:
                pass
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)  # the killed leave as they exit
        return left


def read(path):
    with open(path) as f:
        return f.read().strip()


def pids_dir(paths):
    for p in paths:
        if os.path.exists(f"{p}/pids.max"):
            return p
    fail(f"no pids cgroup among {paths}")


def bomb(repl, ids, session, work):
    script = os.path.join(work, "bomb.py")
    with open(script, "w") as f:
        f.write(BOMB)
    r = send(repl, ids, session, f"python3 {script}")
    forked = [int(w.split()[1]) for w in r["viewport"].splitlines() if w.startswith("forked ")]
    check(forked and forked[0] < 64 and "refused 11" in r["viewport"], f"the fork loop was not bounded: {r}")
    print(f"fork loop: {forked[0]} forked, limitHit {r.get('limitHit')}", flush=True)
    return r


def open_limited(repl, ids, fields, cgroups):
    r = repl.call({"id": ids(), "op": "open", **fields})
    if r["ok"]:
        return r["result"]
    # A skip only where a plain local session cannot have these limits either.
    plain = repl.call({"id": ids(), "op": "open", "type": "shell", "limits": fields["limits"]})
    if plain["ok"]:
        repl.pids.append(plain["result"]["pid"])
        cgroups.of(plain["result"]["pid"])  # removed at the end with the case's own
        fail(f"open: {r}, where a plain session has its limits")
    check(plain["error"]["code"] == "BACKEND_FAILED", plain)
    print(f"SKIP: no cgroup can be made here: {plain['error']['message']}", flush=True)
    raise SystemExit(SKIP)


# -- the cases ------------------------------------------------------------------------------

def linger_case(work):
    state = os.path.join(work, "state")
    os.makedirs(state, mode=0o700)
    args = [*e2e.REPL_ARGS, "--state-dir", state, "--limit-pids", "200"]
    cgroups = Cgroups()
    repl = JsonRepl(e2e.REPL, args)
    later = None
    tree = []
    ids = Ids()
    try:
        # Above the operator's ceiling: refused before anything runs, as for a plain session.
        err = repl.error({"id": ids(), "op": "open", "type": "shell", "linger": 60, "limits": {"pids": 201}},
                         "INVALID_ARGUMENT")
        check("limits.pids" in err["message"], err)
        opened = open_limited(repl, ids, {"type": "shell", "name": "capped", "linger": 60, "limits": {"pids": 64}}, cgroups)
        shell = opened["pid"]
        tree.append(shell)
        paths = cgroups.of(shell)
        check(paths, f"the shell {shell} is in no session cgroup")
        here = pids_dir(paths)
        check(read(f"{here}/pids.max") == "64", f"pids.max {read(f'{here}/pids.max')}")
        # Below the host's own cgroup (the helper's is the host's: it is its child).
        with open(f"/proc/{repl.proc.pid}/cgroup") as f:
            own = [line.split(":", 2)[2].strip() for line in f if ":pids:" in line or line.startswith("0::")]
        check(any(os.path.dirname(here).endswith(o.rstrip("/")) for o in own), f"{here} not below {own}")
        r = bomb(repl, ids, opened["sessionId"], work)
        check(r.get("limitHit") == {"kind": "pids"}, f"the loop's send: {r}")

        # The host dies: the session, its helper and its cgroup stay.
        helpers = [p for p in children_named(repl.proc.pid, "dshpty-supervisor")]
        tree += helpers
        os.kill(repl.proc.pid, signal.SIGKILL)
        repl.proc.wait()
        check(alive([shell]) == [shell], "the shell died with its host")
        check(cgroups.present() == sorted(paths), f"the cgroup went with the host: {cgroups.present()}")

        later = JsonRepl(e2e.REPL, args)
        taken = later.ok({"id": ids(), "op": "attach", "name": "capped"})["sessions"]
        check(len(taken) == 1 and taken[0]["pid"] == shell, f"attach: {taken}")
        session = taken[0]["sessionId"]
        check(cgroups.of(shell) == paths and read(f"{here}/pids.max") == "64", "the take-over left the cgroup")
        listed = {s["name"]: s for s in later.ok({"id": ids(), "op": "list"})["sessions"]}
        check(listed["capped"].get("limitHit") == {"kind": "pids"}, f"list after the attach: {listed}")
        r = bomb(later, ids, session, work)
        check(r.get("limitHit") == {"kind": "pids"}, f"the second loop's send: {r}")

        later.ok({"id": ids(), "op": "close", "sessionId": session})
        check(not cgroups.present(), f"close left {cgroups.present()}")
        later.ok({"id": ids(), "op": "shutdown"})
        check(later.wait_exit() == 0, "exit status")
        wait_until(lambda: not alive(tree), "the session's processes after close", WAIT_S)
    except Exception:
        traceback.print_exc()
        raise
    finally:
        repl.close()
        if later:
            later.close()
        kill_quietly(alive(tree))
        left = cgroups.remove_left()
        check(not left, f"session cgroups left behind: {left}")


def remote_case(server, work):
    far_dir = os.path.join(work, "far-state")
    argv = server.ssh_argv([e2e.SUPERVISOR, "--stdio", "--state-dir", far_dir])
    repl = e2e.start_repl("box", argv, ["--limit-pids", "200", "--limit-memory", str(1 << 30)])
    cgroups = Cgroups()
    cleanup = Cleanup()
    ids = Ids()
    try:
        err = repl.error({"id": ids(), "op": "open", "type": "box", "limits": {"memory": 2 << 30}}, "INVALID_ARGUMENT")
        check("limits.memory" in err["message"], err)
        opened = open_limited(repl, ids, {"type": "box", "name": "far", "limits": {"pids": 64, "memory": 96 << 20}}, cgroups)
        cleanup.pids += far_helpers(server.proc.pid)
        shell = opened["pid"]  # the far machine's pid: this one
        paths = cgroups.of(shell)
        check(paths, f"the far shell {shell} is in no session cgroup")
        check(read(f"{pids_dir(paths)}/pids.max") == "64", "pids.max")
        mem = [p for p in paths if os.path.exists(f"{p}/memory.limit_in_bytes") or os.path.exists(f"{p}/memory.max")]
        check(mem, f"no memory cgroup among {paths}")
        limit = f"{mem[0]}/memory.limit_in_bytes" if os.path.exists(f"{mem[0]}/memory.limit_in_bytes") else f"{mem[0]}/memory.max"
        check(int(read(limit)) == 96 << 20, f"{limit}: {read(limit)}")
        # Below the far helper's own cgroup, which sshd's session gave it.
        helper = far_helpers(server.proc.pid)[0]
        mine = cgroups_of_pid(helper)
        check(all(any(os.path.dirname(p).endswith(m) for m in mine) for p in paths), f"{paths} not below {mine}")

        r = bomb(repl, ids, opened["sessionId"], work)
        check(r.get("limitHit") == {"kind": "pids"}, f"the loop's send: {r}")
        hog = os.path.join(work, "hog.py")
        with open(hog, "w") as f:
            f.write(HOG)
        r = send(repl, ids, opened["sessionId"], f"python3 {hog}; echo hog-exit-$?")
        check("hog-exit-137" in r["viewport"], f"the hog was not killed: {r}")
        check(r.get("limitHit", {}).get("kind") == "memory", f"the hog's send: {r}")
        listed = {s["name"]: s for s in repl.ok({"id": ids(), "op": "list"})["sessions"]}
        check(listed["far"].get("limitHit", {}).get("kind") == "memory", f"list: {listed}")
        alive_after = send(repl, ids, opened["sessionId"], "echo alive-$((6*7))")
        check("alive-42" in alive_after["viewport"], alive_after)

        repl.ok({"id": ids(), "op": "close", "sessionId": opened["sessionId"]})
        check(not cgroups.present(), f"close left {cgroups.present()}")
        e2e.finish(repl, ids)
        cleanup.passed()
    except Exception:
        traceback.print_exc()
        raise
    finally:
        repl.close()
        cleanup.run()
        left = cgroups.remove_left()
        check(not left, f"session cgroups left behind: {left}")


def cgroups_of_pid(pid):
    with open(f"/proc/{pid}/cgroup") as f:
        return [line.rstrip("\n").split(":", 2)[2].rstrip("/") for line in f
                if any(c in line.split(":")[1].split(",") for c in ("pids", "memory")) or line.startswith("0::")]


def nocgroup_case(work):
    # The far helper in a mount namespace of its own, /sys/fs/cgroup unmounted there: it can
    # see no cgroup hierarchy at all, as on a far machine that gives it none.
    if not shutil.which("unshare"):
        print("SKIP: no unshare(1) here", flush=True)
        raise SystemExit(SKIP)
    far = (f"exec unshare -m --propagation private sh -c "
           f"'umount -l /sys/fs/cgroup && exec {e2e.SUPERVISOR} --stdio'")
    repl = e2e.start_repl("bare", ["sh", "-c", far], ["--limit-pids", "200"])
    ids = Ids()
    try:
        r = repl.call({"id": ids(), "op": "open", "type": "bare", "limits": {"pids": 64}})
        check(not r["ok"] and r["error"]["code"] == "BACKEND_FAILED", f"open: {r}")
        words = r["error"]["message"]
        check("on the far side" in words and "limits:" in words and "cgroup" in words, words)
        check(not repl.ok({"id": ids(), "op": "list"})["sessions"], "a session after the refusal")
        check(not far_helpers(repl.proc.pid), "a far helper stayed after the refusal")
        e2e.finish(repl, ids)
    finally:
        repl.close()


def repl_in_userns(work, instances):
    """A dshpty-repl in a user namespace of its own (root mapped to root: the cgroup files
    stay writable) where `instances` inotify instances may be had at a time; the machine's
    setting is not touched."""
    probe = subprocess.run(["unshare", "-U", "--map-root-user", "sh", "-c",
                            "echo 0 > /proc/sys/user/max_inotify_instances"], capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"SKIP: no user namespace with its own inotify bound here: {probe.stderr.strip()}", flush=True)
        raise SystemExit(SKIP)
    wrapper = os.path.join(work, "repl-in-userns")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\nexec unshare -U --map-root-user sh -c "
                f"'echo {instances} > /proc/sys/user/max_inotify_instances && exec {e2e.REPL} \"$@\"' sh \"$@\"\n")
    os.chmod(wrapper, 0o755)
    return JsonRepl(wrapper)


def instances_case(work):
    # One inotify instance at a time: the one a helper holds while its shell reads the
    # integration.
    repl = repl_in_userns(work, 1)
    cgroups = SessionCgroups(repl.proc.pid)  # the host's pid: the wrapper execs into it
    ids = Ids()
    with open("/proc/self/cgroup") as f:
        v1_pids = any(line.split(":")[1].split(",").count("pids") for line in f)
    try:
        r = repl.call({"id": ids(), "op": "open", "type": "shell", "limits": {"pids": 64, "memory": 96 << 20}})
        if v1_pids:
            # cgroup v1 signals no refused fork to inotify: a pids limit takes no instance
            # there (and v1's OOM event is an eventfd), so the session runs.
            if not r["ok"] and "cannot watch" not in r["error"]["message"]:
                print(f"SKIP: no cgroup can be made here: {r['error']['message']}", flush=True)
                raise SystemExit(SKIP)
            check(r["ok"], f"a v1 limited session took an inotify instance: {r}")
            repl.pids.append(r["result"]["pid"])
            check(cgroups.sessions() == 1, f"no session cgroup: {cgroups.present()}")
            repl.ok({"id": ids(), "op": "close", "sessionId": r["result"]["sessionId"]})
            check(not cgroups.present(), f"close left {cgroups.present()}")
        else:
            check(not r["ok"] and r["error"]["code"] == "BACKEND_FAILED", f"open: {r}")
            words = r["error"]["message"]
            if "cannot watch" not in words:  # failed before its watches: no cgroup here
                print(f"SKIP: no cgroup can be made here: {words}", flush=True)
                raise SystemExit(SKIP)
            check("fs.inotify.max_user_instances" in words and ": 1 here" in words, words)
            check(not repl.ok({"id": ids(), "op": "list"})["sessions"], "a session after the refusal")
        repl.ok({"id": ids(), "op": "shutdown"})
        check(repl.wait_exit() == 0, "exit status")
    finally:
        repl.close()
        left = cgroups.remove_left()
        check(not left, f"session cgroups left behind: {left}")


def startwatch_case(work):
    # No inotify instance at all: a helper cannot watch its shell read the integration, so
    # the shell could never read it; the spawn fails at once naming the setting and the
    # bound in force, not at the prompt's timeout naming nothing. Its control: one
    # instance, and the same spawn runs; a session's shell lowers the bound to none.
    repl = repl_in_userns(work, 1)
    ids = Ids()
    try:
        r = repl.call({"id": ids(), "op": "open", "type": "shell"})
        check(r["ok"], f"the control: a spawn with one inotify instance to take: {r}")
        repl.pids.append(r["result"]["pid"])
        control = r["result"]["sessionId"]
        out = send(repl, ids, control, "echo 0 > /proc/sys/user/max_inotify_instances; echo bound=$?")
        check("bound=0" in out["viewport"], f"lowering the bound: {out}")
        r = repl.call({"id": ids(), "op": "open", "type": "shell"})
        check(not r["ok"] and r["error"]["code"] == "BACKEND_FAILED", f"open with none: {r}")
        words = r["error"]["message"]
        check("fs.inotify.max_user_instances" in words and ": 0 here" in words, words)
        check("no prompt" not in words, words)
        sessions = repl.ok({"id": ids(), "op": "list"})["sessions"]
        check([x["sessionId"] for x in sessions] == [control], f"a session after the refusal: {sessions}")
        repl.ok({"id": ids(), "op": "shutdown"})
        check(repl.wait_exit() == 0, "exit status")
    finally:
        repl.close()


def oldfar_case(work):
    pidfile = os.path.join(work, "fake.pid")
    fake = ["python3", os.path.join(HERE, "fake_far.py"), pidfile, "prompt-then-mute"]
    repl = e2e.start_repl("old", fake)
    ids = Ids()
    try:
        r = repl.call({"id": ids(), "op": "open", "type": "old", "limits": {"pids": 64}})
        check(not r["ok"] and r["error"]["code"] == "BACKEND_FAILED", f"open: {r}")
        check("cannot apply limits: it predates them" in r["error"]["message"], r)
        check(not repl.ok({"id": ids(), "op": "list"})["sessions"], "a session after the refusal")
        e2e.finish(repl, ids)
    finally:
        repl.close()
        with open(pidfile) as f:
            kill_quietly([int(f.read())])


def cancel_case(server, work):
    far_dir = os.path.join(work, "far-state")
    argv = server.ssh_argv([e2e.SUPERVISOR, "--stdio", "--state-dir", far_dir])
    host_dir = os.path.join(work, "host-state")
    os.makedirs(host_dir, mode=0o700)
    repl = e2e.start_repl("box", argv, ["--idle-ms", "8000", "--state-dir", host_dir])
    cleanup = Cleanup()
    ids = Ids()
    stopped = []
    try:
        opened = repl.ok({"id": ids(), "op": "open", "type": "box", "name": "main", "linger": 30})
        session = opened["sessionId"]
        cleanup.pids += far_helpers(server.proc.pid)
        ran = os.path.join(work, "r2-ran")
        started = os.path.join(work, "r2-started")
        live = ids()
        repl.request({"id": live, "op": "send", "sessionId": session,
                      "text": f"touch {started}; sleep 30; touch {ran}; echo R-END", "idleMs": 8000})
        wait_until(lambda: os.path.exists(started), "the command started", WAIT_S)
        clients = children_named(repl.proc.pid, "ssh")
        check(len(clients) == 1, f"one ssh client: {clients}")
        # sshd's listener held stopped: the host's attempts wait in its backlog, so the
        # cancel surely comes while the link is being restored.
        os.kill(server.proc.pid, signal.SIGSTOP)
        stopped.append(server.proc.pid)
        os.kill(clients[0], signal.SIGKILL)
        wait_until(lambda: (e2e.status_of(repl, ids, session) or {}).get("kind") == "reconnecting",
                   "the session reconnecting", WAIT_S)
        c = repl.ok({"id": ids(), "op": "cancel", "sendId": live})
        check(c.get("cancelled") is True, f"cancel: {c}")
        os.kill(server.proc.pid, signal.SIGCONT)
        stopped.clear()
        r = repl.response(live)
        check(r.get("ok") is True, f"the send: {r}")
        # Settled at the prompt: the list is over, interrupted (the sleep alone would take
        # 30 s, past the send's idle bound), so its file will never be made.
        check(r["result"]["waitReason"] == "stdin_read", f"the cancel's SIGINT never reached the far command: {r}")
        check(not os.path.exists(ran), f"the list ran on: {r}")
        after = send(repl, ids, session, "echo after-$((6*7))")
        check("after-42" in after["viewport"], after)
        e2e.finish(repl, ids)
        cleanup.passed()
    except Exception:
        traceback.print_exc()
        raise
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        repl.close()
        cleanup.run()


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    e2e.REPL, e2e.SUPERVISOR = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    case = sys.argv[3]
    work = tempfile.mkdtemp(prefix="dshpty-farlimits-")
    server = None
    try:
        if case in ("remote", "cancel"):
            try:
                server = SshServer().start()
            except Skip as why:
                skip(str(why))
        if case == "linger":
            linger_case(work)
        elif case == "remote":
            remote_case(server, work)
        elif case == "nocgroup":
            nocgroup_case(work)
        elif case == "instances":
            instances_case(work)
        elif case == "startwatch":
            startwatch_case(work)
        elif case == "oldfar":
            oldfar_case(work)
        elif case == "cancel":
            cancel_case(server, work)
        else:
            fail(f"no case {case}")
    finally:
        if server:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
