"""Remote sessions end to end over real transports (docs: include/dshpty/remote.hpp): the
real dshpty-repl --json with `--remote NAME=COMMAND`, whose COMMAND reaches this build's
`dshpty-supervisor --stdio` through

  ssh    a private sshd on 127.0.0.1 (sshd_fixture.py): the core cases, then the link's
         deaths (the ssh client killed, sshd killed, the far helper stopped), a bad port,
         a missing helper and a `yes` flood;
  sh     `sh -c 'exec SUPERVISOR --stdio'`: the core cases, a missing helper, the text face,
         dshpty-mcp's terminal_open with a remote type, and bad --remote options;
  bwrap  `bwrap --dev-bind / / --die-with-parent SUPERVISOR --stdio`: the core cases;
  lost   tests/remote/fake_far.py, a far side that goes mute after its prompt: how each face
         (JSON, text, MCP) shows a lost session.

Usage: remote_e2e.py REPL SUPERVISOR ssh|sh|bwrap|lost [MCP]

Loopback only. Every wait has a deadline; every process and temp dir a case starts is gone
when it ends, failed or not. A missing tool (sshd, bwrap) is a skip (77) with the reason."""

import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "repl"))
sys.path.insert(0, os.path.join(HERE, "..", "mcp"))

from repl_harness import JsonRepl, check, fail, kill_quietly, pid_alive  # noqa: E402
from sshd_fixture import Skip, SshServer, skip  # noqa: E402

# A send waits for the far prompt, a round trip away: no inferred_idle before that.
REPL_ARGS = ["--idle-ms", "20000", "--timeout-ms", "60000"]
GONE_BOUND_S = 2.0       # the far tree after the link's death (remote.md)
MEMORY_BOUND = 64 << 20  # RSS during a flood
WAIT_S = 30.0            # any other bounded wait

SUPERVISOR = None        # this build's helper, absolute
TOKEN = f"{os.getpid() % 10000}{random.randrange(100, 1000)}"
_marker_count = 0


# -- /proc -------------------------------------------------------------------------------

