"""Per-session limits through dshpty-repl's faces (docs/tool-protocol.md, docs/security.md
"Resource limits"), with the real shell backend and real cgroups: the JSON `open` field
`limits` may lower the operator's --limit-* but never raise them (INVALID_ARGUMENT naming
limits.KIND); a fork loop under limits.pids 64 stops at the cap and the send result and
`list` say limitHit pids, while a neighbour says nothing; the text face's open takes
--limit-pids and prints [limit: pids]. Close leaves no session cgroup, and neither does a
host killed with SIGKILL (its helpers kill the trees and remove the cgroups), unconfined or
confined; a session whose helper was killed leaves its cgroup's processes to its close,
which ends them and removes the cgroup; and one a host killed mid-open left (empty, unlocked) goes at the next host's
first limited open, while a locked one or one holding a process stays. A confined session under limits.memory that fills its /dev/shm past the limit is ended by the OOM
killer, the send and `list` say so (SIGKILL, limitHit memory), and nothing of what it wrote
is left on the host. A machine where no
cgroup can be made reports the cgroup cases skipped, with the reason.

Usage: limits_e2e.py DSHPTY_REPL"""

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import traceback

import repl_harness
from repl_harness import JsonRepl, check, run_text_script, wait_gone
from session_cgroups import SessionCgroups, remove_dir

# The storm: bash retries a refused fork (1+2+4+8 s) before it gives the loop up; the
# sleeps end soon after (the shell then forks again for its prompt), bounding the test.
repl_harness.DEADLINE_S = 150.0
STORM = "for i in $(seq 300); do sleep 30 & done; echo looped"
SKIP = 77


def test_json(path):
    repl = JsonRepl(path, ["--limit-pids", "200", "--limit-memory", str(1 << 30)])
    cgroups = SessionCgroups(repl.proc.pid)
    try:
        # Above the operator's ceiling, or no limit at all: refused naming the member.
        err = repl.error({"id": 1, "op": "open", "type": "shell", "limits": {"pids": 201}}, "INVALID_ARGUMENT")
        check("limits.pids" in err["message"], err)
        err = repl.error({"id": 2, "op": "open", "type": "shell", "limits": {"memory": 2 << 30}}, "INVALID_ARGUMENT")
        check("limits.memory" in err["message"], err)
        err = repl.error({"id": 3, "op": "open", "type": "shell", "limits": {"pidz": 3}}, "INVALID_ARGUMENT")
        check("limits.pidz" in err["message"], err)
        err = repl.error({"id": 4, "op": "open", "type": "shell", "limits": {"pids": 0}}, "INVALID_ARGUMENT")
        check("limits.pids" in err["message"], err)
        err = repl.error({"id": 5, "op": "open", "type": "shell", "limits": 64}, "INVALID_ARGUMENT")
        check('"limits"' in err["message"], err)
        check(not repl.ok({"id": 6, "op": "list"})["sessions"], "a refused open opened a session")

        r = repl.call({"id": 7, "op": "open", "type": "shell", "name": "capped", "limits": {"pids": 64}})
        if not r["ok"]:
            check(r["error"]["code"] == "BACKEND_FAILED", r)
            print(f"SKIP: no cgroup can be made here: {r['error']['message']}", flush=True)
            return SKIP
        capped = r["result"]
        repl.pids.append(capped["pid"])
        check("limitHit" not in capped, capped)
        check(cgroups.sessions() == 1, f"not one session cgroup under {cgroups.parents}")
        # The neighbour takes the operator's defaults: a cgroup of its own too.
        neighbour = repl.ok({"id": 8, "op": "open", "type": "shell", "name": "free"})
        repl.pids.append(neighbour["pid"])
        check(cgroups.sessions() == 2, f"not two session cgroups under {cgroups.parents}")

        storm = repl.ok({"id": 9, "op": "send", "sessionId": capped["sessionId"], "text": STORM,
                         "timeoutMs": 140000, "idleMs": 140000})
        check("fork: retry" in storm["viewport"] or "Resource temporarily unavailable" in storm["viewport"], storm)
        check(storm.get("limitHit") == {"kind": "pids"}, storm)
        alive = repl.ok({"id": 10, "op": "send", "sessionId": capped["sessionId"], "text": "echo alive-$((6*7))"})
        check("alive-42" in alive["viewport"] and alive.get("limitHit") == {"kind": "pids"}, alive)
        beside = repl.ok({"id": 11, "op": "send", "sessionId": neighbour["sessionId"], "text": "echo n-$((6*7))"})
        check("n-42" in beside["viewport"] and "limitHit" not in beside, beside)
        listed = {s["name"]: s for s in repl.ok({"id": 12, "op": "list"})["sessions"]}
        check(listed["capped"].get("limitHit") == {"kind": "pids"}, listed)
        check("limitHit" not in listed["free"], listed)

        repl.ok({"id": 13, "op": "close", "sessionId": capped["sessionId"]})
        check(cgroups.sessions() == 1, f"close left {cgroups.present()}")
        repl.ok({"id": 14, "op": "shutdown"})
        check(repl.wait_exit() == 0, "exit status")
        check(not cgroups.present(), f"shutdown left {cgroups.present()}")
        return 0
    except Exception:
        traceback.print_exc()  # shown before the cleanup's own check can mask it
        raise
    finally:
        repl.close()
        left = cgroups.remove_left()
        check(not left, f"session cgroups left behind: {left}")


