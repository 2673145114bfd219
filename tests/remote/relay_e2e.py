"""Relays are not readers, end to end (docs/shell-backend.md, "Relays"): programs that relay
the terminal sleep in poll on the terminal *and* a socket or a PTY master, and a send to
them must settle by quiet output (inferred_idle, evidence "relay"), never stdin_read from
the stdin probe. Through the real dshpty-repl --json:

  ssh     into a second shell over the loopback sshd (sshd_fixture.py): the login and five
          sends in a row each hold their own command's output, none says stdin_read; a
          command that sleeps before it prints, and a check-in after a send that went quiet
          early, get their output; a far `read x` (what cannot be told) settles by quiet
          too, and the answer reaches it; `touch X; exit` runs on the far side and ends
          ssh: back at the shell's prompt, X made, lineState relayed (never swallowed).
          The session is recorded: a password typed at a far `read -rs` is nowhere in the
          file, its marker and input event read "[input through a relay]".
  local   `script -q -c`, a python `select([stdin], [], [], 0.5)` loop and a python PTY relay
          (what apt does with dpkg) run to their end; the positive controls `read x` and
          python `input()` still settle stdin_read (evidence stdin_probe); a cancel through
          a relay interrupts nothing (a line typed ahead of a far command leaves it running),
          answers cancelled false with a reason and says lineState relayed; `touch X; exit`
          through `script -q /dev/null` and python's `pty.spawn` is relayed, X made; a
          typed-ahead send cancelled once written behind a far `sleep 1; seq 1 20000; touch
          done` takes nothing back, so `script` never stalls: `done` comes with no more input.
  far     the same relay on a remote session (`sh -c 'exec SUPERVISOR --stdio'`): the far
          helper's probe says relay, the host's result says so too; `touch X; exit` through
          `script` there is relayed (the far helper's STATE flag), X made.

Usage: relay_e2e.py REPL SUPERVISOR ssh|local|far

Loopback only; every wait has a deadline; the REPL (and with it every session) and sshd are
gone when a case ends. A missing tool is a skip (77) with the reason."""

import os
import shlex
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "repl"))

from repl_harness import JsonRepl, check, fail  # noqa: E402
from sshd_fixture import Skip, SshServer, skip  # noqa: E402

REPL = SUPERVISOR = None
# Quiet output ends a send to a relay; the deadline is never what settles one here. A send
# that runs to the shell's prompt gets a long idle time: the prompt ends it, not the quiet.
IDLE_MS = 3000
TO_THE_END_MS = 20000
# An inner shell behind a relay prints its prompt at once: a shorter quiet opens it (what
# is typed next waits in its terminal if it were slower).
INNER_IDLE_MS = 1000
INNER_SHELL = "script -q -c 'bash --norc -i' /dev/null"
TIMEOUT_MS = 60000

# A python PTY relay, as apt relays dpkg's terminal: the child runs on a PTY of its own,
# the parent sleeps in select on its stdin and the master and copies both ways.
PTY_RELAY = r"""
import os, pty, select, sys
pid, master = pty.fork()
if pid == 0:
    os.execvp("sh", ["sh", "-c", sys.argv[1]])
while True:
    r, _, _ = select.select([0, master], [], [])
    if master in r:
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        os.write(1, data)
    if 0 in r:
        os.write(master, os.read(0, 4096))
os.waitpid(pid, 0)
"""

# A loop that checks for a key between steps (a progress display that quits on `q`).
SELECT_LOOP = ("import select,sys\n"
               "for i in range(3):\n"
               "    select.select([sys.stdin],[],[],0.5)\n"
               "    print('tick', i*7, flush=True)\n")


class Face:
    def __init__(self, extra=()):
        self.home = tempfile.mkdtemp(prefix="dshpty-relay-home-")
        self.state = tempfile.mkdtemp(prefix="dshpty-relay-state-")
        os.environ["HOME"] = self.home
        self.repl = JsonRepl(REPL, ["--idle-ms", str(IDLE_MS), "--timeout-ms", str(TIMEOUT_MS),
                                    "--state-dir", self.state, *extra])
        self.n = 0

    def call(self, op, **fields):
        self.n += 1
        return self.repl.ok({"id": self.n, "op": op, **fields})

    def open(self, type="shell"):
        return self.call("open", type=type)["sessionId"]

    def send(self, session, text=None, **fields):
        if text is not None:
            fields["text"] = text
        return self.call("send", sessionId=session, **fields)

    def close(self):
        self.repl.close()
        shutil.rmtree(self.home, ignore_errors=True)
        shutil.rmtree(self.state, ignore_errors=True)


