"""A stop of a job typed through a relay (docs/shell-backend.md, "A send as a job"): the
relay in the terminal's foreground (ssh, script) took the job's line for its far side, whose
processes this session cannot see. The stop sends no signal to the relay (ssh exits on one,
the far login gone): it types ^C through it and answers `stopped: false`, naming the relay
in `remaining`. The far command ends on the ^C, the far shell keeps its state, and the
job's send ends so the session takes sends again. Through the real dshpty-repl --json:

  ssh     a far `python3 -m http.server` over the loopback sshd (sshd_fixture.py; the far
          side is this machine, so the test sees the server listen and end)
  local   the same inside `script -q -c 'bash --norc -i' /dev/null`

Usage: relay_stop_e2e.py REPL ssh|local. Loopback only; every wait has a deadline; a
missing tool is a skip (77) with the reason."""

import os
import shlex
import shutil
import socket
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "repl"))

from repl_harness import JsonRepl, check, fail, pid_alive, wait_gone  # noqa: E402
from sshd_fixture import Skip, SshServer, skip  # noqa: E402

DEADLINE_S = 60


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


def match(seen, program, args):
    head, _, rest = seen.partition("\0")
    return os.path.basename(head).startswith(program) and rest == args


def pid_of(cmdline):
    # argv[0] as the command line says it, or the full path a launcher (a pyenv shim) put there.
    words = cmdline.split()
    want = "\0".join(words[1:]) + "\0"
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        for entry in os.listdir("/proc"):
            try:
                with open(f"/proc/{entry}/cmdline") as f:
                    if entry.isdigit() and match(f.read(), words[0], want) and pid_alive(int(entry)):
                        return int(entry)
            except OSError:
                continue
        time.sleep(0.02)  # polling a condition with a deadline
    fail(f"no process {cmdline!r}")


class Face:
    def __init__(self, repl):
        self.home = tempfile.mkdtemp(prefix="dshpty-relay-stop-")
        os.environ["HOME"] = self.home
        self.repl = JsonRepl(repl, ["--idle-ms", "1500", "--timeout-ms", "60000"])
        self.n = 0

    def call(self, op, **fields):
        self.n += 1
        return self.repl.ok({"id": self.n, "op": op, **fields})

    def send(self, session, text=None, **fields):
        if text is not None:
            fields["text"] = text
        return self.call("send", sessionId=session, **fields)

    def close(self):
        self.repl.close()
        shutil.rmtree(self.home, ignore_errors=True)


def stop_through_relay(face, relay_command, relay_name):
    session = face.call("open", type="shell")["sessionId"]
    login = face.send(session, relay_command)
    check(login["evidence"] == "relay", f"into the relay: {login}")
    kept = face.send(session, "export FARMARK=kept-$((6*7))")
    check(kept["evidence"] == "relay", f"far export: {kept}")
    port = free_port()
    server_line = f"python3 -m http.server {port} --bind 127.0.0.1"
    face.repl.request({"id": "far", "op": "send", "sessionId": session, "background": True, "text": server_line})
    check(face.repl.response("far")["result"] == {"job": "far", "sessionId": session}, "the job's answer")
    server = pid_of(server_line)
    deadline = time.monotonic() + DEADLINE_S
    while not listens(port):
        check(time.monotonic() < deadline, f"the far server never listened on {port}")
        time.sleep(0.05)  # polling a condition with a deadline
    stop = face.call("stop", sendId="far")
    check(stop["stopped"] is False and stop["signals"] == [], f"a relayed stop claims too much: {stop}")
    check(len(stop["remaining"]) == 1, stop)
    relay = stop["remaining"][0]
    check(relay_name in relay["command"] and "relay" in relay["why"] and "^C" in relay["why"], stop)
    check(pid_alive(relay["pid"]), f"the relay {relay} was ended by the stop")
    wait_gone([server], "the far server after the ^C typed through the relay")
    # The job's send ended: the session takes sends again, and the far shell kept its state.
    for n in range(1000):
        out = face.call("output", sendId="far", waitMs=20000)
        if out["done"]:
            break
    check(out["done"], f"the stopped job's send never ended: {out}")
    after = face.send(session, "echo have-$FARMARK")
    check("have-kept-42" in after["viewport"], f"the far shell lost its state: {after}")
    check(pid_alive(relay["pid"]), "the relay is gone")
    left = face.send(session, "exit", idleMs=20000)
    check(left["waitReason"] == "stdin_read" and left["evidence"] == "prompt_marks", f"exit: {left}")


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("ssh", "local"):
        fail(f"usage: {sys.argv[0]} REPL ssh|local")
    repl = sys.argv[1]
    if not shutil.which("python3"):
        skip("no python3")
    if sys.argv[2] == "local":
        if not shutil.which("script"):
            skip("no script(1) (util-linux)")
        face = Face(repl)
        try:
            stop_through_relay(face, "script -q -c 'bash --norc -i' /dev/null", "script")
        finally:
            face.close()
    else:
        try:
            server = SshServer().start()
        except Skip as why:
            skip(str(why))
        face = Face(repl)
        try:
            argv = server.ssh_argv()
            argv[argv.index("-T")] = "-tt"
            stop_through_relay(face, shlex.join(argv) + " 'PS1=far\\$\\  exec bash --norc -i'", "ssh")
        finally:
            face.close()
            server.stop()
    print("ok")


if __name__ == "__main__":
    main()