def children_of(pid):
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            out += [int(c) for c in f.read().split()]
    return out


def writable_without_capabilities(directory):
    st = os.stat(directory)
    return bool(st.st_mode & 0o002 or (st.st_uid == os.geteuid() and st.st_mode & 0o200)
                or (st.st_gid == os.getegid() and st.st_mode & 0o020))


def test_host_killed(path, confined=False):
    # No close and no shutdown: the host dies by SIGKILL with two limited sessions, one busy
    # with background processes. Each helper sees its control socket close, kills its tree
    # and, with no host left to do it, removes the session's cgroups before it exits (a
    # confined session's helper too: it stays outside the sandbox).
    if confined and not shutil.which("bwrap"):
        print("SKIP (part): confined: bwrap is not installed", flush=True)
        return SKIP
    sandbox = ["--sandbox", "read-only"] if confined else []
    repl = JsonRepl(path, ["--limit-pids", "64", "--limit-memory", str(1 << 29), *sandbox])
    cgroups = SessionCgroups(repl.proc.pid)
    try:
        r = repl.call({"id": 1, "op": "open", "type": "shell", "name": "busy", "limits": {"pids": 20}})
        if not r["ok"]:
            print(f"SKIP: no cgroup can be made here: {r['error']['message']}", flush=True)
            return SKIP
        busy = r["result"]
        check(bool(busy.get("confinement")) == confined, busy)
        idle = repl.ok({"id": 2, "op": "open", "type": "shell", "name": "idle"})
        sent = repl.ok({"id": 3, "op": "send", "sessionId": busy["sessionId"],
                        "text": "for i in 1 2 3; do sleep 62 & done; echo started-$((6*7))"})
        check("started-42" in sent["viewport"], sent)
        check(cgroups.sessions() == 2, f"not two session cgroups under {cgroups.parents}")
        helpers = children_of(repl.proc.pid)
        check(len(helpers) == 2, f"not two helpers: {helpers}")
        repl.proc.kill()
        repl.proc.wait()
        wait_gone(helpers + repl.pids, "the helpers of a killed host")
        left = cgroups.present()
        if confined:
            # A confined helper has no capabilities: a parent only CAP_DAC_OVERRIDE may write
            # (a root host in a hierarchy's root cgroup, mode 0555) keeps its empty cgroup.
            kept = [c for c in left if not writable_without_capabilities(os.path.dirname(c))]
            for c in kept:
                with open(f"{c}/cgroup.procs") as f:
                    check(not f.read().split(), f"{c} is not empty")
                os.rmdir(c)
            if kept:
                print(f"SKIP (part): parents writable only with capabilities keep {kept}", flush=True)
            left = [c for c in left if c not in kept]
        check(not left, f"a killed host left {left}")
        return 0
    except Exception:
        traceback.print_exc()
        raise
    finally:
        repl.close()
        left = cgroups.remove_left()
        check(not left, f"session cgroups left behind: {left}")


def test_host_killed_confined(path):
    return test_host_killed(path, confined=True)