def show(result):
    return f"{result.get('waitReason')}/{result.get('evidence')}: {result.get('viewport')!r}"


def expect_relay_output(result, needle, what):
    """A send to a relay: its own output, and never a stdin_read from the probe."""
    check(needle in result["viewport"], f"{what}: '{needle}' missing: {show(result)}")
    check(result["waitReason"] == "inferred_idle", f"{what}: expected inferred_idle: {show(result)}")
    check(result["evidence"] == "relay", f"{what}: expected evidence relay: {show(result)}")


def run_to_end(face, session, text):
    return face.send(session, text, idleMs=TO_THE_END_MS)


def expect_prompt(result, needle, what):
    """A relay that ran to its end: back at the shell's prompt with all of its output."""
    check(needle in result["viewport"], f"{what}: '{needle}' missing: {show(result)}")
    check(result["waitReason"] == "stdin_read" and result["evidence"] == "prompt_marks",
          f"{what}: expected the shell's prompt: {show(result)}")


def positive_controls(face, session):
    for text, answer in (("read x; echo got-$x", "got-ok"),
                         ("python3 -c 'print(\"py-\" + input())'", "py-ok")):
        r = face.send(session, text)
        check(r["waitReason"] == "stdin_read" and r["evidence"] == "stdin_probe", f"{text}: {show(r)}")
        expect_prompt(run_to_end(face, session, answer.split("-")[1]), answer, text)


def case_ssh():
    try:
        server = SshServer().start()
    except Skip as why:
        skip(str(why))
    record_dir = tempfile.mkdtemp(prefix="dshpty-relay-casts-")
    face = Face(["--record-dir", record_dir])
    try:
        session = face.open()
        argv = server.ssh_argv()
        argv[argv.index("-T")] = "-tt"
        login = face.send(session, shlex.join(argv) + " 'PS1=far\\$\\  exec bash --norc -i'")
        check(login["waitReason"] == "inferred_idle" and login["evidence"] == "relay", f"login: {show(login)}")
        for n in range(1, 6):
            expect_relay_output(face.send(session, f"echo far-{n}-$(({n}*7))"), f"far-{n}-{n * 7}", f"send {n}")
        # Quiet for less than the idle time first: the output still is this send's.
        expect_relay_output(face.send(session, "sleep 1; echo slept-far", idleMs=5000), "slept-far", "sleep 1")
        # Gone quiet before its output: the next check-in waits for it as a send does.
        early = face.send(session, "sleep 2; echo later-$((6*7))", idleMs=200)
        check(early["waitReason"] == "inferred_idle" and "later-42" not in early["viewport"], f"early: {show(early)}")
        expect_relay_output(face.send(session, idleMs=5000), "later-42", "check-in")
        # What cannot be told: the far shell waits for the user behind the relay. It settles
        # by quiet (never at once), and the answer reaches the far `read`.
        asked = face.send(session, "read -p 'far-question? ' x; echo far-answer-$x")
        expect_relay_output(asked, "far-question?", "far read")
        expect_relay_output(face.send(session, "yes"), "far-answer-yes", "the answer")
        # A far password: the local terminal is raw under ssh, its echo-off unseen; the
        # recording shows nothing typed through the relay.
        secret = "FarS3cret-" + os.urandom(4).hex()
        expect_relay_output(face.send(session, "read -rs -p 'FarPassword: ' pw; echo; echo far-${#pw}-chars"),
                            "FarPassword:", "far read -s")
        expect_relay_output(face.send(session, secret), f"far-{len(secret)}-chars", "the far password")
        cast = open(os.path.join(record_dir, os.listdir(record_dir)[0]), encoding="utf-8").read()
        check(secret not in cast, "the far password is in the recording")
        check(cast.count('"m", "[input through a relay]"') >= 2 and '"i", "[input through a relay]"' in cast,
              "the relay's input is not marked in the recording")
        relayed_exit(face, session, "ssh")
        positive_controls(face, session)
    finally:
        face.close()
        server.stop()
        shutil.rmtree(record_dir, ignore_errors=True)


