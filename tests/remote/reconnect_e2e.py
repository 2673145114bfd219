"""Links that reconnect (docs/outlive.md, "Links that reconnect"), end to end over the suite's
own sshd (sshd_fixture.py): the real dshpty-repl --json with `--remote NAME=COMMAND`, where
COMMAND is `ssh ... dshpty-supervisor --stdio --state-dir FARDIR` and the session is opened
with `linger`.

  flood     the ssh client killed mid-flood while a send is live (sshd's listener held
            stopped, so the cut lasts until the test saw it): `reconnecting` with the
            transport's words, then `running`; the far helper and the flood's loop are the
            same processes; the live send completes once; every numbered line arrives once
            and in order (paged with `read`); the file the send appends to has one line
  mid-send  the far helper stopped, a send typed, the ssh client killed, the helper let go:
            the send completes once after the reconnect and its command ran exactly once
  restart   the host SIGKILLed, or leaving in order (its input ended): a new host with the
            same --state-dir finds the session in its
            record (KEY.remote: the key and the next token) and takes it back over the same
            transport with `attach`, with the output it missed; the link then reconnects
            for the new host as for the first
  tokens    the token of the record before a reconnect (replayed) and a made-up one are
            refused by the far side; a session ended with no host is answered with its
            tombstone
  expiry    sshd killed for longer than linger: the far tree goes (the far helper's expiry),
            and once sshd is back the host hears it from the far side: `lost` with the
            tombstone's proof

Usage: reconnect_e2e.py REPL SUPERVISOR

Loopback only. Every wait has a deadline; every process and temp dir a case starts is gone
when it ends. No sshd here is a skip (77) with the reason."""

import glob
import os
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "repl"))
sys.path.insert(0, HERE)

import remote_e2e as e2e  # noqa: E402
from remote_e2e import (Cleanup, Ids, _argv, alive, children_named, descendants, far_helpers,  # noqa: E402
                        send, status_of, wait_until)
from repl_harness import JsonRepl, check, fail  # noqa: E402
from sshd_fixture import Skip, SshServer, skip  # noqa: E402

LINES = 8000        # the flood's numbered lines (the scrollback keeps 10,000)
WAIT_S = 60.0


def transport(server, far_dir):
    return server.ssh_argv([e2e.SUPERVISOR, "--stdio", "--state-dir", far_dir])


def start_repl(server, far_dir, extra=(), host_dir=None):
    argv = transport(server, far_dir)
    # The host's records go to a directory of the test's, never the user's own (a failed
    # case, its host killed, would leave them there).
    if host_dir is None:
        host_dir = os.path.join(os.path.dirname(far_dir), "host-state-default")
    os.makedirs(host_dir, mode=0o700, exist_ok=True)
    return JsonRepl(e2e.REPL, [*e2e.REPL_ARGS, "--remote", f"ssh={e2e.transport_word(argv)}",
                               "--state-dir", host_dir, *extra])


def open_lingering(repl, ids, linger):
    opened = repl.ok({"id": ids(), "op": "open", "type": "ssh", "name": "main", "linger": linger})
    check(opened["status"] == {"kind": "running"}, f"open: {opened}")
    return opened["sessionId"]


def open_with_helper(server, repl, ids, cleanup, linger):
    """A lingering session and its one far helper (in a list), which cleanup takes care of."""
    session = open_lingering(repl, ids, linger)
    helpers = far_helpers(server.proc.pid)
    check(len(helpers) == 1, f"one far helper: {helpers}")
    cleanup.pids += helpers
    return session, helpers


def record(far_dir):
    """The far session's KEY.info as a dict (one lingering session in far_dir)."""
    infos = glob.glob(os.path.join(far_dir, "*.info"))
    check(len(infos) == 1, f"one record in {far_dir}: {os.listdir(far_dir)}")
    out = {"key": os.path.basename(infos[0])[:-5]}
    with open(infos[0]) as f:
        for line in f:
            name, _, value = line.rstrip("\n").partition("=")
            out[name] = value
    return out


