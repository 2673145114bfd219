"""dshpty-repl --json end to end over pipes, with the real shell backend: open, send, read,
signal, close, list; overlapping send + output + read + cancel; SEND_ACTIVE; FOREIGN_SESSION;
disposeOwner then a fresh owner; bad lines each an INVALID_ARGUMENT while serving goes on;
shutdown and EOF leave no process behind."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from repl_harness import DEADLINE_S, JsonRepl, check, kill_quietly, wait_gone


def main_session(repl):
    r = repl.ok({"id": 1, "op": "open", "type": "shell", "name": "main"})
    check(r["sessionId"] == "pty-1" and r["name"] == "main" and r["type"] == "shell", r)
    check(r["status"] == {"kind": "running"} and isinstance(r["pid"], int), r)
    check(list(r)[:2] == ["sessionId", "name"], f"field order: {list(r)}")

    listed = repl.ok({"id": 2, "op": "list"})["sessions"]
    check([s["sessionId"] for s in listed] == ["pty-1"], listed)

    sent = repl.ok({"id": 3, "op": "send", "sessionId": "pty-1", "text": "echo hello-$((6*7))"})
    check("hello-42" in sent["viewport"], sent)
    check(sent["waitReason"] == "stdin_read" and sent["sessionStatus"] == {"kind": "running"}, sent)
    check(sent["truncated"] is False, sent)
    check(sent["exitCode"] == 0 and sent["cwd"].startswith("/") and sent["inputHidden"] is False, sent)

    page = repl.ok({"id": 4, "op": "read", "sessionId": "pty-1"})
    check("hello-42" in page["text"] and page["totalLines"] >= 1, page)
    check(page["lineEnd"] - page["lineBegin"] >= 1, page)
    return r["pid"]


def overlapping(repl):
    # A live send, and while it runs: output, read, list, another send, then cancel.
    repl.request({"id": "long", "op": "send", "sessionId": "pty-1",
                  "text": "echo started-long; sleep 300", "timeoutMs": 600000})
    # Wait until the sleep is running: its first output arrived (the echo's own line, not the
    # typed line's echo, which holds the word too).
    seen = ""
    deadline = time.monotonic() + DEADLINE_S
    i = 0
    while not re.search(r"(?m)^started-long\r?$", seen) and time.monotonic() < deadline:
        i += 1
        seen += repl.ok({"id": f"out-{i}", "op": "output", "sendId": "long"})["delta"]
        time.sleep(0.01)  # polling a condition with a deadline
    check(re.search(r"(?m)^started-long\r?$", seen), f"no output from the live send: {seen!r}")
    check(repl.ok({"id": 11, "op": "read", "sessionId": "pty-1"})["totalLines"] >= 1, "read during a send")
    check(len(repl.ok({"id": 12, "op": "list"})["sessions"]) == 1, "list during a send")
    error = repl.error({"id": 13, "op": "send", "sessionId": "pty-1", "text": "echo no"}, "SEND_ACTIVE")
    # The error names the remedies: a signal interrupts, a cancel takes the send back. So
    # for keys pressed to interrupt it.
    check('"op": "signal"' in error["message"] and '"op": "cancel"' in error["message"], error)
    error = repl.error({"id": "keys-live", "op": "send", "sessionId": "pty-1", "keys": ["C-c"]}, "SEND_ACTIVE")
    check('"op": "signal"' in error["message"], error)
    check(not any(r.get("id") == "long" for r in repl.responses), "the long send ended early")
    cancelled = repl.ok({"id": 14, "op": "cancel", "sendId": "long"})
    check(cancelled == {"cancelled": True}, cancelled)
    long = repl.response("long")
    check(long["ok"] is True and long["result"]["waitReason"] == "stdin_read", long)
    # The session is still usable.
    again = repl.ok({"id": 15, "op": "send", "sessionId": "pty-1", "text": "echo after-cancel"})
    check("after-cancel" in again["viewport"], again)
    late = repl.ok({"id": 16, "op": "cancel", "sendId": "long"})
    check(late == {"cancelled": False}, late)


def owners(repl):
    err = repl.error({"id": 20, "op": "read", "sessionId": "pty-1", "owner": "intruder"}, "FOREIGN_SESSION")
    check(err["message"] == "PTY session ID belongs to another agent", err)
    repl.error({"id": 21, "op": "close", "sessionId": "pty-1", "owner": "intruder"}, "FOREIGN_SESSION")

    agent = repl.ok({"id": 22, "op": "open", "type": "shell", "name": "main", "owner": "agent"})
    check(agent["sessionId"] == "pty-2", agent)  # the same name under another owner is fine
    check(repl.ok({"id": 23, "op": "activity", "owner": "agent"}) == {"active": True}, "activity")
    check(repl.ok({"id": 24, "op": "disposeOwner", "owner": "agent"}) == {}, "disposeOwner")
    wait_gone([agent["pid"]], "disposeOwner")
    # The label now names a fresh owner: no sessions, no activity, the old id is dead.
    check(repl.ok({"id": 25, "op": "list", "owner": "agent"}) == {"sessions": []}, "fresh owner list")
    check(repl.ok({"id": 26, "op": "activity", "owner": "agent"}) == {"active": False}, "fresh owner activity")
    repl.error({"id": 27, "op": "read", "sessionId": "pty-2", "owner": "agent"}, "NO_SESSION")
    fresh = repl.ok({"id": 28, "op": "open", "type": "shell", "name": "main", "owner": "agent"})
    check(fresh["sessionId"] == "pty-3", fresh)
    return fresh["pid"]


def bad_lines(repl):
    def bad(raw, rid):
        repl.send_raw(raw)
        tag = f"probe-{len(repl.responses)}"
        repl.request({"id": tag, "op": "list"})  # still serving
        check(repl.response(tag)["ok"] is True, "serving after a bad line")
        matching = [r for r in repl.responses if r.get("id") == rid and r.get("ok") is False]
        check(matching and matching[-1]["error"]["code"] == "INVALID_ARGUMENT",
              f"{raw[:60]!r}: {repl.responses[-3:]}")

    bad(b"this is not json\n", None)
    bad(b'{"id":30,"op":"frobnicate"}\n', 30)
    bad(b'{"id":31,"op":"send","sessionId":"pty-1","txt":"x"}\n', 31)
    bad(b'{"id":32,"op":"send","sessionId":"pty-1","text":7}\n', 32)
    bad(b'{"id":33,"op":"read","sessionId":"pty-1","count":"ten"}\n', 33)
    bad(b'{"op":"list"}\n', None)
    bad(b"[1,2,3]\n", None)
    bad(b'{"id":34,"op":"send","sessionId":"pty-1","text":"' + b"x" * (10 * 1000 * 1000) + b'"}\n', None)
    repl.error({"id": 35, "op": "read", "sessionId": "pty-99"}, "NO_SESSION")


def interrupt_then_go_on(repl):
    # An agent interrupts a job and sends the next command at once, several times over:
    # every result is that command's own, never the interrupted job's prompt.
    for n in range(5):
        running = repl.ok({"id": f"job-{n}", "op": "send", "sessionId": "pty-1", "text": "sleep 5",
                           "idleMs": 300})
        check(running["waitReason"] == "inferred_idle" and running["exitCode"] is None, running)
        sig = repl.ok({"id": f"int-{n}", "op": "signal", "sessionId": "pty-1", "signal": "SIGINT"})
        check(sig["delivered"] is True and isinstance(sig["targetPgid"], int), sig)
        after = repl.ok({"id": f"after-{n}", "op": "send", "sessionId": "pty-1", "text": f"echo after-{n}"})
        check(after["waitReason"] == "stdin_read" and f"after-{n}\n" in after["viewport"], after)
        check(after["exitCode"] == 0, after)
    # A password prompt is flagged, and the secret sent to it is never shown.
    asked = repl.ok({"id": "pw", "op": "send", "sessionId": "pty-1",
                     "text": 'read -s -p "Password: " pw; echo "length ${#pw}"'})
    check(asked["waitReason"] == "stdin_read" and asked["inputHidden"] is True, asked)
    answered = repl.ok({"id": "secret", "op": "send", "sessionId": "pty-1", "text": "hunter2-x"})
    check("length 9" in answered["viewport"] and "hunter2" not in answered["viewport"], answered)
    page = repl.ok({"id": "pw-page", "op": "read", "sessionId": "pty-1", "count": 10000})
    check("hunter2" not in page["text"], "the secret reached the scrollback")


def cancel_then_send(repl):
    # Cancel, then send at once (the engine's rule, as on MCP): the send waits for the
    # cancelled one to settle and runs, instead of SEND_ACTIVE. Both lines go in one write,
    # so the send always arrives before the SIGINT has brought the prompt back.
    repl.request({"id": "cs-long", "op": "send", "sessionId": "pty-1", "text": "echo cs-started; sleep 300",
                  "timeoutMs": 600000})
    seen = ""
    deadline = time.monotonic() + DEADLINE_S
    i = 0
    while not re.search(r"(?m)^cs-started\r?$", seen) and time.monotonic() < deadline:
        i += 1
        seen += repl.ok({"id": f"cs-out-{i}", "op": "output", "sendId": "cs-long"})["delta"]
        time.sleep(0.01)  # polling a condition with a deadline
    check(re.search(r"(?m)^cs-started\r?$", seen), f"no output from the live send: {seen!r}")
    repl.send_raw(b'{"id":"cs-cancel","op":"cancel","sendId":"cs-long"}\n'
                  b'{"id":"cs-after","op":"send","sessionId":"pty-1","text":"echo after-cancel"}\n')
    check(repl.response("cs-cancel")["result"] == {"cancelled": True}, "the cancel")
    after = repl.response("cs-after")
    check(after["ok"] is True and "after-cancel\n" in after["result"]["viewport"], after)
    check(after["result"]["waitReason"] == "stdin_read" and after["result"]["exitCode"] == 0, after)
    check(repl.response("cs-long")["ok"] is True, "the cancelled send is answered")


def test_main_flow(repl_path):
    repl = JsonRepl(repl_path)
    try:
        main_session(repl)
        overlapping(repl)
        agent_pid = owners(repl)
        bad_lines(repl)

        interrupt_then_go_on(repl)
        cancel_then_send(repl)
        check(repl.ok({"id": 40, "op": "close", "sessionId": "pty-1"}) == {"outcome": "closed"}, "close")
        repl.error({"id": 41, "op": "close", "sessionId": "pty-1"}, "NO_SESSION")
        check(repl.ok({"id": 42, "op": "list"}) == {"sessions": []}, "list after close")

        # shutdown with a session still open (agent's pty-3): answered, exit 0, nothing left.
        hello = repl.ok({"id": "hi", "op": "hello"})
        check(hello.get("name") == "dshpty-repl" and hello.get("protocol") == 1 and isinstance(hello.get("version"), str),
              f"hello: {hello}")
        check(repl.ok({"id": 43, "op": "shutdown"}) == {}, "shutdown")
        check(repl.wait_exit() == 0, "exit status after shutdown")
        wait_gone(repl.pids + [agent_pid], "shutdown")
    finally:
        repl.close()


def test_eof_is_shutdown(repl_path):
    repl = JsonRepl(repl_path)
    try:
        opened = repl.ok({"id": 1, "op": "open", "type": "shell"})
        repl.proc.stdin.close()
        check(repl.wait_exit() == 0, "exit status after EOF")
        wait_gone([opened["pid"]], "EOF")
    finally:
        repl.close()


def test_truncation(repl_path):
    repl = JsonRepl(repl_path, ["--max-result-bytes", "64"])
    try:
        repl.ok({"id": 1, "op": "open", "type": "shell"})
        sent = repl.ok({"id": 2, "op": "send", "sessionId": "pty-1",
                        "text": "for i in $(seq 1 50); do printf '\\xc3\\xa9'; done; echo"})
        check(sent["truncated"] is True and len(sent["viewport"].encode()) <= 64, sent)
        repl.ok({"id": 3, "op": "shutdown"})
        check(repl.wait_exit() == 0, "exit status")
    finally:
        repl.close()


def sandbox_unavailable():
    """Why this machine cannot run a confined session, or None."""
    if shutil.which("bwrap") is None:
        return "bwrap is not installed"
    probe = subprocess.run(["bwrap", "--unshare-pid", "--die-with-parent", "--new-session",
                            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                            "--tmpfs", "/tmp", "--unshare-net", "--", "true"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return None if probe.returncode == 0 else "bwrap cannot create the namespaces here"


def test_confined_open(repl_path):
    # The JSON face's sandbox and network fields reach the shell backend: a confined session.
    why = sandbox_unavailable()
    if why:
        print(f"skipped: {why}", flush=True)
        return
    workspace = os.path.realpath(tempfile.mkdtemp(prefix="dshpty-json-ws-"))
    elsewhere = os.path.realpath(tempfile.mkdtemp(prefix="dshpty-json-other-"))
    # The operator's policy: workspace-write is the default and the floor, the network off.
    repl = JsonRepl(repl_path, ["--sandbox", "workspace-write", "--network", "off", "--workspace", workspace])
    try:
        opened = repl.ok({"id": 1, "op": "open", "type": "shell", "cwd": workspace})
        check(opened["confinement"] == {"mode": "workspace-write", "network": "off",
                                        "writableRoots": [workspace],
                                        "protected": opened["confinement"]["protected"]}, opened)
        inside = repl.ok({"id": 2, "op": "send", "sessionId": "pty-1",
                          "text": "touch inside && echo WROTE; touch /etc/dshpty-json-probe"})
        check("WROTE" in inside["viewport"] and "Read-only file system" in inside["viewport"], inside)
        check(os.path.exists(os.path.join(workspace, "inside")), "the workspace write")
        listed = repl.ok({"id": 3, "op": "list"})
        check(listed["sessions"][0]["confinement"]["mode"] == "workspace-write", listed)
        repl.error({"id": 4, "op": "open", "type": "shell", "sandbox": "strict"}, "INVALID_ARGUMENT")
        # Below the floor, or outside the workspace: refused, naming why; never clamped.
        below = repl.error({"id": 5, "op": "open", "type": "shell", "cwd": workspace, "sandbox": "none"},
                           "INVALID_ARGUMENT")
        check("below the operator's floor" in below["message"], below)
        net = repl.error({"id": 6, "op": "open", "type": "shell", "cwd": workspace, "network": "on"},
                         "INVALID_ARGUMENT")
        check("floor" in net["message"], net)
        outside = repl.error({"id": 7, "op": "open", "type": "shell", "cwd": elsewhere}, "INVALID_ARGUMENT")
        check("outside the operator's workspaces" in outside["message"], outside)
        root = repl.error({"id": 8, "op": "open", "type": "shell", "cwd": "/"}, "INVALID_ARGUMENT")
        check("may not be /" in root["message"], root)
        nul = repl.error({"id": 9, "op": "open", "type": "shell", "cwd": workspace + "\u0000/etc"},
                         "INVALID_ARGUMENT")
        check("NUL" in nul["message"], nul)
        # The positive control: read-only is above the floor.
        ro = repl.ok({"id": 10, "op": "open", "type": "shell", "cwd": workspace, "sandbox": "read-only"})
        check(ro["confinement"]["mode"] == "read-only" and ro["confinement"]["writableRoots"] == [], ro)
        repl.ok({"id": 11, "op": "shutdown"})
        check(repl.wait_exit() == 0, "exit status")
        wait_gone([opened["pid"], ro["pid"]], "shutdown")
    finally:
        repl.close()
        shutil.rmtree(workspace, ignore_errors=True)
        shutil.rmtree(elsewhere, ignore_errors=True)


def test_strict_json(repl_path):
    """Duplicate keys are refused (the parser would keep the last), wherever they are and
    however the key is spelt; ids come back exactly as they were sent."""
    repl = JsonRepl(repl_path)
    try:
        repl.ok({"id": 1, "op": "open", "type": "shell"})

        def refused(raw, rid, key):
            line = repl.raw_call(raw)
            r = json.loads(line)
            check(r["ok"] is False and r["error"]["code"] == "INVALID_ARGUMENT", f"{raw!r}: {line!r}")
            check(r["error"]["message"].startswith(f'duplicate key "{key}"'), f"{raw!r}: {line!r}")
            check(r["id"] == rid, f"{raw!r}: answered under {r['id']!r}")
            # Still serving: the shutdown the last key asked for never ran.
            check(repl.proc.poll() is None, f"{raw!r}: the REPL is gone")
            alive = repl.ok({"id": f"alive-{len(repl.raw_lines)}", "op": "list"})
            check(alive["sessions"][0]["sessionId"] == "pty-1", "still serving")

        refused(b'{"id":"dup","op":"list","op":"shutdown"}\n', "dup", "op")
        refused(b'{"id":"esc","op":"list","\\u006fp":"shutdown"}\n', "esc", "op")
        refused(b'{"id":"esc2","\\u006f\\u0070":"shutdown","op":"list"}\n', "esc2", "op")
        refused(b'{"id":"nest","op":"send","sessionId":"pty-1","keys":[{"k":1,"\\u006b":2}]}\n', "nest", "k")
        refused(b'{"id":"own","op":"list","owner":"a","owner":"b"}\n', "own", "owner")
        refused(b'{"id":1,"id":2,"op":"list"}\n', None, "id")
        check(repl.ok({"id": "p", "op": "list"})["sessions"][0]["status"] == {"kind": "running"}, "the session lives")

        # Ids: each echoed byte for byte, however a JSON library would round it.
        for token in [b"9007199254740993", b"1e400", b"-0", b"12345678901234567890123", b"1.50", b"-1E-7",
                      b'"\\u0041-\\ud83d\\ude00"', b'{"n": 9007199254740993}']:
            line = repl.raw_call(b'{"id":' + token + b',"op":"list"}\n')
            check(line.startswith(b'{"id":' + token + b',"ok":true,'), f"id {token!r} came back as {line!r}")
            line = repl.raw_call(b'{"id":' + token + b',"op":"nope"}\n')
            check(line.startswith(b'{"id":' + token + b',"ok":false,'), f"id {token!r} came back as {line!r}")

        # A send under a huge id: a neighbouring id does not reach it, its own does.
        big = b"12345678901234567890123"
        repl.send_raw(b'{"id":' + big + b',"op":"send","sessionId":"pty-1","text":"sleep 300","timeoutMs":600000}\n')
        near = json.loads(repl.raw_call(b'{"id":"near","op":"cancel","sendId":12345678901234567890124}\n'))
        check(near.get("result") != {"cancelled": True}, f"a neighbouring id cancelled the send: {near}")
        check(repl.ok({"id": "own-cancel", "op": "cancel", "sendId": int(big)}) == {"cancelled": True}, "its own id")
        answer = repl.response(int(big))
        check(answer["ok"] is True, answer)
        check(any(l.startswith(b'{"id":' + big + b',"ok":true,') for l in repl.raw_lines), "the send's id, exact")
        check(repl.ok({"id": "last", "op": "shutdown"}) == {}, "shutdown")
        check(repl.wait_exit() == 0, "exit status")
        wait_gone(repl.pids, "shutdown")
    finally:
        repl.close()


def test_lingering_hint(repl_path):
    """After a restart, the name of the session that lingered is NO_SESSION saying how to
    take it over (op attach); a name nobody has is the plain NO_SESSION."""
    state = tempfile.mkdtemp(prefix="dshpty-json-state-")
    os.chmod(state, 0o700)
    first = JsonRepl(repl_path, ["--state-dir", state])
    second = None
    try:
        opened = first.ok({"id": 1, "op": "open", "type": "shell", "name": "agent", "linger": 60})
        first.proc.stdin.close()  # EOF: the host leaves, the session lingers
        check(first.wait_exit() == 0, "exit status after EOF")
        second = JsonRepl(repl_path, ["--state-dir", state])
        error = second.error({"id": 2, "op": "send", "sessionId": "agent", "text": "true"}, "NO_SESSION")
        check('{"op": "attach", "name": "agent"}' in error["message"], error)
        error = second.error({"id": 3, "op": "read", "sessionId": "agent"}, "NO_SESSION")
        check('"op": "attach"' in error["message"], error)
        error = second.error({"id": 4, "op": "send", "sessionId": "nobody", "text": "true"}, "NO_SESSION")
        check("attach" not in error["message"], error)
        attached = second.ok({"id": 5, "op": "attach", "name": "agent"})["sessions"]
        check(len(attached) == 1 and attached[0]["sessionId"], attached)
        second.ok({"id": 6, "op": "close", "sessionId": attached[0]["sessionId"]})
        wait_gone([opened["pid"]], "close after attach")
        check(second.ok({"id": 7, "op": "shutdown"}) == {}, "shutdown")
        check(second.wait_exit() == 0, "exit status")
    finally:
        first.close()
        if second:
            second.close()
        kill_quietly([opened["pid"]] if "opened" in locals() else [])
        shutil.rmtree(state, ignore_errors=True)


def test_helper_killed(repl_path):
    """A session's helper killed (SIGKILL): `list` says the session is lost, as a send's
    SESSION_EXITED does, and a close says the tree's end is unconfirmed; the shell's tree
    goes with the helper here (it was its parent). A helper killed so leaves its PYTHONSTARTUP
    directory (docs/security.md): the host runs with a TMPDIR of the test's, removed after."""
    tmp = tempfile.mkdtemp(prefix="dshpty-json-helper-")
    repl = JsonRepl(repl_path, tmpdir=tmp)
    try:
        opened = repl.ok({"id": 1, "op": "open", "type": "shell", "name": "orphaned"})
        sid = opened["sessionId"]
        with open(f"/proc/{repl.proc.pid}/task/{repl.proc.pid}/children") as f:
            helpers = [int(p) for p in f.read().split()]
        check(len(helpers) == 1, f"one helper: {helpers}")
        os.kill(helpers[0], 9)
        deadline, n = time.monotonic() + DEADLINE_S, 0
        while True:
            n += 1
            status = repl.ok({"id": f"list-{n}", "op": "list"})["sessions"][0]["status"]
            if status["kind"] != "running":
                break
            check(time.monotonic() < deadline, "list said running long after the helper died")
            time.sleep(0.01)  # polling a condition with a deadline
        check(status["kind"] == "lost" and "without reporting quiescence" in status["reason"], status)
        repl.error({"id": 2, "op": "send", "sessionId": sid, "text": "true"}, "SESSION_EXITED")
        closed = repl.error({"id": 3, "op": "close", "sessionId": sid}, "BACKEND_FAILED")
        check("may still be running" in closed["message"], closed)
        wait_gone([opened["pid"]], "the shell of a killed helper")
    finally:
        repl.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    path = sys.argv[1]
    for test in (test_main_flow, test_eof_is_shutdown, test_truncation, test_confined_open, test_strict_json,
                 test_lingering_hint, test_helper_killed):
        print(f"--- {test.__name__}", flush=True)
        test(path)
    print("ok")