def case_local():
    face = Face()
    try:
        session = face.open()
        expect_prompt(run_to_end(face, session, "script -q -c 'echo start; sleep 1; echo done-$((6*7))' /dev/null"),
                      "done-42", "script")
        expect_prompt(run_to_end(face, session, "python3 -c " + shlex.quote(SELECT_LOOP)), "tick 14", "select loop")
        relay = "python3 -c " + shlex.quote(PTY_RELAY) + " 'echo start; sleep 1; echo relayed-$((6*7))'"
        expect_prompt(run_to_end(face, session, relay), "relayed-42", "pty relay")
        # The relay waits for its child's input: a send to it settles by quiet, and its
        # answer is its own.
        asking = "python3 -c " + shlex.quote(PTY_RELAY) + " 'read x; echo inner-$x'"
        r = face.send(session, asking)
        check(r["waitReason"] == "inferred_idle" and r["evidence"] == "relay", f"pty relay asking: {show(r)}")
        expect_prompt(run_to_end(face, session, "ok"), "inner-ok", "pty relay answered")
        # One inner shell behind `script` for both cancel checks.
        inner = face.send(session, INNER_SHELL, idleMs=INNER_IDLE_MS)
        check(inner["evidence"] == "relay", f"inner shell: {show(inner)}")
        cancel_through_relay(face, session)
        cancel_never_stalls(face, session)
        expect_prompt(run_to_end(face, session, "exit"), "", "leave the inner shell")
        for relay in (INNER_SHELL, "python3 -c 'import pty; pty.spawn([\"bash\", \"--norc\", \"-i\"])'"):
            inner = face.send(session, relay, idleMs=INNER_IDLE_MS)
            check(inner["evidence"] == "relay", f"{relay}: {show(inner)}")
            relayed_exit(face, session, relay.split()[0])
        positive_controls(face, session)
    finally:
        face.close()


def start_send(face, session, text, idle_ms=IDLE_MS):
    """A send answered later (face.repl.response): its id."""
    face.n += 1
    rid = face.n
    face.repl.request({"id": rid, "op": "send", "sessionId": session, "text": text,
                       "idleMs": idle_ms, "timeoutMs": 60000})
    return rid


def wait_for_echo(face, rid, needle):
    seen = ""
    for _ in range(400):  # the far side has the line once its echo came back
        seen += face.call("output", sendId=rid)["delta"]
        if needle in seen:
            return
        time.sleep(0.01)
    fail(f"the echo never came: {seen!r}")


def relayed_exit(face, session, relay, far=False):
    """`touch X; exit` typed to the far shell behind `relay`: it runs there and ends the
    relay. The line ran, so the result never says swallowed ("send it again": the re-sent
    exit would end the session); it says relayed, naming the relay."""
    made = os.path.join(face.home, "far-ran")
    if os.path.exists(made):
        os.unlink(made)
    r = run_to_end(face, session, f"touch {made}; exit")
    expect_prompt(r, "", f"exit through {relay}")
    check(os.path.exists(made), f"{relay}: the far side did not run the line: {show(r)}")
    check(r.get("lineState") == "relayed", f"{relay}: expected lineState relayed: {r}")
    behind = r.get("queuedBehind") or {}
    # A far channel names the relay's pid only: the far side sends no command lines.
    check(behind.get("pid", 0) > 0 and (far or relay in behind.get("command", "")),
          f"{relay}: expected queuedBehind the relay: {r}")


def cancel_never_stalls(face, session):
    """A cancel takes nothing back from a relay's input queue: taking it back from under a
    `script` that had polled the terminal readable left script asleep in its read, and the
    far command stalled on a full terminal until the next keystroke (1 to 2 rounds in 8).
    Each round's cancel comes once the line is written (an `output` answered first: the
    host wrote it from the loop before it read the cancel; sent together, the cancel came
    before the write every time and only ever made a check-in), so a cancel that took it
    back fails the round at once (takenBackBytes, or cancelled true for a line the relay
    read), whether or not script then stalls; and each round waits for the far command's
    file with no further input to the session. A cancel still before the write typed
    nothing (true, a check-in); one after it did nothing and says so (false, a reason,
    lineState relayed); neither took anything back. Run in an inner shell behind script."""
    for n in range(3):
        done = os.path.join(face.home, f"stall-done-{n}")
        face.send(session, f"sleep 1; seq 1 20000; touch {done}", idleMs=300)
        # Its own quiet is short: the round waits for the far command's file, not for it.
        rid = start_send(face, session, f"echo AHEAD-{n}", idle_ms=300)
        face.call("output", sendId=rid)
        answer = face.call("cancel", sendId=rid)
        cancelled = face.repl.response(rid)
        check(cancelled.get("ok") is True, f"round {n}: {str(cancelled)[:300]}")
        said = {k: cancelled["result"].get(k) for k in ("waitReason", "evidence", "takenBackBytes", "lineState")}
        check(said["takenBackBytes"] is None, f"round {n}: nothing is taken back from a relay: {answer} {said}")
        if answer["cancelled"] is False:
            check("relay" in answer.get("reason", ""), f"round {n}: a declined cancel says why: {answer}")
            check(said["lineState"] == "relayed", f"round {n}: expected relayed: {said}")
        else:
            check(said["lineState"] is None, f"round {n}: a cancel before the write: {answer} {said}")
        for _ in range(3000):  # a deadline, not a bound: the far command needs no input to end
            if os.path.exists(done):
                break
            time.sleep(0.01)
        check(os.path.exists(done), f"round {n}: the far command stalled behind the relay: {said}")
        face.send(session, idleMs=500)  # a check-in: what the far side printed since


