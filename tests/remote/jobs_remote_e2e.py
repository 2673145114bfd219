"""Background jobs on a remote session (docs/remote.md, "Jobs"), end to end through the real
dshpty-repl --json with `--remote NAME=COMMAND`:

  ssh   over a private sshd on 127.0.0.1 (sshd_fixture.py) to this build's
        `dshpty-supervisor --stdio`: a background server that leaves the job's tree (setsid,
        double fork) waited for with `until: {port}` answers matched with its port and pid;
        `list` shows the job and its listener; its output reads by offset; `stop` ends it with
        proof (SIGINT first, nothing remaining, the port freed) and the session's next send
        works; a job that ignores SIGINT and SIGTERM is stopped by SIGKILL; a running job's
        own `&` is stopped with it and an `&` typed just before it is not, and so is an ended
        job's while nothing was typed since its end; on a lingering
        session, the ssh client killed mid-stop: the stop answers at once that the job's end
        is unconfirmed (never a hang), and after the reconnect the job is gone and the
        session's next send works;
  old   tests/remote/fake_far.py, a far side without the jobs capability: until.port is
        BACKEND_FAILED naming the far side's build, before anything is typed, and list has no
        listeners to show (no hang).

Usage: jobs_remote_e2e.py REPL SUPERVISOR ssh|old

Loopback only; every wait has a deadline; what a case starts is gone when it ends. No sshd
here: a skip (77) with the reason."""

import os
import re
import shlex
import socket
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "repl"))

from repl_harness import JsonRepl, check, kill_quietly, pid_alive, wait_gone  # noqa: E402
from sshd_fixture import Skip, SshServer, skip  # noqa: E402