def test_tmpfs(path):
    # A confined session's /dev/shm is a tmpfs of its own, charged to its memory limit: a
    # write past the limit ends the session by the OOM killer (tmpfs pages cannot be given
    # back without swap), the send says why (session_exit, SIGKILL, limitHit memory), and
    # what it wrote is gone with its sandbox: nothing of it on the host, no process left.
    if not shutil.which("bwrap"):
        print("SKIP (part): tmpfs: bwrap is not installed", flush=True)
        return SKIP
    repl = JsonRepl(path, ["--sandbox", "read-only", "--limit-memory", str(1 << 30)])
    cgroups = SessionCgroups(repl.proc.pid)
    marker = "dshpty-shm-fill-" + os.urandom(4).hex()
    try:
        r = repl.call({"id": 1, "op": "open", "type": "shell", "name": "shm",
                       "limits": {"memory": 64 << 20}})
        if not r["ok"]:
            print(f"SKIP: no confined limited session here: {r['error']['message']}", flush=True)
            return SKIP
        shm = r["result"]
        check(shm.get("confinement"), shm)
        sent = repl.ok({"id": 2, "op": "send", "sessionId": shm["sessionId"], "timeoutMs": 120000,
                        "text": f"head -c {128 << 20} /dev/zero > /dev/shm/{marker}; echo rc=$?"})
        if "No space left on device" in sent["viewport"]:
            print("SKIP: the sandbox's tmpfs (a tenth of this machine's RAM) is below 128 MiB", flush=True)
            return SKIP
        killed = {"kind": "exited", "exitCode": None, "signal": "SIGKILL"}
        check(sent["waitReason"] == "session_exit" and sent["sessionStatus"] == killed, sent)
        check(sent.get("limitHit") == {"kind": "memory"}, sent)
        listed = {s["name"]: s for s in repl.ok({"id": 3, "op": "list"})["sessions"]}
        check(listed["shm"]["status"] == killed and listed["shm"].get("limitHit") == {"kind": "memory"}, listed)
        left = [n for n in os.listdir("/dev/shm") if n.startswith(marker)]
        check(not left, f"the session's file is in the host's /dev/shm: {left}")
        wait_gone(repl.pids, "the session's processes")
        repl.ok({"id": 4, "op": "shutdown"})
        check(repl.wait_exit() == 0, "exit status")
        check(not cgroups.present(), f"shutdown left {cgroups.present()}")
        return 0
    except Exception:
        traceback.print_exc()
        raise
    finally:
        repl.close()
        for name in os.listdir("/dev/shm"):
            if name.startswith(marker):
                os.unlink(f"/dev/shm/{name}")
        left = cgroups.remove_left()
        check(not left, f"session cgroups left behind: {left}")