def kill_client(repl):
    clients = children_named(repl.proc.pid, "ssh")
    check(len(clients) == 1, f"one ssh client below the REPL: {clients}")
    os.kill(clients[0], signal.SIGKILL)


def wait_status(repl, ids, session, kind, what):
    seen = {}

    def now():
        seen["status"] = status_of(repl, ids, session)
        return seen["status"] is not None and seen["status"]["kind"] == kind
    wait_until(now, f"{what}: status {kind} (last {seen.get('status')})", WAIT_S)
    return seen["status"]


def all_lines(repl, ids, session):
    """Every retained line, oldest first, paged with `read` (500 lines a page)."""
    pages = []
    offset = 0
    while True:
        page = repl.ok({"id": ids(), "op": "read", "sessionId": session, "offset": offset, "count": 500})
        check(not page.get("truncated"), f"a page cut to its byte bound: {page.get('lineBegin')}")
        pages.append(page["text"])
        if page["lineBegin"] <= 0:
            break
        offset += page["lineEnd"] - page["lineBegin"]
    return "".join(reversed(pages)).split("\n")


def count_lines(path):
    with open(path) as f:
        return len(f.read().splitlines())


# -- the cases ------------------------------------------------------------------------------

def flood(server, far_dir, work):
    cleanup = Cleanup()
    repl = start_repl(server, far_dir, ["--remote-ping-ms", "1000", "--remote-timeout-ms", "5000"])
    ids = Ids()
    stopped = []
    try:
        session, helpers = open_with_helper(server, repl, ids, cleanup, 60)
        before = record(far_dir)

        appended = os.path.join(work, "flood-once")
        # Bursts of 1000 lines of 200 bytes with a pause between them: the flood runs across
        # the cut whatever the machine's speed, and fits the scrollback.
        loop = (f"for i in $(seq 1 {LINES}); do printf 'line-%d-%0190d\\n' $i 0; "
                f"[ $((i % 1000)) = 0 ] && sleep 0.3; done; echo once >> {appended}; echo flood-$((6*7))")
        live = ids()
        repl.request({"id": live, "op": "send", "sessionId": session, "text": loop})
        wait_until(lambda: any(_argv(p) == ["sleep", "0.3"] for p in descendants(helpers[0])),
                   "the flood under way")
        tree = [helpers[0]] + descendants(helpers[0])
        cleanup.pids += tree

        # The listener held stopped: the host's attempts wait in its backlog, so the cut
        # lasts until the test has seen it.
        os.kill(server.proc.pid, signal.SIGSTOP)
        stopped.append(server.proc.pid)
        kill_client(repl)
        status = wait_status(repl, ids, session, "reconnecting", "after the cut")
        check("ssh" in status.get("reason", ""), f"the reconnecting reason names the transport: {status}")
        print(f"flood: {status}", flush=True)
        check(alive(tree) == tree, "the far tree runs on through the cut")
        os.kill(server.proc.pid, signal.SIGCONT)
        stopped.clear()

        r = repl.response(live)
        check(r.get("ok") is True, f"the live send: {r}")
        check(r["result"]["waitReason"] == "stdin_read" and "flood-42" in r["result"]["viewport"],
              f"the live send completes at the prompt: {r['result']['waitReason']}")
        check(sum(1 for x in repl.responses if x.get("id") == live) == 1, "the live send completed once")
        wait_status(repl, ids, session, "running", "after the reconnect")
        check(alive(helpers) == helpers, f"the far helper survived the cut: {helpers}")
        after = record(far_dir)
        check(after["key"] == before["key"] and after["token"] != before["token"],
              "the same session, a new token after the reconnect")

        numbers = [int(line.split("-")[1]) for line in all_lines(repl, ids, session)
                   if line.startswith("line-") and line.count("-") == 2]
        check(numbers == list(range(1, LINES + 1)),
              f"numbered lines continuous: {len(numbers)} lines, first gap near "
              f"{next((i for i, n in enumerate(numbers, 1) if n != i), None)}")
        check(count_lines(appended) == 1, f"the appending command ran {count_lines(appended)} times")

        r = send(repl, ids, session, "echo after-$((6*7))")
        check(r["waitReason"] == "stdin_read" and "after-42" in r["viewport"], f"a send after: {r}")
        e2e.finish(repl, ids)
        wait_until(lambda: not alive(tree), "the far tree after shutdown", 10)
        check(not glob.glob(os.path.join(far_dir, "*")), f"the far state dir is empty: {os.listdir(far_dir)}")
        cleanup.passed()
        return before
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        repl.close()
        cleanup.run()