REPL_ARGS = ["--idle-ms", "20000", "--timeout-ms", "60000"]
WAIT_S = 30.0
SERVER = "python3 -m http.server {port} --bind 127.0.0.1 >/dev/null 2>&1"
# The server leaves the job's tree: a subshell starts it in a session of its own and exits,
# while the job's own command waits.
DAEMON = "sh -c '(setsid {server} &); exec sleep 1000'"
# A job that ignores SIGINT and SIGTERM (only SIGKILL ends it), and says so first.
STUBBORN = "sh -c 'trap \"\" INT TERM; echo stubborn-ready; while :; do sleep 1; done'"
# The same, saying when the stop's SIGINT reached it (its loop goes on).
TELLING = "sh -c 'trap \"echo got-int\" INT; trap \"\" TERM; echo stubborn-ready; while :; do sleep 1; done'"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listens(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            return True
    except OSError:
        return False


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def session_of(repl, rid, sid):
    return {x["sessionId"]: x for x in repl.ok({"id": rid, "op": "list"})["sessions"]}[sid]


def list_until(repl, rid, sid, condition, what):
    """A remote list shows the tree as the far side last answered (each list asks again):
    lists until `condition(activity)` holds, within WAIT_S."""
    deadline = time.monotonic() + WAIT_S
    n = 0
    while True:
        n += 1
        listed = session_of(repl, f"{rid}-{n}", sid)
        if condition(listed.get("activity", {})):
            return listed
        check(time.monotonic() < deadline, f"{what}: {listed}")


def look(repl, rid, sid, text):
    out = repl.ok({"id": rid, "op": "send", "sessionId": sid, "text": text, "idleMs": 20000, "timeoutMs": 60000})
    check(out["waitReason"] == "stdin_read", out)
    return out


def read_all(repl, job, rid, offset=0):
    """Reads a job by offset until it is done: (text, final answer)."""
    text, n = "", 0
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        n += 1
        out = repl.ok({"id": f"{rid}-{n}", "op": "output", "sendId": job, "offset": offset, "waitMs": 20000})
        check(out["nextOffset"] >= offset, out)
        text += out["delta"]
        offset = out["nextOffset"]
        if out["done"] and out["delta"] == "":
            return text, out
    check(False, f"job {job} did not end: {out}")


def server_job(repl, sid, cleanup):
    port = free_port()
    sent = repl.ok({"id": "srv", "op": "send", "sessionId": sid, "background": True, "timeoutMs": 60000,
                    "text": DAEMON.format(server=SERVER.format(port=port)), "until": {"port": port}})
    check(sent["waitReason"] == "matched" and sent["match"]["port"] == port, sent)
    check(sent["match"]["address"] == "127.0.0.1", sent)
    server = sent["match"]["pid"]
    cleanup.append(server)
    # Over loopback the far machine is this one: its pid is a real python3 listening there.
    check(comm(server).startswith("python3"), f"pid {server} is {comm(server)!r}, not the server")
    check(listens(port), f"port {port} does not listen at the match")

    # A look was asked when the port opened, and the match told after its answer: the list
    # right after the match is current (docs/remote.md, "Jobs").
    listed = session_of(repl, "list", sid)
    activity = listed["activity"]
    check(activity["state"] == "busy" and activity["job"]["sendId"] == "srv", listed)
    check({"port": port, "address": "127.0.0.1", "pid": server, "command": "python3"} in activity["listening"], listed)
    check(activity["job"]["processes"] >= 2, listed)  # the job's sleep and the adopted server

    # Its output by offset while it runs: nothing yet, not done.
    out = repl.ok({"id": "srv-out", "op": "output", "sendId": "srv", "offset": 0})
    check(out["done"] is False and out["nextOffset"] >= 0, out)

    stop = repl.ok({"id": "srv-stop", "op": "stop", "sendId": "srv"})
    check(stop["stopped"] is True and stop["remaining"] == [] and stop["signals"][:1] == ["SIGINT"], stop)
    check(not pid_alive(server), f"server {server} survived the stop")
    check(not listens(port), f"port {port} still listens after the stop")
    done = repl.ok({"id": "srv-done", "op": "output", "sendId": "srv"})
    check(done["done"] is True and done["result"]["waitReason"] == "stdin_read", done)
    list_until(repl, "list-after", sid, lambda a: a.get("state") == "prompt" and
               all(x["port"] != port for x in a.get("listening", [])), "list after the stop")
    after = look(repl, "after-stop", sid, "echo next-send-$((40+2))")
    check("next-send-42" in after["viewport"], after)


def output_by_offset(repl, sid):
    repl.ok({"id": "lines", "op": "send", "sessionId": sid, "background": True,
             "text": "for i in 1 2 3; do echo line-$i; sleep 0.1; done"})
    text, final = read_all(repl, "lines", "lines-read")
    check(all(f"line-{i}" in text for i in (1, 2, 3)), text)
    check(final["result"]["waitReason"] == "stdin_read", final)
    # A second reader from the start reads the same text.
    again, _ = read_all(repl, "lines", "lines-again")
    check(again == text, (again, text))


def stubborn_job(repl, sid):
    repl.ok({"id": "stub", "op": "send", "sessionId": sid, "background": True, "timeoutMs": 60000,
             "text": STUBBORN, "until": {"output": "^stubborn-ready$"}})
    stop = repl.ok({"id": "stub-stop", "op": "stop", "sendId": "stub"})
    check(stop["stopped"] is True and stop["signals"] == ["SIGINT", "SIGTERM", "SIGKILL"], stop)
    look(repl, "after-stub", sid, "echo alive")


def running(argv):
    """The pids whose command line is exactly `argv` (this machine is the far side too)."""
    want, out = "\0".join(argv) + "\0", []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline") as f:
                    if f.read() == want:
                        out.append(int(entry))
            except OSError:
                pass
    return out


def own_background(repl, sid, cleanup):
    """A running job's own `&` goes with its stop; an `&` typed just before the job (the same
    second, likely the same tick) stays: the far side knows the job's start from where its
    line begins in the input (STOP's input_at), not from "so long ago"."""
    tag = 7000 + int.from_bytes(os.urandom(2), "little") % 900
    earlier, own, job = (["sleep", str(tag + k)] for k in (0, 1, 2))
    look(repl, "earlier", sid, f"{' '.join(earlier)} &")
    repl.ok({"id": "own", "op": "send", "sessionId": sid, "background": True, "timeoutMs": 60000,
             "text": f"{' '.join(own)} & sh -c 'echo own-ready; exec {' '.join(job)}'",
             "until": {"output": "^own-ready$"}})
    # The match is sh's echo, before its exec: the job's sleep is waited for.
    deadline = time.monotonic() + WAIT_S
    while True:
        before = {name: running(argv) for name, argv in (("earlier", earlier), ("own", own), ("job", job))}
        if all(len(p) == 1 for p in before.values()):
            break
        check(time.monotonic() < deadline, before)
    cleanup.extend(before["earlier"])
    stop = repl.ok({"id": "own-stop", "op": "stop", "sendId": "own"})
    check(stop["stopped"] is True and stop["signals"][:1] == ["SIGINT"], stop)
    wait_gone(before["own"] + before["job"], "the job and its own `&`")
    check(running(earlier) == before["earlier"], "the earlier `&` was stopped with the job")
    look(repl, "after-own", sid, "kill %1; wait; echo after-own")
    wait_gone(before["earlier"], "the earlier `&` after kill %1")


def ended_own_background(repl, sid, cleanup):
    """An ended job's own `&` goes with a stop of it while nothing was typed to the session
    since its end (no later command can have started anything): the far side looks as for a
    running job. An `&` typed just before the job stays."""
    tag = 8000 + int.from_bytes(os.urandom(2), "little") % 900
    earlier, own = (["sleep", str(tag + k)] for k in (0, 1))
    look(repl, "earlier-e", sid, f"{' '.join(earlier)} &")
    repl.ok({"id": "ended", "op": "send", "sessionId": sid, "background": True, "timeoutMs": 60000,
             "text": f"{' '.join(own)} & echo ended-$((6*7))"})
    text, _ = read_all(repl, "ended", "ended-read")
    check("ended-42" in text, text)
    before = {name: running(argv) for name, argv in (("earlier", earlier), ("own", own))}
    check(all(len(p) == 1 for p in before.values()), before)
    cleanup.extend(before["earlier"] + before["own"])
    stop = repl.ok({"id": "ended-stop", "op": "stop", "sendId": "ended"})
    check(stop["stopped"] is True and stop["signals"][:1] == ["SIGINT"], stop)
    wait_gone(before["own"], "the ended job's own `&`")
    check(running(earlier) == before["earlier"], "the earlier `&` was stopped with the ended job")
    look(repl, "after-ended", sid, "kill %1; wait; echo after-ended")
    wait_gone(before["earlier"], "the earlier `&` after kill %1")


def own_amp_at_once(repl, sid, cleanup):
    """A stop right after the ack of `sleep N & wait $!` (the far shell runs the line itself):
    once it answers `stopped`, the sleep is gone and does not start after."""
    for n in range(6):
        argv = ["sleep", str(9000 + int.from_bytes(os.urandom(2), "little") % 900)]
        repl.ok({"id": f"amp-once-{n}", "op": "send", "sessionId": sid, "background": True,
                 "text": f"{' '.join(argv)} & wait $!"})
        stop = repl.ok({"id": f"amp-once-{n}-stop", "op": "stop", "sendId": f"amp-once-{n}"})
        check(stop["stopped"] is True and stop["remaining"] == [], stop)
        left = running(argv)
        cleanup.extend(left)
        check(not left, f"round {n}: the line's `&` still runs after {stop}")
        read_all(repl, f"amp-once-{n}", f"amp-once-{n}-read")
        left = running(argv)
        cleanup.extend(left)
        check(not left, f"round {n}: the line's `&` started after {stop}")
    look(repl, "amp-once-after", sid, "echo fine")


def children_named(root, name):
    out, todo = [], [root]
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents.setdefault(int(f.read().rsplit(")", 1)[1].split()[1]), []).append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    while todo:
        for child in parents.get(todo.pop(), []):
            todo.append(child)
            if comm(child) == name:
                out.append(child)
    return out


def cut_mid_stop(repl_path, server, supervisor, cleanup):
    """A lingering session's link cut while a stop runs (the job ignores INT and TERM, so the
    far stop takes two seconds at least): the stop's answer says the end is unconfirmed."""
    with tempfile.TemporaryDirectory(prefix="dshpty-remote-jobs-cut-") as tmp:
        far_dir, host_dir = os.path.join(tmp, "far"), os.path.join(tmp, "host")
        os.makedirs(far_dir, mode=0o700)
        os.makedirs(host_dir, mode=0o700)
        argv = server.ssh_argv([shlex.quote(supervisor), "--stdio", "--state-dir", far_dir])
        transport = " ".join(shlex.quote(w) for w in argv)
        repl = JsonRepl(repl_path, [*REPL_ARGS, "--remote", f"ssh={transport}", "--state-dir", host_dir])
        try:
            sid = repl.ok({"id": "open", "op": "open", "type": "ssh", "name": "cut", "linger": 60})["sessionId"]
            repl.ok({"id": "stub", "op": "send", "sessionId": sid, "background": True, "timeoutMs": 60000,
                     "text": TELLING, "until": {"output": "^stubborn-ready$"}})
            repl.request({"id": "stub-stop", "op": "stop", "sendId": "stub"})
            # The cut comes once the far side has the stop (its SIGINT was taken): cut while the
            # request was still in ssh's buffers, the far side never had it and the job ran on
            # (seen under load: 'job stub did not end', or the stop refused with the link down).
            # The trap's own line, not the echo of the typed command, which holds "got-int" too
            # (the job's output starts with it: waiting for the word alone cut at once).
            seen, offset, n = "", 0, 0
            while not re.search(r"(?m)^got-int\r?$", seen):
                n += 1
                out = repl.ok({"id": f"stub-int-{n}", "op": "output", "sendId": "stub", "offset": offset,
                               "waitMs": 20000})
                check(not out["done"], f"the job ended before the cut: {out}")
                seen, offset = seen + out["delta"], out["nextOffset"]
            clients = children_named(repl.proc.pid, "ssh")
            check(len(clients) == 1, f"one ssh client: {clients}")
            os.kill(clients[0], 9)
            stop = repl.response("stub-stop")
            check(stop.get("ok") is True, stop)
            stop = stop["result"]
            check(stop["stopped"] is False and "link to the far side went" in stop["remaining"][0]["why"], stop)
            deadline = time.monotonic() + WAIT_S
            while session_of(repl, f"st-{time.monotonic()}", sid)["status"]["kind"] != "running":
                check(time.monotonic() < deadline, "no reconnect")
            # The far side went on with the stop: the job ends, its send settles at the prompt.
            done, _ = read_all(repl, "stub", "stub-read")
            again = repl.ok({"id": "stub-stop-2", "op": "stop", "sendId": "stub"})
            check(again["stopped"] is True, again)
            look(repl, "after-cut", sid, "echo after-cut")
            repl.ok({"id": "close", "op": "close", "sessionId": sid})
            repl.request({"id": "bye", "op": "shutdown"})
            check(repl.wait_exit() == 0, "shutdown")
        finally:
            repl.close()


def run_ssh(repl_path, supervisor):
    try:
        server = SshServer().start()
    except Skip as why:
        skip(str(why))
    cleanup = []
    try:
        transport = " ".join(shlex.quote(w) for w in server.ssh_argv([shlex.quote(supervisor), "--stdio"]))
        with tempfile.TemporaryDirectory(prefix="dshpty-remote-jobs-") as home:
            os.environ["HOME"] = home
            repl = JsonRepl(repl_path, [*REPL_ARGS, "--remote", f"ssh={transport}"])
            try:
                opened = repl.ok({"id": "open", "op": "open", "type": "ssh", "name": "main"})
                sid = opened["sessionId"]
                for title, case in (("a server by port, list, stop", lambda: server_job(repl, sid, cleanup)),
                                    ("output by offset", lambda: output_by_offset(repl, sid)),
                                    ("a job that ignores INT and TERM", lambda: stubborn_job(repl, sid)),
                                    ("a running job's own `&`, not an earlier one", lambda: own_background(repl, sid, cleanup)),
                                    ("an ended job's own `&`, nothing typed since", lambda: ended_own_background(repl, sid, cleanup)),
                                    ("`sleep N & wait $!` stopped at once", lambda: own_amp_at_once(repl, sid, cleanup)),
                                    ("the link cut mid-stop", lambda: cut_mid_stop(repl_path, server, supervisor, cleanup))):
                    print(f"--- {title}", flush=True)
                    case()
                repl.request({"id": "bye", "op": "shutdown"})
                check(repl.wait_exit() == 0, "shutdown")
                wait_gone(cleanup, "the server after shutdown")
            finally:
                repl.close()
    finally:
        kill_quietly(cleanup)
        server.stop()


def run_old(repl_path):
    """A far side from before the jobs frames (fake_far.py's WELCOME has no capability)."""
    workdir = tempfile.mkdtemp(prefix="dshpty-remote-jobs-old-")
    pidfile = os.path.join(workdir, "pid")
    command = " ".join(shlex.quote(w) for w in
                       [sys.executable, os.path.join(HERE, "fake_far.py"), pidfile, "prompt-then-mute"])
    repl = JsonRepl(repl_path, [*REPL_ARGS, "--remote", f"old={command}"])
    try:
        sid = repl.ok({"id": "open", "op": "open", "type": "old", "name": "m"})["sessionId"]
        repl.pids = []  # the fake's pid is no process of ours to kill
        error = repl.error({"id": "port", "op": "send", "sessionId": sid, "text": "true", "until": {"port": 8000}},
                           "BACKEND_FAILED")
        check("until.port" in error["message"] and "(fake)" in error["message"], error)
        listed = session_of(repl, "list", sid)
        check(listed.get("activity", {}).get("listening", []) == [], listed)
        repl.call({"id": "bye", "op": "shutdown"})
        repl.wait_exit()
    finally:
        repl.close()
        try:
            with open(pidfile) as f:
                kill_quietly([int(f.read())])
        except (OSError, ValueError):
            pass
        for name in os.listdir(workdir):
            os.unlink(os.path.join(workdir, name))
        os.rmdir(workdir)


def main():
    if len(sys.argv) < 4 or sys.argv[3] not in ("ssh", "old"):
        print(__doc__, file=sys.stderr)
        return 2
    repl_path, supervisor = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    if sys.argv[3] == "ssh":
        run_ssh(repl_path, supervisor)
    else:
        run_old(repl_path)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