def test_leftovers_swept(path):
    # What a host killed between making a session cgroup and spawning its helper left (empty,
    # locked by nobody, perhaps holding a nested host's own leftover) goes at the next host's
    # first limited open in that parent; a directory some live session holds (flocked)
    # stays, and so does one with a process in it.
    own = SessionCgroups(os.getpid()).parents
    pids_parents = [p for p in own if "/pids" in p or os.path.exists(f"{p}/cgroup.controllers")]
    if not pids_parents:
        print("SKIP: no pids hierarchy here", flush=True)
        return SKIP
    parent, tag = pids_parents[0], os.urandom(4).hex()
    made = {kind: f"{parent}/dshpty-1-{kind}{tag}" for kind in ("leftover", "locked", "busy")}
    # A nested host's leftover inside an outer one (dshpty run inside a limited session).
    made["nested"] = f"{made['leftover']}/dshpty-2-nested{tag}"
    try:
        for d in made.values():
            os.mkdir(d)
    except OSError as e:
        for d in reversed(made.values()):
            if os.path.isdir(d):
                os.rmdir(d)
        print(f"SKIP: no cgroup can be made in {parent}: {e}", flush=True)
        return SKIP
    held = os.open(made["locked"], os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    sleeper = subprocess.Popen(["sleep", "300"])
    repl = None
    try:
        with open(f"{made['busy']}/cgroup.procs", "w") as f:
            f.write(str(sleeper.pid))
        repl = JsonRepl(path, ["--limit-pids", "64"])
        r = repl.call({"id": 1, "op": "open", "type": "shell", "name": "sweeper", "limits": {"pids": 20}})
        if not r["ok"]:
            print(f"SKIP: no cgroup can be made here: {r['error']['message']}", flush=True)
            return SKIP
        check(not os.path.exists(made["leftover"]), f"{made['leftover']} (and the one nested in it) was not swept")
        check(os.path.isdir(made["locked"]), "a locked session cgroup was removed")
        check(os.path.isdir(made["busy"]), "a session cgroup with a process in it was removed")
        repl.ok({"id": 2, "op": "close", "sessionId": r["result"]["sessionId"]})
        return 0
    finally:
        if repl:
            repl.close()
        os.close(held)
        sleeper.kill()
        sleeper.wait()
        for d in reversed(made.values()):
            remove_dir(d)


def test_helper_killed(path):
    # The session's helper dies by SIGKILL (an OOM kill, a stray kill) while a job of the
    # session ignores the hang-up: nothing proves the tree gone through the helper any more,
    # but the session's cgroup still holds the job. The session is lost, and its close ends
    # what the cgroup holds, removes it and answers ok (adversary round 6 F6: the job and
    # its cgroup outlived the close, which answered BACKEND_FAILED).
    tmp = tempfile.mkdtemp(prefix="dshpty-limits-helper-")
    repl = JsonRepl(path, ["--limit-pids", "64"], tmpdir=tmp)
    cgroups = SessionCgroups(repl.proc.pid)
    job = []
    try:
        r = repl.call({"id": 1, "op": "open", "type": "shell", "name": "orphaned", "limits": {"pids": 16}})
        if not r["ok"]:
            print(f"SKIP: no cgroup can be made here: {r['error']['message']}", flush=True)
            return SKIP
        session = r["result"]["sessionId"]
        sent = repl.ok({"id": 2, "op": "send", "sessionId": session,
                        "text": "nohup sleep 300 >/dev/null 2>&1 & echo job-$!"})
        job = [int(sent["viewport"].split("job-")[-1].split()[0])]
        [helper] = children_of(repl.proc.pid)
        os.kill(helper, signal.SIGKILL)
        wait_gone([helper], "the killed helper")
        listed = repl.ok({"id": 3, "op": "list"})["sessions"]
        # The shell had the hang-up; the job ignores it and still runs, in the cgroup.
        check(repl_harness.pid_alive(job[0]), "the job did not outlive its helper: nothing left for the close to end")
        check(any(str(job[0]) in open(f"{c}/cgroup.procs").read().split() for c in cgroups.present()),
              f"the job is not in its session cgroup {cgroups.present()}")
        check(listed[0]["status"]["kind"] == "lost", listed)
        closed = repl.call({"id": 4, "op": "close", "sessionId": session})
        check(closed["ok"], closed)
        wait_gone(job, "the lost session's job after its close")
        check(not cgroups.present(), f"the close left {cgroups.present()}")
        return 0
    except Exception:
        traceback.print_exc()
        raise
    finally:
        repl.close()
        repl_harness.kill_quietly(job)
        shutil.rmtree(tmp, ignore_errors=True)
        left = cgroups.remove_left()
        check(not left, f"session cgroups left behind: {left}")


def test_text(path):
    # The text face: the open flag, the send's and the list's [limit: pids].
    out = run_text_script(path, "open shell capped --limit-pids 64\nsend capped --timeout 140000 --idle 140000 " + STORM + "\nlist\n")
    if "BACKEND_FAILED" in out:
        print("SKIP: no cgroup can be made here", flush=True)
        return SKIP
    check(out.count("[limit: pids]") == 2, out)
    check("pty-1 (capped) [shell] running" in out and "[limit: pids]\n" in out.split("pty-1 (capped)")[1], out)
    return 0


if __name__ == "__main__":
    path = sys.argv[1]
    results = []
    for test in (test_json, test_host_killed, test_host_killed_confined, test_helper_killed, test_leftovers_swept,
                 test_tmpfs, test_text):
        print(f"--- {test.__name__}", flush=True)
        results.append(test(path))
    if all(r == SKIP for r in results):
        raise SystemExit(SKIP)
    print("ok")