def cancel_through_relay(face, session):
    """A cancel of a send the relay took interrupts nothing: no mark says whether the far
    side runs the line or holds it behind a command of its own, and a ^C there would hit
    that command. The result says the line is queued behind the relay; the key C-c, sent
    on purpose, still interrupts the far foreground. A line typed ahead of a far command
    and cancelled leaves that command to finish. Run in an inner shell behind script."""
    # Typed ahead: the far command in front runs to its end; the cancelled line runs after.
    front = face.send(session, "sleep 2; echo FIRST-$((6*7))", idleMs=300)
    check("FIRST-42" not in front["viewport"], f"the far command ended too soon: {show(front)}")
    rid = start_send(face, session, "echo SECOND-$((6*7))")
    wait_for_echo(face, rid, "echo SECOND")
    check(face.call("cancel", sendId=rid)["cancelled"] is False, "a cancel through a relay does nothing")
    cancelled = face.repl.response(rid)
    check(cancelled.get("ok") is True, f"the cancelled send: {cancelled}")
    check(cancelled["result"].get("lineState") == "relayed",
          f"a relayed cancel says its line went to the relay: {cancelled['result']}")
    both = face.send(session, "echo THIRD-$((6*7))")  # the far shell's prompt ends nothing here: quiet does
    seen = cancelled["result"]["viewport"] + both["viewport"]
    check("FIRST-42" in seen and "SECOND-42" in seen and "THIRD-42" in seen,
          f"the command in front was interrupted: {show(cancelled['result'])} then {show(both)}")
    # Its own command: the cancel leaves it too; C-c is how the caller interrupts it.
    rid = start_send(face, session, "sleep 20; echo LONG-$((6*7))")
    wait_for_echo(face, rid, "sleep 20")
    check(face.call("cancel", sendId=rid)["cancelled"] is False, "cancel")
    check(face.repl.response(rid)["result"].get("lineState") == "relayed", "own command: relayed")
    face.send(session, keys=["C-c"], idleMs=300)
    after = face.send(session, "echo ALIVE-$((6*7))")
    expect_relay_output(after, "ALIVE-42", "the inner shell reads again")
    check("LONG-42" not in after["viewport"], f"the far command ran on after C-c: {show(after)}")


def case_far():
    command = shlex.join(["sh", "-c", f"exec {shlex.quote(SUPERVISOR)} --stdio"])
    face = Face(["--remote", f"far={command}"])
    try:
        session = face.open(type="far")
        expect_prompt(run_to_end(face, session, "script -q -c 'echo start; sleep 1; echo done-$((6*7))' /dev/null"),
                      "done-42", "far script")
        asking = "python3 -c " + shlex.quote(PTY_RELAY) + " 'read x; echo inner-$x'"
        r = face.send(session, asking)
        check(r["waitReason"] == "inferred_idle" and r["evidence"] == "relay", f"far pty relay asking: {show(r)}")
        expect_prompt(run_to_end(face, session, "ok"), "inner-ok", "far pty relay answered")
        inner = face.send(session, "script -q -c 'bash --norc -i' /dev/null")
        check(inner["evidence"] == "relay", f"far inner shell: {show(inner)}")
        relayed_exit(face, session, "script", far=True)
    finally:
        face.close()


def main():
    global REPL, SUPERVISOR
    if len(sys.argv) != 4 or sys.argv[3] not in ("ssh", "local", "far"):
        fail(f"usage: {sys.argv[0]} REPL SUPERVISOR ssh|local|far")
    REPL, SUPERVISOR = sys.argv[1], sys.argv[2]
    if not shutil.which("python3"):
        skip("no python3")
    if sys.argv[3] == "local" and not shutil.which("script"):
        skip("no script(1) (util-linux)")
    {"ssh": case_ssh, "local": case_local, "far": case_far}[sys.argv[3]]()
    print("ok")


if __name__ == "__main__":
    main()