def mid_send(server, far_dir, work):
    cleanup = Cleanup()
    repl = start_repl(server, far_dir)
    ids = Ids()
    stopped = []
    try:
        session, helpers = open_with_helper(server, repl, ids, cleanup, 60)
        appended = os.path.join(work, "send-once")
        # The far helper stopped: the send's input is in flight (in ssh, sshd or the pipe)
        # when the client dies, wherever the cut catches it.
        os.kill(helpers[0], signal.SIGSTOP)
        stopped.append(helpers[0])
        live = ids()
        repl.request({"id": live, "op": "send", "sessionId": session,
                      "text": f"echo typed >> {appended}; echo sent-$((6*7))"})
        kill_client(repl)
        os.kill(helpers[0], signal.SIGCONT)
        stopped.clear()
        r = repl.response(live)
        check(r.get("ok") is True and r["result"]["waitReason"] == "stdin_read", f"the live send: {r}")
        check("sent-42" in r["result"]["viewport"], f"its output: {r['result']['viewport']!r}")
        check(r["result"]["sessionStatus"] == {"kind": "running"}, f"running after it: {r}")
        check(sum(1 for x in repl.responses if x.get("id") == live) == 1, "the live send completed once")
        check(count_lines(appended) == 1, f"the command ran {count_lines(appended)} times")
        check(alive(helpers) == helpers, "the far helper survived the cut")
        r = send(repl, ids, session, f"wc -l < {appended}")
        check("1" in r["viewport"].split(), f"counted on the far side: {r['viewport']!r}")
        e2e.finish(repl, ids)
        wait_until(lambda: not alive(helpers), "the far helper after shutdown", 10)
        cleanup.passed()
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        repl.close()
        cleanup.run()


