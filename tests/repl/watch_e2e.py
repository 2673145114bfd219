"""People watching (docs/watch.md), end to end: a real `dshpty-repl --json` host (the agent)
with a private --state-dir and HOME, and a person's `dshpty-repl watch` in a real terminal
(tmux: send-keys in, capture-pane out).

- `watch --list` names the session, with no observer; a watcher attaches, the host's `list`
  counts it; the watcher's pane shows the session's screen and one status line (owner,
  session, at the prompt, 40x160 clipped to the pane);
- the agent opens vim through the JSON face: the pane's rows are the session's own screen
  rows (read by the agent with `read screen`), and the status line says busy with vim;
- keys typed into the watcher reach nothing; q detaches (exit 0); the agent's next send
  works and the count is back to 0; the session's scrollback holds nothing the person typed;
- a raw observer that sends anything after its request is cut off and changes nothing;
- refusals: a peer of another uid (setpriv; the socket made reachable on purpose), a watcher
  started inside a session (positive control: the same command outside worked), and a host
  started with --no-watch, which offers nothing and makes no socket.
Every wait polls a condition with a deadline; nothing sleeps to cover a race."""

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from repl_harness import DEADLINE_S, JsonRepl, check, fail, kill_quietly, wait_gone
from tty_e2e import Tmux

REPL = os.path.abspath(sys.argv[1])
WORK = tempfile.mkdtemp(prefix="dshpty-watch-")
STATE = os.path.join(WORK, "state")
HOME = os.path.join(WORK, "home")
os.mkdir(HOME)
os.environ["HOME"] = HOME


def wait_until(predicate, what):
    deadline = time.monotonic() + DEADLINE_S
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            fail(f"timed out waiting for {what}")
        time.sleep(0.05)  # polling a condition, with a deadline


def watch_cmd(*args):
    return [REPL, "watch", "--state-dir", STATE, *args]


def run_watch(*args, prefix=()):
    return subprocess.run([*prefix, *watch_cmd(*args)], capture_output=True, text=True, timeout=DEADLINE_S)


def observers(host, sid):
    for s in host.ok({"id": f"list-{time.monotonic()}", "op": "list"})["sessions"]:
        if s["sessionId"] == sid:
            return s["observers"]
    fail(f"no session {sid} in list")


