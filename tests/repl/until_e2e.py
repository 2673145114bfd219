"""Sends with `until` through dshpty-repl --json, with real programs: a script printing
"ready" after a second (the echo of the command holds "ready" too), a python3 http.server
on a free loopback port (quiet until it listens: `idleMs` far shorter than its start), and
a command that exits 3 before its condition holds (it answers as it would without one).
Bad conditions are INVALID_ARGUMENT naming the field, and type nothing."""

import os
import socket
import sys
import tempfile
import time

from repl_harness import JsonRepl, check, wait_gone


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def interrupt(repl, rid):
    repl.ok({"id": rid, "op": "signal", "sessionId": "pty-1", "signal": "SIGINT"})
    back = repl.ok({"id": rid + "-look", "op": "send", "sessionId": "pty-1", "idleMs": 20000})
    check(back["waitReason"] == "stdin_read", back)


def until_output(repl):
    sent = repl.ok({"id": "out", "op": "send", "sessionId": "pty-1", "idleMs": 100, "timeoutMs": 60000,
                    "text": "sh -c 'sleep 1; echo ready; sleep 60'", "until": {"output": "ready"}})
    check(sent["waitReason"] == "matched" and sent["match"] == {"output": "ready"}, sent)
    interrupt(repl, "int-out")


def until_port(repl):
    port = free_port()
    sent = repl.ok({"id": "port", "op": "send", "sessionId": "pty-1", "idleMs": 100, "timeoutMs": 60000,
                    "text": f"python3 -m http.server {port} --bind 127.0.0.1 >/dev/null 2>&1",
                    "until": {"port": port}})
    check(sent["waitReason"] == "matched", sent)
    match = sent["match"]
    check(match["port"] == port and match["address"] == "127.0.0.1" and match["pid"] > 0, sent)
    with open(f"/proc/{match['pid']}/comm") as f:
        check(f.read().startswith("python3"), f"pid {match['pid']} is not the server")
    with socket.create_connection(("127.0.0.1", port), timeout=10):
        pass
    interrupt(repl, "int-port")


def exits_first(repl):
    sent = repl.ok({"id": "exit3", "op": "send", "sessionId": "pty-1", "idleMs": 50, "timeoutMs": 60000,
                    "text": "sh -c 'sleep 0.3; exit 3'", "until": {"output": "^never$", "port": free_port()}})
    check(sent["waitReason"] == "stdin_read" and sent["exitCode"] == 3 and "match" not in sent, sent)


def refused(repl):
    for n, until in enumerate(({"output": "("}, {"port": 0}, {"port": 65536}, {"port": "80"}, {},
                               {"output": "x", "colour": 1}, "ready")):
        err = repl.error({"id": f"bad{n}", "op": "send", "sessionId": "pty-1", "text": "echo typed-bad",
                          "until": until}, "INVALID_ARGUMENT")
        check("until" in err["message"], err)
    look = repl.ok({"id": "look-bad", "op": "send", "sessionId": "pty-1", "idleMs": 20000})
    check("typed-bad" not in look["viewport"], look)


def job_result(repl, job, owner=None):
    """Polls `output` until the job is done (bounded): its final result."""
    deadline = time.monotonic() + 60
    n = 0
    while time.monotonic() < deadline:
        n += 1
        req = {"id": f"{job}-out{n}", "op": "output", "sendId": job}
        if owner:
            req["owner"] = owner
        out = repl.ok(req)
        if out.get("done"):
            return out["result"]
        time.sleep(0.05)
    check(False, f"job {job} did not end")


def background(repl):
    sent = repl.ok({"id": "bg", "op": "send", "sessionId": "pty-1", "idleMs": 50, "background": True,
                    "text": "sleep 1; echo job-done; (exit 4)"})
    check(sent == {"job": "bg", "sessionId": "pty-1"}, sent)
    busy = repl.error({"id": "busy", "op": "send", "sessionId": "pty-1", "text": "true"}, "SEND_ACTIVE")
    check('send "bg" runs; {"op": "output", "sendId": "bg"} reads it' in busy["message"], busy)
    result = job_result(repl, "bg")
    check(result["waitReason"] == "stdin_read" and result["exitCode"] == 4, result)
    check("job-done" in result["viewport"], result)
    # Any number of readers: the result stays; another owner's reader is refused.
    check(job_result(repl, "bg") == result, "a second read of the result")
    repl.error({"id": "foreign", "op": "output", "sendId": "bg", "owner": "someone-else"}, "FOREIGN_SESSION")
    # Shown once: a check-in after it repeats nothing.
    look = repl.ok({"id": "bg-look", "op": "send", "sessionId": "pty-1", "idleMs": 20000})
    check("job-done" not in look["viewport"], look)


def main():
    repl_path = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="dshpty-until-") as home:
        os.environ["HOME"] = home
        repl = JsonRepl(repl_path)
        try:
            repl.ok({"id": 1, "op": "open", "type": "shell", "name": "main"})
            until_output(repl)
            until_port(repl)
            exits_first(repl)
            refused(repl)
            background(repl)
            repl.request({"id": "bye", "op": "shutdown"})
            check(repl.wait_exit() == 0, "shutdown")
            wait_gone(repl.pids, "after shutdown")
        finally:
            repl.close()
    print("ok: sends with until through the JSON face")


if __name__ == "__main__":
    main()