def restart(server, far_dir, work, leave="kill"):
    cleanup = Cleanup()
    host_dir = os.path.join(work, "host-state")
    first = start_repl(server, far_dir, host_dir=host_dir)
    second = None
    ids = Ids()
    try:
        session, helpers = open_with_helper(server, first, ids, cleanup, 60)
        r = send(first, ids, session, "echo before-$((6*7))")
        check("before-42" in r["viewport"], f"before: {r}")
        records = glob.glob(os.path.join(host_dir, "*.remote"))
        check(len(records) == 1, f"the host's record of its remote session: {os.listdir(host_dir)}")
        clients = children_named(first.proc.pid, "ssh")
        cleanup.pids += clients
        if leave == "kill":
            # The host dies with no word: its ssh client sees its end of the link close, the
            # far helper its stdin end, and lingers. (That client stays until the far helper
            # sshd started exits: sshd keeps a channel open while its command runs.)
            os.kill(first.proc.pid, signal.SIGKILL)
            first.proc.wait()
        else:
            # The host leaves in order (its input ends): it detaches the lingering session
            # instead of killing it, and its record stays for the next host.
            first.proc.stdin.close()
            check(first.proc.wait(timeout=30) == 0, "the first host's exit")
            check(len(glob.glob(os.path.join(host_dir, "*.remote"))) == 1,
                  f"the record after an orderly exit: {os.listdir(host_dir)}")
        tree = [helpers[0]] + descendants(helpers[0])
        cleanup.pids += tree

        second = start_repl(server, far_dir, host_dir=host_dir)
        attached = second.ok({"id": ids(), "op": "attach"})["sessions"]
        check(len(attached) == 1 and attached[0]["type"] == "ssh" and attached[0]["name"] == "main",
              f"attach: {attached}")
        check(attached[0]["status"] == {"kind": "running"} and attached[0]["replayedBytes"] > 0, f"attach: {attached}")
        session = attached[0]["sessionId"]
        page = second.ok({"id": ids(), "op": "read", "sessionId": session, "count": 50})
        check("before-42" in page["text"], f"the replay holds what the first host saw: {page['text']!r}")
        r = send(second, ids, session, "echo after-$((6*7))")
        check(r["waitReason"] == "stdin_read" and "after-42" in r["viewport"], f"after: {r}")
        check(alive(tree) == tree, "the same far tree")
        # The new host reconnects a cut link as the first would have.
        kill_client(second)
        wait_status(second, ids, session, "running", "the new host's reconnect")
        r = send(second, ids, session, "echo again-$((6*7))")
        check("again-42" in r["viewport"], f"after the reconnect: {r}")
        e2e.finish(second, ids)
        wait_until(lambda: not alive(tree), "the far tree after shutdown", 10)
        check(not os.listdir(host_dir), f"the host's records are gone: {os.listdir(host_dir)}")
        check(not os.listdir(far_dir), f"the far records are gone: {os.listdir(far_dir)}")
        wait_until(lambda: not alive(clients), "the dead host's ssh client, once the far helper exited", 10)
        cleanup.passed()
    finally:
        first.close()
        if second:
            second.close()
        cleanup.run()


# -- the frames, spoken by hand (link/frames.hpp) -------------------------------------------

def frame(kind, payload=b""):
    return struct.pack("<IB", len(payload) + 1, kind) + payload


def text(s):
    b = s.encode()
    return struct.pack("<I", len(b)) + b


HELLO, ATTACH, WELCOME, ERROR = 1, 12, 64, 74


def attach_by_hand(server, far_dir, key, token, owner):
    """HELLO and ATTACH (resume) over a fresh transport: the far side's answer, (code, text)."""
    data = frame(HELLO, struct.pack("<III", 1, 0, 0)) + \
        frame(ATTACH, text(key) + text(token) + text(owner) + struct.pack("<BQ", 1, 0))
    out = subprocess.run(transport(server, far_dir), input=data, capture_output=True, timeout=WAIT_S)
    frames, rest = [], out.stdout
    while len(rest) >= 5:
        length, kind = struct.unpack("<IB", rest[:5])
        frames.append((kind, rest[5:4 + length]))
        rest = rest[4 + length:]
    check(frames and frames[0][0] == WELCOME, f"a WELCOME first: {out.stdout[:80]!r} {out.stderr!r}")
    errors = [p for k, p in frames if k == ERROR]
    check(errors, f"an ERROR from the far side: {frames}")
    code, = struct.unpack("<I", errors[0][:4])
    return code, errors[0][8:].decode()


def tokens(server, far_dir):
    """A live lingering session: a replayed token and a made-up one are refused."""
    cleanup = Cleanup()
    repl = start_repl(server, far_dir)
    ids = Ids()
    try:
        session = open_lingering(repl, ids, 60)
        helpers = far_helpers(server.proc.pid)
        cleanup.pids += helpers
        first = record(far_dir)
        kill_client(repl)
        # The reconnect spends the first token.
        wait_until(lambda: record(far_dir)["token"] != first["token"] and
                   status_of(repl, ids, session) == {"kind": "running"}, "the reconnect")
        code, words = attach_by_hand(server, far_dir, first["key"], first["token"], first["owner"])
        check(code == 4 and "wrong token" in words, f"a replayed token: {code} {words!r}")
        code, words = attach_by_hand(server, far_dir, first["key"], secrets.token_hex(32), first["owner"])
        check(code == 4 and "wrong token" in words, f"a made-up token: {code} {words!r}")
        # Refusals change nothing: the session still runs for its host.
        r = send(repl, ids, session, "echo still-$((6*7))")
        check("still-42" in r["viewport"] and r["sessionStatus"] == {"kind": "running"}, f"after: {r}")
        e2e.finish(repl, ids)
        wait_until(lambda: not alive(helpers), "the far helper after shutdown", 10)
        code, words = attach_by_hand(server, far_dir, first["key"], secrets.token_hex(32), first["owner"])
        check(code == 6 and "no lingering session" in words, f"a session closed: {code} {words!r}")
        cleanup.passed()
    finally:
        repl.close()
        cleanup.run()