def raw_observer(path, request):
    """Connects as an observer would and sends `request` (bytes); returns the socket."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(DEADLINE_S)
    conn.connect(path)
    conn.sendall(request)
    return conn


def read_lines(conn, until):
    """Lines from `conn` until one satisfies `until` (or EOF); returns them all."""
    buf, lines = b"", []
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            return lines
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            lines.append(json.loads(line))
            if until(lines[-1]):
                return lines


def pane_rows(tmux):
    return tmux.tmux("capture-pane", "-t", "t", "-p").split("\n")


def leave_socket(pid):
    """A socket file named for host `pid`, as a host killed with SIGKILL leaves it."""
    path = os.path.join(STATE, f"host-{pid}.watch")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.close()
    return path


def main():
    # A dead host's socket is swept by the next host; a live pid's is left alone.
    os.mkdir(STATE, 0o700)
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale, alive = leave_socket(gone.pid), leave_socket(os.getpid())
    host = JsonRepl(REPL, ["--state-dir", STATE])
    quiet = None
    tmux = None
    try:
        opened = host.ok({"id": 1, "op": "open", "type": "shell", "name": "main", "terminal": "xterm"})
        sid = opened["sessionId"]
        sock = os.path.join(STATE, f"host-{host.proc.pid}.watch")
        check(not os.path.exists(stale) and os.path.exists(alive), "the dead host's socket swept, the live pid's kept")
        os.unlink(alive)
        check(os.path.exists(sock), f"the host listens on {sock}")
        check(oct(os.stat(sock).st_mode & 0o777) == "0o600", "the watch socket is 0600")

        listed = run_watch("--list")
        check(listed.returncode == 0, f"watch --list: {listed}")
        check(f"{host.proc.pid}/{sid}  main  owner=default  running" in listed.stdout and "observers=0" in listed.stdout,
              f"watch --list names the session: {listed.stdout}")

        # ---- a person watches from a smaller terminal ----------------------------------
        tmux = Tmux(shlex.join(watch_cmd("main")))
        tmux.tmux("resize-window", "-t", "t", "-x", "80", "-y", "24")
        tmux.wait_text("at the prompt")
        screen = tmux.wait_text("40x160 clipped to 23x80")
        check(f" watch default / main ({sid}) | at the prompt" in screen, f"the status line: {screen}")
        wait_until(lambda: observers(host, sid) == 1, "the host's list to count the watcher")

        # ---- the agent runs vim; the pane mirrors the session's own screen ---------------
        target = os.path.join(WORK, "notes.txt")
        with open(target, "w") as f:
            f.write("".join(f"line {i} of the notes\n" for i in range(1, 61)))
        started = host.ok({"id": 2, "op": "send", "sessionId": sid, "text": f"vim -u NONE -N {target}",
                           "idleMs": 500})
        check(started.get("screen", {}).get("alternate") is True, f"vim is on the alternate screen: {started}")

        def mirrored():
            shot = host.ok({"id": f"shot-{time.monotonic()}", "op": "read", "sessionId": sid, "screen": True})["screen"]
            want = [line[:80].rstrip() for line in shot["lines"][:23]]
            want += [""] * (23 - len(want))
            rows = pane_rows(tmux)
            got = [r.rstrip() for r in rows[:23]]
            return got == want and "busy" in rows[23] and "vim -u NONE -N" in rows[23]
        wait_until(mirrored, "the pane to show vim's screen rows and a busy status line")
        screen = tmux.screen()
        check("line 1 of the notes" in screen and "line 23 of the notes" in screen, f"vim's text: {screen}")

        # Keys typed into the watcher reach nothing (nothing carries them).
        tmux.type(":!echo typed-by-watcher")
        tmux.keys("Enter")
        quit_vim = host.ok({"id": 3, "op": "send", "sessionId": sid, "keys": [":", "q", "Enter"], "submit": False})
        check(quit_vim["waitReason"] == "stdin_read", f"vim quit: {quit_vim}")
        tmux.wait_for(lambda s: "at the prompt" in s and "line 1 of the notes" not in s, "the prompt after vim")

        # q detaches the watcher; the agent notices nothing.
        tmux.type("q")
        tmux.wait_for(lambda s: tmux.exit_known(), "the watcher to exit")
        check(tmux.pane("#{pane_dead_status}") == "0", "the watcher exits 0 on q")
        after = host.ok({"id": 4, "op": "send", "sessionId": sid, "text": "echo after-$((20+22))"})
        check("after-42" in after["viewport"] and after["waitReason"] == "stdin_read", f"the next send: {after}")
        wait_until(lambda: observers(host, sid) == 0, "the count back at 0")
        page = host.ok({"id": 5, "op": "read", "sessionId": sid, "count": 500})["text"]
        check("typed-by-watcher" not in page, f"the watcher's keys reached the session: {page}")
        tmux.kill()
        tmux = None

        # ---- an observer only reads: anything after its request ends it --------------------
        conn = raw_observer(sock, json.dumps({"op": "watch", "session": "main"}).encode() + b"\n")
        first = read_lines(conn, lambda m: "lines" in m)
        check(first[-1]["sessionId"] == sid and first[-1]["observers"] == 1, f"the first frame: {first[-1]}")
        conn.sendall(json.dumps({"op": "send", "sessionId": sid, "text": "echo written-by-observer"}).encode() + b"\n")
        rest = read_lines(conn, lambda m: "error" in m)
        check(rest and "an observer only reads" in rest[-1].get("error", {}).get("message", ""),
              f"a write attempt is refused: {rest[-1:]}")
        check(conn.recv(100) == b"", "the connection is closed after the refusal")
        conn.close()
        page = host.ok({"id": 6, "op": "read", "sessionId": sid, "count": 500})["text"]
        check("written-by-observer" not in page, "the observer's bytes changed nothing")
        # A request line followed by more in the same write is refused as well.
        conn = raw_observer(sock, b'{"op":"list"}\n{"op":"close"}\n')
        got = read_lines(conn, lambda m: True)
        check("error" in got[0], f"more than one request line is refused: {got}")
        conn.close()

        # ---- refusals --------------------------------------------------------------------
        # Another uid, with the socket made reachable on purpose: only SO_PEERCRED stands in
        # the way. (The person's own `watch` as that uid refuses the directory before that.)
        setpriv = shutil.which("setpriv")
        system_python = "/usr/bin/python3"
        if setpriv and os.getuid() == 0 and os.access(system_python, os.X_OK):
            for d in (WORK, STATE):
                os.chmod(d, 0o711)
            os.chmod(sock, 0o666)
            try:
                # It says nothing: the host refuses before it reads a word.
                probe = ("import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
                         "print(s.makefile().readline())")
                out = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                                      system_python, "-c", probe, sock],
                                     capture_output=True, text=True, timeout=DEADLINE_S)
                other = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                                        *watch_cmd("main")], capture_output=True, text=True, timeout=DEADLINE_S)
            finally:
                for d in (WORK, STATE):
                    os.chmod(d, 0o700)
                os.chmod(sock, 0o600)
            check(f"refused: peer uid 65534 is not {os.getuid()}" in out.stdout, f"another uid is refused: {out}")
            check(other.returncode != 0 and "owned by uid" in other.stderr, f"watch as another uid: {other}")
        else:
            print("setpriv, root or /usr/bin/python3 missing: the other-uid refusal is not checked", flush=True)

        # Inside a session: the same `watch --list` that worked outside is refused there.
        inside = host.ok({"id": 7, "op": "send", "sessionId": sid, "timeoutMs": 60000,
                          "text": shlex.join(watch_cmd("--list")) + "; echo status=$?"})
        check("runs inside a dshpty session" in inside["viewport"] and "status=1" in inside["viewport"],
              f"a watcher inside a session is refused: {inside['viewport']}")
        inside = host.ok({"id": 8, "op": "send", "sessionId": sid, "timeoutMs": 60000,
                          "text": shlex.join(watch_cmd("main")) + " </dev/null; echo status=$?"})
        check("runs inside a dshpty session" in inside["viewport"] and "status=1" in inside["viewport"],
              f"watching from inside a session is refused: {inside['viewport']}")

        # A session's command posing as a host (a socket of its own in the state directory,
        # answering with a made-up session): watchers skip it, saying why.
        fake = os.path.join(STATE, "host-999999.watch")
        impostor = ("import json,os,socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(4); "
                    "print('listening', flush=True)\n"
                    "while True:\n c,_=s.accept(); c.sendall(json.dumps({'host':999999,'sessions':[{'sessionId':'pty-9',"
                    "'name':'made-up','owner':'x','status':'running'}]}).encode()+b'\\n'); c.close()")
        host.ok({"id": 9, "op": "send", "sessionId": sid, "background": True,
                 "text": f"{sys.executable} -c {shlex.quote(impostor)} {fake}"})
        wait_until(lambda: os.path.exists(fake), "the impostor's socket")
        listed = run_watch("--list")
        check("999999/pty-9" not in listed.stdout and "main" in listed.stdout and
              f"skipping {fake}: refused: peer pid" in listed.stderr and "runs inside a dshpty session" in listed.stderr,
              f"an impostor host inside a session is skipped: {listed}")
        host.ok({"id": 10, "op": "signal", "sessionId": sid, "signal": "SIGINT"})
        wait_until(lambda: host.ok({"id": f"job-{time.monotonic()}", "op": "output", "sendId": 9}).get("done"),
                   "the impostor's job to end")
        host.ok({"id": 11, "op": "send", "sessionId": sid, "text": f"rm -f {fake}; echo removed"})

        # --no-watch: that host offers nothing and makes no socket; the other still answers.
        quiet = JsonRepl(REPL, ["--state-dir", STATE, "--no-watch"])
        quiet.ok({"id": 1, "op": "open", "type": "shell", "name": "hidden"})
        check(not os.path.exists(os.path.join(STATE, f"host-{quiet.proc.pid}.watch")), "--no-watch makes no socket")
        refused = run_watch("hidden")
        check(refused.returncode == 1 and 'no session "hidden" to watch' in refused.stderr, f"--no-watch: {refused}")
        listed = run_watch("--list")
        check("hidden" not in listed.stdout and "main" in listed.stdout, f"--list without the quiet host: {listed}")
        check(all(s["observers"] == 0 for s in quiet.ok({"id": 2, "op": "list"})["sessions"]), "no observers there")

        for repl in (quiet, host):
            check(repl.ok({"id": 99, "op": "shutdown"}) == {}, "shutdown")
            check(repl.wait_exit() == 0, "exit status")
        wait_gone(host.pids + quiet.pids, "shutdown")
        check(not os.path.exists(sock), "the watch socket is removed at exit")
        check(os.listdir(STATE) == [], f"the state directory is left empty: {os.listdir(STATE)}")
    finally:
        if tmux:
            tmux.kill()
        host.close()
        if quiet:
            quiet.close()
        shutil.rmtree(WORK, ignore_errors=True)
    print("watch e2e: ok")


if __name__ == "__main__":
    main()