def _stat_fields(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def _argv(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [w.decode(errors="replace") for w in f.read().split(b"\0")[:-1]]
    except OSError:
        return []


def _all_pids():
    return [int(e) for e in os.listdir("/proc") if e.isdigit()]


def descendants(pid):
    """The live processes below `pid`, parents before children."""
    children = {}
    for p in _all_pids():
        try:
            fields = _stat_fields(p)
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(p)
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def far_helpers(root):
    """The `dshpty-supervisor --stdio` processes below `root` (the REPL for sh and bwrap,
    sshd's listener for ssh): each remote session's far helper."""
    return [p for p in descendants(root)
            if (a := _argv(p)) and os.path.basename(a[0]) == "dshpty-supervisor" and "--stdio" in a]


def children_named(root, name):
    return [p for p in descendants(root) if (a := _argv(p)) and os.path.basename(a[0]) == name]


def rss(pid):
    """Resident memory in bytes, 0 when gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def new_marker():
    """A number no other process has as its `sleep` argument: a process to find by name."""
    global _marker_count
    _marker_count += 1
    return f"9{TOKEN}{_marker_count:02d}"


def marker_pids(marker):
    return [p for p in _all_pids() if _argv(p) == ["sleep", marker] and pid_alive(p)]


def wait_until(condition, what, bound=WAIT_S):
    """Polls `condition` until it is true; the seconds it took. Fails past `bound`."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > bound:
            fail(f"{what}: not within {bound} s")
        time.sleep(0.02)  # polling a condition with a deadline, not waiting out a race
    return time.monotonic() - start


def alive(pids):
    return [p for p in pids if pid_alive(p)]


# -- pieces of the cases -------------------------------------------------------------------

class Cleanup:
    """What a case must not leave behind when it fails: processes by pid or marker. A case
    that passed proved them gone and calls passed(), so no recycled pid is ever signalled."""

    def __init__(self):
        self.pids = []
        self.markers = []
        self.stopped = []

    def passed(self):
        self.pids, self.markers, self.stopped = [], [], []

    def run(self):
        for pid in self.stopped:
            try:
                os.kill(pid, signal.SIGCONT)
            except (ProcessLookupError, PermissionError):
                pass
        for marker in self.markers:
            kill_quietly(marker_pids(marker))
        kill_quietly(self.pids)


def transport_word(argv):
    """argv as one --remote COMMAND: each word quoted as a shell would need it."""
    return " ".join(shlex.quote(w) for w in argv)


def start_repl(name, argv, extra=()):
    return JsonRepl(REPL, [*REPL_ARGS, "--remote", f"{name}={transport_word(argv)}", *extra])


class Ids:
    def __init__(self):
        self.n = 0

    def __call__(self):
        self.n += 1
        return self.n


def send(repl, ids, session, text, **fields):
    return repl.ok({"id": ids(), "op": "send", "sessionId": session, "text": text, **fields})


def status_of(repl, ids, session):
    for s in repl.ok({"id": ids(), "op": "list"})["sessions"]:
        if s["sessionId"] == session:
            return s["status"]
    return None


def open_remote(repl, ids, name, session_name="main"):
    opened = repl.ok({"id": ids(), "op": "open", "type": name, "name": session_name})
    check(opened["type"] == name and opened["status"] == {"kind": "running"}, f"open: {opened}")
    check(opened.get("name") == session_name, f"open: {opened}")
    return opened


def escape_line(markers):
    """Background jobs that try to outlive the session: a plain job, one in a new session,
    one ignoring SIGHUP."""
    m1, m2, m3 = markers
    return (f"sleep {m1} & setsid sleep {m2} & nohup sleep {m3} >/dev/null 2>&1 & "
            f"echo started-escapes")


def plant_escapes(repl, ids, session, cleanup):
    markers = [new_marker() for _ in range(3)]
    cleanup.markers += markers
    r = send(repl, ids, session, escape_line(markers))
    check(r["waitReason"] == "stdin_read" and "started-escapes" in r["viewport"], f"escapes: {r}")
    wait_until(lambda: all(marker_pids(m) for m in markers), "the escapes running")
    return markers


def check_lost(status, what):
    check(status is not None and status["kind"] == "lost", f"{what}: status {status}")
    check(isinstance(status.get("reason"), str) and status["reason"].strip(), f"{what}: a lost without words: {status}")


def finish(repl, ids, allow_failed_teardown=False):
    """Shutdown and exit; after a lost session the teardown may report the unproven end
    (exit 1), which is honest, not a failure of ours."""
    r = repl.call({"id": ids(), "op": "shutdown"})
    code = repl.wait_exit()
    if allow_failed_teardown:
        check(code in (0, 1), f"exit status {code} after {r}")
    else:
        check(r.get("ok") is True and code == 0, f"shutdown: {r}, exit {code}")


# -- the core cases (every transport) ---------------------------------------------------

def core_cases(name, argv, helper_root):
    """open, stdin_read for `read` and python's input(), exit statuses, cwd, every escape
    gone at close; `helper_root` is where the far helper hangs (None: the REPL)."""
    cleanup = Cleanup()
    repl = start_repl(name, argv)
    ids = Ids()
    try:
        root = helper_root or repl.proc.pid
        opened = open_remote(repl, ids, name)
        session = opened["sessionId"]
        helpers = far_helpers(root)
        check(len(helpers) == 1, f"one far helper below {root}: {helpers}")
        cleanup.pids += helpers

        r = send(repl, ids, session, "read x")
        check(r["waitReason"] == "stdin_read" and r["exitCode"] is None, f"read x: {r}")
        r = send(repl, ids, session, "typed-answer")
        check(r["waitReason"] == "stdin_read", f"the answer: {r}")
        r = send(repl, ids, session, 'echo "x=$x"')
        check("x=typed-answer" in r["viewport"] and r["exitCode"] == 0, f"x: {r}")

        r = send(repl, ids, session, """python3 -c 'print("got", input("name? "))'""")
        check(r["waitReason"] == "stdin_read" and "name? " in r["viewport"], f"input(): {r}")
        check(r["exitCode"] is None, f"input() is not the prompt: {r}")
        r = send(repl, ids, session, "dshpty")
        check(r["waitReason"] == "stdin_read" and "got dshpty" in r["viewport"] and r["exitCode"] == 0,
              f"after input(): {r}")

        r = send(repl, ids, session, "echo hi")
        check(r["waitReason"] == "stdin_read" and "hi" in r["viewport"] and r["exitCode"] == 0, f"echo: {r}")
        check(r["sessionStatus"] == {"kind": "running"}, f"echo: {r}")
        r = send(repl, ids, session, "false")
        check(r["exitCode"] == 1, f"false: {r}")
        r = send(repl, ids, session, "cd /tmp")
        check(r["exitCode"] == 0 and r["cwd"] == "/tmp", f"cd: {r}")

        listed = repl.ok({"id": ids(), "op": "list"})["sessions"]
        check(len(listed) == 1 and listed[0]["type"] == name and listed[0]["status"] == {"kind": "running"},
              f"list: {listed}")

        markers = plant_escapes(repl, ids, session, cleanup)
        tree = [helpers[0]] + descendants(helpers[0])
        # The far helpers themselves (the --stdio face and the local face it runs) may exit
        # just after the proof; everything else is the session's tree.
        session_tree = [p for p in tree if os.path.basename((_argv(p) or [""])[0]) != "dshpty-supervisor"]
        closed = repl.ok({"id": ids(), "op": "close", "sessionId": session})
        check(closed == {"outcome": "closed"}, f"close: {closed}")
        # The close succeeded: the far helper proved the tree gone. Nothing of it runs now.
        left = [m for m in markers if marker_pids(m)]
        check(not left, f"escapes alive after a successful close: {left}")
        check(not alive(session_tree), f"the far tree after close: {alive(session_tree)}")
        wait_until(lambda: not alive(tree), "the far helpers' exit after close", GONE_BOUND_S)
        repl.error({"id": ids(), "op": "send", "sessionId": session, "text": "true"}, "NO_SESSION")

        # A second session, left open: shutdown ends it too.
        second = open_remote(repl, ids, name, "second")
        r = send(repl, ids, second["sessionId"], "echo second-$((6*7))")
        check("second-42" in r["viewport"], f"second: {r}")
        helpers2 = far_helpers(root)
        cleanup.pids += helpers2
        finish(repl, ids)
        wait_until(lambda: not alive(helpers2), "the far helper after shutdown", GONE_BOUND_S)
        cleanup.passed()
    finally:
        repl.close()
        cleanup.run()


def missing_helper(name, argv):
    """The transport runs, the far helper does not exist: the open fails in its words."""
    repl = start_repl(name, argv)
    ids = Ids()
    try:
        error = repl.error({"id": ids(), "op": "open", "type": name}, "BACKEND_FAILED")
        check("No such file" in error["message"] or "not found" in error["message"], f"missing helper: {error}")
        wait_until(lambda: not children_named(repl.proc.pid, os.path.basename(argv[0])),
                   "the transport's exit after a failed open", GONE_BOUND_S)
        check(repl.ok({"id": ids(), "op": "list"})["sessions"] == [], "no session after a failed open")
        finish(repl, ids)
    finally:
        repl.close()


# -- ssh: the link's deaths, a bad port, a flood ------------------------------------------

def ssh_transport(server, helper=None):
    return server.ssh_argv([shlex.quote(helper or SUPERVISOR), "--stdio"])


def link_death(server, what, fault, bound=GONE_BOUND_S, extra=()):
    """Opens a session over `server` with an escape and a live send, runs `fault(ctx)`,
    then: the send completes session_exit, the status turns lost, the far tree is gone
    within `bound` (after `ctx['after']()` when the fault set it, e.g. SIGCONT)."""
    cleanup = Cleanup()
    repl = start_repl("ssh", ssh_transport(server), extra)
    ids = Ids()
    try:
        session = open_remote(repl, ids, "ssh")["sessionId"]
        helpers = far_helpers(server.proc.pid)
        check(len(helpers) == 1, f"one far helper: {helpers}")
        cleanup.pids += helpers
        markers = plant_escapes(repl, ids, session, cleanup)
        tree = [helpers[0]] + descendants(helpers[0])
        cleanup.pids += tree

        live_marker = new_marker()
        cleanup.markers.append(live_marker)
        live = ids()
        repl.request({"id": live, "op": "send", "sessionId": session, "text": f"sleep {live_marker}"})
        wait_until(lambda: marker_pids(live_marker), "the live send's job running")
        tree = [helpers[0]] + descendants(helpers[0])
        cleanup.pids += tree

        ctx = {"repl": repl, "helper": helpers[0], "cleanup": cleanup}
        started = time.monotonic()
        fault(ctx)

        r = repl.response(live)
        check(r.get("ok") is True and r["result"]["waitReason"] == "session_exit", f"{what}: the live send: {r}")
        check_lost(r["result"]["sessionStatus"], f"{what}: the live send")
        lost_after = time.monotonic() - started
        check_lost(status_of(repl, ids, session), f"{what}: list")
        print(f"{what}: lost after {lost_after:.2f} s: {r['result']['sessionStatus']['reason']!r}", flush=True)

        # The bound runs from the fault (from SIGCONT for a stopped helper, which can do
        # nothing before).
        if "after" in ctx:
            ctx["after"]()
            started = time.monotonic()
        tree_gone = lambda: not alive(tree) and not any(marker_pids(m) for m in markers + [live_marker])
        wait_until(tree_gone, f"{what}: the far tree gone", max(0.0, bound - (time.monotonic() - started)))
        print(f"{what}: far tree gone within {time.monotonic() - started:.2f} s", flush=True)
        wait_until(lambda: not children_named(repl.proc.pid, "ssh"), f"{what}: the ssh client's exit", GONE_BOUND_S)

        # Closing a lost session: succeeds only with the far side's proof, which a dead link
        # never gave; either way it says so and the session is not left running.
        closed = repl.call({"id": ids(), "op": "close", "sessionId": session})
        print(f"{what}: close of the lost session: {closed}", flush=True)
        if not closed.get("ok"):
            check(closed["error"]["message"], f"{what}: a failed close without words: {closed}")
        finish(repl, ids, allow_failed_teardown=True)
        cleanup.passed()
        return lost_after
    finally:
        repl.close()
        cleanup.run()


def ssh_client_killed(server):
    def fault(ctx):
        clients = children_named(ctx["repl"].proc.pid, "ssh")
        check(len(clients) == 1, f"one ssh client below the REPL: {clients}")
        os.kill(clients[0], signal.SIGKILL)
    link_death(server, "ssh client SIGKILL", fault)


def sshd_killed():
    # A server of its own: this case kills it.
    with SshServer() as server:
        def fault(ctx):
            connections = [p for p in server.connection_pids()
                           if (a := _argv(p)) and a[0].startswith("sshd")]
            check(connections, "the per-connection sshd")
            server.kill_listener()
            for pid in connections:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        link_death(server, "sshd SIGKILL", fault)


def helper_stopped(server):
    ping_ms, timeout_ms = 200, 1000

    def fault(ctx):
        ctx["cleanup"].stopped.append(ctx["helper"])
        os.kill(ctx["helper"], signal.SIGSTOP)
        ctx["after"] = lambda: os.kill(ctx["helper"], signal.SIGCONT)

    lost_after = link_death(server, "far helper SIGSTOP", fault,
                            extra=["--remote-ping-ms", str(ping_ms), "--remote-timeout-ms", str(timeout_ms)])
    # Declared within the bound (plus a ping and the loop's slack), and not before it.
    check(0.5 <= lost_after <= timeout_ms / 1000 + 2.0, f"lost after {lost_after:.2f} s, bound {timeout_ms} ms")


def bad_port(server):
    argv = server.bad_port_argv([shlex.quote(SUPERVISOR), "--stdio"])
    repl = start_repl("bad", argv)
    ids = Ids()
    try:
        error = repl.error({"id": ids(), "op": "open", "type": "bad"}, "BACKEND_FAILED")
        check("Connection refused" in error["message"], f"bad port: {error}")
        wait_until(lambda: not children_named(repl.proc.pid, "ssh"), "the ssh client's exit", GONE_BOUND_S)
        finish(repl, ids)
    finally:
        repl.close()


def flood(server):
    """`yes` for 3 s, then a cancel: memory stays bounded on both sides, and the output a
    read can still page is there."""
    cleanup = Cleanup()
    repl = start_repl("ssh", ssh_transport(server))
    ids = Ids()
    try:
        session = open_remote(repl, ids, "ssh")["sessionId"]
        helpers = far_helpers(server.proc.pid)
        check(len(helpers) == 1, f"one far helper: {helpers}")
        cleanup.pids += helpers
        sid = ids()
        repl.request({"id": sid, "op": "send", "sessionId": session, "text": "yes"})
        wait_until(lambda: any(_argv(p) == ["yes"] for p in descendants(helpers[0])), "yes running")
        # The far side's memory: the --stdio face and the local face it runs (which reads the PTY).
        far_side = [helpers[0]] + [p for p in descendants(helpers[0])
                                   if os.path.basename((_argv(p) or [""])[0]) == "dshpty-supervisor"]
        peak_host = peak_far = 0
        end = time.monotonic() + 3.0
        while time.monotonic() < end:
            peak_host = max(peak_host, rss(repl.proc.pid))
            peak_far = max([peak_far] + [rss(p) for p in far_side])
            time.sleep(0.05)  # sampling memory over the flood's 3 s
        check(repl.ok({"id": ids(), "op": "cancel", "sendId": sid}) == {"cancelled": True}, "cancel")
        r = repl.response(sid)
        check(r.get("ok") is True and r["result"]["sessionStatus"] == {"kind": "running"}, f"the flood's send: {r}")
        # More came through than a result holds: the memory above was measured under a real flood.
        check(r["result"]["truncated"] is True, "the flood's viewport was not cut: did output flow?")
        peak_host = max(peak_host, rss(repl.proc.pid))
        print(f"flood: peak RSS host {peak_host >> 20} MiB, far helpers {peak_far >> 20} MiB "
              f"({len(far_side)} processes)", flush=True)
        check(peak_host < MEMORY_BOUND, f"the REPL's RSS reached {peak_host >> 20} MiB")
        check(peak_far < MEMORY_BOUND, f"a far helper's RSS reached {peak_far >> 20} MiB")

        page = repl.ok({"id": ids(), "op": "read", "sessionId": session, "count": 50})
        check("y\ny\ny\n" in page["text"] and page["totalLines"] >= 50, f"the last page: {page}")
        r = send(repl, ids, session, "echo after-$((6*7))")
        check(r["waitReason"] == "stdin_read" and "after-42" in r["viewport"], f"after the flood: {r}")
        finish(repl, ids)
        wait_until(lambda: not alive(helpers), "the far helper after shutdown", GONE_BOUND_S)
        cleanup.passed()
    finally:
        repl.close()
        cleanup.run()


def run_ssh():
    try:
        server = SshServer().start()
    except Skip as why:
        skip(str(why))
    try:
        cases = [
            ("core over ssh", lambda: core_cases("ssh", ssh_transport(server), server.proc.pid)),
            ("ssh client killed", lambda: ssh_client_killed(server)),
            ("far helper stopped", lambda: helper_stopped(server)),
            ("bad port", lambda: bad_port(server)),
            ("missing helper over ssh",
             lambda: missing_helper("ssh", ssh_transport(server, "/nonexistent/dshpty-supervisor"))),
            ("flood over ssh", lambda: flood(server)),
        ]
        for title, case in cases:
            print(f"--- {title}", flush=True)
            case()
            check(server.listener_pid() is not None, f"sshd died during {title}: {server.log()}")
        print("--- sshd killed", flush=True)
        sshd_killed()
    finally:
        server.stop()


# -- sh: the plain pipe, the text face, MCP, bad options ----------------------------------

def sh_transport(helper=None):
    return ["sh", "-c", f"exec {shlex.quote(helper or SUPERVISOR)} --stdio"]


def typed_ahead_cancel(name, argv):
    """A cancel takes back only its own input on the far side too: a line typed ahead of a
    running command and cancelled never runs, and the command in front is not interrupted."""
    repl = start_repl(name, argv)
    ids = Ids()
    tmp = tempfile.mkdtemp(prefix="dshpty-remote-cancel-")
    try:
        session = open_remote(repl, ids, name)["sessionId"]
        for n in range(5):
            path = os.path.join(tmp, f"F-{n}")
            first = send(repl, ids, session, f"sleep 1; echo FIRST-DONE >> {path}", idleMs=150)
            if first["waitReason"] != "inferred_idle":
                continue  # too slow a machine: the round proves nothing
            sid = ids()
            request = {"id": sid, "op": "send", "sessionId": session, "text": f"echo SECOND-RAN >> {path}",
                       "idleMs": 60000}
            repl.request(request)
            seen = ""
            deadline = time.monotonic() + WAIT_S
            while "SECOND-RAN" not in seen:  # the far terminal echoed it: it is queued there
                check(time.monotonic() < deadline, f"round {n}: no echo: {seen!r}")
                seen += repl.ok({"id": ids(), "op": "output", "sendId": sid})["delta"]
                if "SECOND-RAN" not in seen:
                    time.sleep(0.01)  # polling a condition with a deadline
            check(repl.ok({"id": ids(), "op": "cancel", "sendId": sid}) == {"cancelled": True}, "cancel")
            r = repl.response(sid)
            check(r.get("ok") is True, f"round {n}: the cancelled send: {r}")
            result = r["result"]
            check(result.get("takenBackBytes") == len(request["text"]) + 1, f"round {n}: taken back: {result}")
            if not (result["waitReason"] == "stdin_read" and result.get("evidence") == "prompt_marks"):
                send(repl, ids, session, "", idleMs=60000)  # a check-in: back at the prompt
            with open(path) as f:
                lines = [line.strip() for line in f]
            check(lines == ["FIRST-DONE"], f"round {n}: expected FIRST-DONE alone, found {lines}")
        finish(repl, ids)
    finally:
        repl.close()
        shutil.rmtree(tmp, ignore_errors=True)


def text_face():
    """`open NAME` in the text REPL, and the list line of a remote session."""
    command = transport_word(sh_transport())
    proc = subprocess.Popen([REPL, *REPL_ARGS, "--remote", f"pipe={command}"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=sys.stderr, start_new_session=True)
    script = "open pipe main\nsend main echo hi-$((6*7))\nlist\nclose main\n"
    try:
        out, _ = proc.communicate(script.encode(), timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        fail("text mode did not finish: " + out.decode(errors="replace"))
    finally:
        kill_quietly(far_helpers(proc.pid))
    text = out.decode()
    print(text)
    check(proc.returncode == 0, f"exit status {proc.returncode}")
    check("started terminal session pty-1 (main) [type: pipe]" in text, "the open line")
    check("hi-42\n" in text and "[exit: 0]" in text and "[session: running]" in text, "the send")
    check("pty-1 (main) [pipe] running" in text, "the list line")
    check("closed terminal session" in text, "the close line")


def bad_options():
    """Mistakes in --remote are INVALID_ARGUMENT at start-up: exit 2, the reason on stderr."""
    for value, words in [("shell=sh", "local backend's"), ("x=sh -c 'exec", "unterminated single quote"),
                         ("=sh", "empty"), ("x=", "COMMAND is empty"), ("nothing", "NAME=COMMAND")]:
        r = subprocess.run([REPL, "--json", "--remote", value], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=WAIT_S)
        check(r.returncode == 2 and words in r.stderr and r.stdout == "", f"--remote {value!r}: {r}")
    r = subprocess.run([REPL, "--json", "--remote", "a=sh", "--remote", "a=sh"], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=WAIT_S)
    check(r.returncode == 2 and "given twice" in r.stderr, f"a name twice: {r}")
    r = subprocess.run([REPL, "--json", "--remote-ping-ms", "900", "--remote-timeout-ms", "900"],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=WAIT_S)
    check(r.returncode == 2 and "must be below" in r.stderr, f"ping >= timeout: {r}")


def mcp_face(mcp_path):
    """dshpty-mcp: tools/list names the remote type; terminal_open with it works."""
    from mcp_client import McpServer  # noqa: E402 (tests/mcp)
    command = transport_word(sh_transport())
    server = McpServer(mcp_path, [*REPL_ARGS, "--remote", f"pipe={command}"])
    try:
        server.initialize()
        tools = server.call("tools/list")["tools"]
        described = [t for t in tools if t["name"] == "terminal_open"][0]
        check('"pipe"' in described["inputSchema"]["properties"]["type"]["description"], f"type: {described}")
        opened = server.tool("terminal_open", {"type": "pipe", "name": "m"})
        check("[type: pipe]" in opened, opened)
        sent = server.tool("terminal_send", {"session": "m", "text": "echo mcp-$((6*7))"})
        check("mcp-42" in sent and "[exit: 0]" in sent and "[session: running]" in sent, sent)
        # Progress notifications carry a remote send's output as it arrives, as for a local one.
        text, is_error, ticks = server.tool_with_progress(
            "terminal_send", {"session": "m", "text": "for i in 1 2 3; do echo tick-$i; sleep 0.3; done"}, "ticks")
        check(is_error is False and "tick-3" in text, text)
        check(any("tick-1" in t for t in ticks), f"progress carried the remote output: {ticks}")
        check("[pipe] running" in server.tool("terminal_list"), "list")
        check(server.tool("terminal_close", {"session": "m"}).startswith("closed terminal session"), "close")
        check(server.close_stdin_and_wait() == 0, "exit after EOF")
        check(not far_helpers(server.proc.pid), "a far helper outlived dshpty-mcp")
    finally:
        server.kill()


def run_sh(mcp_path):
    print("--- bad --remote options", flush=True)
    bad_options()
    print("--- core over sh -c", flush=True)
    core_cases("pipe", sh_transport(), None)
    print("--- typed-ahead cancel over sh -c", flush=True)
    typed_ahead_cancel("pipe", sh_transport())
    print("--- missing helper over sh -c", flush=True)
    missing_helper("pipe", sh_transport("/nonexistent/dshpty-supervisor"))
    print("--- text face", flush=True)
    text_face()
    if mcp_path:
        print("--- dshpty-mcp", flush=True)
        mcp_face(mcp_path)


# -- bwrap ----------------------------------------------------------------------------------

def run_bwrap():
    if shutil.which("bwrap") is None:
        skip("bwrap is not installed")
    argv = ["bwrap", "--dev-bind", "/", "/", "--die-with-parent", SUPERVISOR, "--stdio"]
    probe = subprocess.run(["bwrap", "--dev-bind", "/", "/", "--die-with-parent", "true"],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if probe.returncode != 0:
        skip(f"bwrap cannot create its namespaces here: {probe.stderr.strip()}")
    print("--- core over bwrap", flush=True)
    core_cases("box", argv, None)


# -- lost, in every face --------------------------------------------------------------------

def mute_transport(pidfile):
    return [sys.executable, os.path.join(HERE, "fake_far.py"), pidfile, "prompt-then-mute"]


def lost_faces(mcp_path):
    """A far side that answers nothing after its prompt, with a 500 ms link bound: a send
    ends session_exit and the session is lost, in the transport's words, in each face; its
    close fails saying the far end is unconfirmed."""
    bounds = ["--remote-ping-ms", "100", "--remote-timeout-ms", "500"]
    workdir = tempfile.mkdtemp(prefix="dshpty-remote-lost-")
    pidfile = os.path.join(workdir, "pid")
    command = transport_word(mute_transport(pidfile))
    try:
        print("--- JSON", flush=True)
        repl = JsonRepl(REPL, [*bounds, "--remote", f"mute={command}"])
        ids = Ids()
        try:
            session = open_remote(repl, ids, "mute")["sessionId"]
            repl.pids = []  # the fake's pid is no process of ours to kill
            r = send(repl, ids, session, "echo hi")
            check(r["waitReason"] == "session_exit", f"the send: {r}")
            status = r["sessionStatus"]
            check(status["kind"] == "lost" and set(status) == {"kind", "reason"}, f"the status: {r}")
            check("no frame from the far helper for 500 ms" in status["reason"], f"the words: {status}")
            check(status_of(repl, ids, session) == status, "list shows the same status")
            error = repl.error({"id": ids(), "op": "close", "sessionId": session}, "BACKEND_FAILED")
            check("unconfirmed" in error["message"], f"the close: {error}")
            finish(repl, ids, allow_failed_teardown=True)
        finally:
            repl.close()

        print("--- text", flush=True)
        proc = subprocess.Popen([REPL, *bounds, "--remote", f"mute={command}"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            out, _ = proc.communicate(b"open mute m\nsend m echo hi\nlist\n", timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            fail("text mode did not finish: " + out.decode(errors="replace"))
        text = out.decode()
        print(text)
        check(re.search(r"\[wait: session_exit\]\n\[session: lost: \S+: no frame from the far helper for 500 ms\]\n",
                        text), "the send's status line")
        check(re.search(r"^pty-1 \(m\) \[mute\] lost: \S+: no frame from the far helper for 500 ms pid=\d+$", text,
                        re.M), "the list line")

        if mcp_path:
            print("--- MCP", flush=True)
            from mcp_client import McpServer  # noqa: E402 (tests/mcp)
            server = McpServer(mcp_path, [*bounds, "--remote", f"mute={command}"])
            try:
                server.initialize()
                check("[type: mute]" in server.tool("terminal_open", {"type": "mute", "name": "m"}), "open")
                sent = server.tool("terminal_send", {"session": "m", "text": "echo hi"})
                check("[wait: session_exit]" in sent and "[session: lost: " in sent, sent)
                check("[mute] lost: " in server.tool("terminal_list"), "list")
                check("unconfirmed" in server.tool_error("terminal_close", {"session": "m"}, "BACKEND_FAILED"),
                      "close")
            finally:
                server.proc.stdin.close()
                try:
                    server.proc.wait(timeout=WAIT_S)
                except subprocess.TimeoutExpired:
                    fail("dshpty-mcp did not exit after EOF")
                server.kill()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main():
    global REPL, SUPERVISOR
    if len(sys.argv) < 4 or sys.argv[3] not in ("ssh", "sh", "bwrap", "lost"):
        print(__doc__, file=sys.stderr)
        return 2
    REPL, SUPERVISOR, transport = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3]
    mcp_path = os.path.abspath(sys.argv[4]) if len(sys.argv) > 4 else None
    if transport == "ssh":
        run_ssh()
    elif transport == "sh":
        run_sh(mcp_path)
    elif transport == "lost":
        lost_faces(mcp_path)
    else:
        run_bwrap()
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