def expiry(far_dir):
    """sshd killed for longer than linger: lost, with the far side's proof once it is back."""
    cleanup = Cleanup()
    with SshServer() as server:
        repl = start_repl(server, far_dir, ["--remote-ping-ms", "1000", "--remote-timeout-ms", "20000"])
        ids = Ids()
        try:
            session, helpers = open_with_helper(server, repl, ids, cleanup, 2)
            marker = e2e.new_marker()
            cleanup.markers.append(marker)
            r = send(repl, ids, session, f"sleep {marker} & setsid sleep {marker} & echo bg-$((6*7))")
            check("bg-42" in r["viewport"], f"background jobs: {r}")
            # The prompt can come back before the background jobs have exec'd their sleeps.
            wait_until(lambda: len(e2e.marker_pids(marker)) == 2, "both jobs run", 10)
            tree = [helpers[0]] + descendants(helpers[0])
            cleanup.pids += tree
            port = server.port
            connections = [p for p in server.connection_pids() if (a := _argv(p)) and a[0].startswith("sshd")]
            server.kill_listener()
            for pid in connections:
                os.kill(pid, signal.SIGKILL)
            wait_status(repl, ids, session, "reconnecting", "sshd gone")
            # The far helper's linger runs out: its whole tree goes, a tombstone stays.
            wait_until(lambda: not alive(tree) and not e2e.marker_pids(marker), "the far tree after linger", 15)
            check(glob.glob(os.path.join(far_dir, "*.tomb")), "a tombstone")
            # sshd back on the same port: the next attempt hears that the session is gone.
            server.port = port
            check(server._launch() is None, f"sshd restarted: {server.log()}")
            status = wait_status(repl, ids, session, "lost", "after sshd is back")
            print(f"expiry: {status}", flush=True)
            check("killed after linger" in status["reason"] and "reaped every process" in status["reason"],
                  f"lost with the far side's proof: {status}")
            e2e.finish(repl, ids, allow_failed_teardown=True)
            cleanup.passed()
        finally:
            repl.close()
            cleanup.run()
    for tomb in glob.glob(os.path.join(far_dir, "*")):
        os.unlink(tomb)


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    e2e.REPL, e2e.SUPERVISOR = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    try:
        server = SshServer().start()
    except Skip as why:
        skip(str(why))
    work = tempfile.mkdtemp(prefix="dshpty-reconnect-")
    far_dir = os.path.join(work, "far-state")
    try:
        cases = [
            ("ssh client killed mid-flood", lambda: flood(server, far_dir, work)),
            ("ssh client killed mid-send", lambda: mid_send(server, far_dir, work)),
            ("a replayed and a wrong token", lambda: tokens(server, far_dir)),
            ("a restarted host takes its remote session back", lambda: restart(server, far_dir, work)),
            ("a host that left in order: the next one takes its remote session back",
             lambda: restart(server, far_dir, work, leave="eof")),
        ]
        only = os.environ.get("DSHPTY_RECONNECT_CASE")
        for title, case in cases:
            if only and only not in title:
                continue
            print(f"--- {title}", flush=True)
            case()
            check(server.listener_pid() is not None, f"sshd died during {title}: {server.log()}")
        if not only or only in "sshd killed for longer than linger":
            print("--- sshd killed for longer than linger", flush=True)
            expiry(far_dir)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
