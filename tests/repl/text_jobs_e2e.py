"""Jobs on dshpty-repl's text face, in a real terminal (tmux, as tty_e2e.py): a loopback HTTP
server started with `send --background --until-output`, answered once it serves; `list` shows
it; a send to its session is SEND_ACTIVE naming the job, one to another session runs; `output
JOB` shows the job's new text from its own offset (a request the test makes shows up once,
nothing twice); Ctrl-C ends an `output --wait` and the job runs on; `stop JOB` ends the
server (its port is free again) and says which signals went; `output` then gives the end's
status lines, again on every later read; the next send works. Errors: a job that is no
number, an unknown job, a bad regex, a port out of range, a wait of 0. Ctrl-C while a job
waits for its condition interrupts it like a send. Ctrl-D ends the REPL with every tree gone.
A private HOME and state directory, removed afterwards."""

import os
import re
import shlex
import shutil
import socket
import sys
import tempfile
import urllib.error
import urllib.request

from repl_harness import check, kill_quietly, wait_gone
from tty_e2e import Tmux


def port_open(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def children_named(parent, comm):
    """The pids of `parent`'s children whose command name is `comm` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.find("(") + 1:stat.rfind(")")]
        if name == comm and int(stat[stat.rfind(")") + 2:].split()[1]) == parent:
            found.append(int(entry))
    return found


def main(repl_path, supervisor):
    home = tempfile.mkdtemp(prefix="dshpty-repl-jobs-home-")
    state = os.path.join(home, "state")
    env = f"DSHPTY_SUPERVISOR={shlex.quote(supervisor)} " if supervisor else ""
    command = (f"env {env}HOME={shlex.quote(home)} TERM=xterm {shlex.quote(repl_path)} "
               f"--state-dir {shlex.quote(state)} --timeout-ms 600000")
    tmux = Tmux(command)
    pids = []

    def run(line, until):
        """Types one command and waits for `until` (text or a screen predicate) after it;
        returns what the screen shows from the command's own line on."""
        start = f"dshpty> {line}\n"
        before = tmux.screen().count(start)
        tmux.type(line)
        tmux.keys("Enter")

        def tail(screen):
            at = -1
            for _ in range(before + 1):
                at = screen.find(start, at + 1)
                if at < 0:
                    return None
            return screen[at:]

        def ready(screen):
            t = tail(screen)
            return t is not None and (until(t) if callable(until) else until in t)
        return tail(tmux.wait_for(ready, f"{line!r} -> {until!r}"))

    try:
        tmux.wait_text("dshpty> ")
        run("open shell main", "(no startup output)")
        run("open shell other", "(no startup output)")
        out = run("list", lambda t: t.count(" running pid=") == 2)
        pids = [int(p) for p in re.findall(r"pid=(\d+)", out)]

        # The server, answered once it serves.
        out = run("send main --background --until-output 'Serving HTTP' python3 -m http.server 0 --bind 127.0.0.1",
                  "[job: running")
        check("started background job 1 in session pty-1\n" in out, out)
        served = re.search(r'\[wait: matched: output "Serving HTTP on 127\.0\.0\.1 port (\d+) ', out)
        check(served, out)
        port = int(served.group(1))
        check(port_open(port), f"nothing listens on {port}")

        out = run("list", f"listening 127.0.0.1:{port})")
        check(re.search(r"pty-1 \(main\) \[shell\] running pid=\d+ busy \d+s: python3 -m http.server", out), out)

        # The job holds its session's one send; another session is free.
        out = run("send main echo blocked", "error: SEND_ACTIVE")
        check("background job 1 runs: output 1 reads it, stop 1 stops it" in out, out)
        run("send other echo other-$((1+1))", "other-2\n")

        # Its output from the job's own offset: the start, then only what came after.
        out = run("output 1", "[job: running")
        check("\nServing HTTP on 127.0.0.1 port" in out, out)
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/probe-one", timeout=30).close()
        except urllib.error.HTTPError as e:  # the 404 is the answer expected
            check(e.code == 404, f"GET /probe-one: {e}")
        out = run("output 1 --wait 60000", "[job: running")
        check('"GET /probe-one HTTP/1.1" 404' in out, out)
        check("Serving HTTP" not in out, f"shown twice:\n{out}")

        # Ctrl-C ends a long wait at once; the job runs on.
        prompts = tmux.screen().count("dshpty> ")
        tmux.type("output 1 --wait 600000")
        tmux.keys("Enter")
        tmux.wait_text("dshpty> output 1 --wait 600000\n")
        tmux.keys("C-c")
        screen = tmux.wait_for(lambda s: s.count("dshpty> ") > prompts, "the prompt after Ctrl-C")
        tail = screen[screen.rfind("dshpty> output 1 --wait 600000"):]
        check(re.search(r"\(no new output\)\n\[job: running \d+\.\ds\]\n", tail), tail)
        check(port_open(port), "Ctrl-C at `output --wait` ended the job")

        # Errors, each clear.
        run("output x", 'error: INVALID_ARGUMENT: JOB must be a job number as send --background printed it, not "x"')
        run("output 9", "error: INVALID_ARGUMENT: no background job 9 (send --background starts one)")
        run("stop job-1", "error: INVALID_ARGUMENT: JOB must be a job number")
        run("output 1 --wait 0", "error: INVALID_ARGUMENT: --wait must be an integer from 1 to 86400000 ms")
        run("send other --background --until-output '(' true", "error: INVALID_ARGUMENT: until.output:")
        run("send other --background --until-port 70000 true",
            "error: INVALID_ARGUMENT: until.port: 70000 is outside 1..65535")

        # Stop: the signals, the port free again, the end's status through output, then again.
        out = run("stop 1", "stopped job 1 (SIGINT")
        check(not port_open(port), f"port {port} still open after stop")
        out = run("output 1", "[session: running]")
        check(re.search(r"\[wait: stdin_read\]\n\[exit: \d+\]\n\[cwd: /[^\n]*\]\n\[session: running\]", out), out)
        out = run("output 1", "[session: running]")
        check(out.startswith("dshpty> output 1\n(no new output)\n[wait: stdin_read]\n"), out)
        run("stop 1", "stopped job 1 (it had ended)")
        out = run("send main echo next-$((2+3))", "[session: running]")
        check("next-5\n" in out and "[exit: 0]" in out, out)

        # Ctrl-C while a job waits for its condition interrupts it, as a send.
        prompts = tmux.screen().count("dshpty> ")
        line = "send main --background --until-output never-printed sleep 300"
        tmux.type(line)
        tmux.keys("Enter")
        tmux.wait_text(f"dshpty> {line}\n")
        # Nothing prints until the condition holds: the job's own process says it started.
        tmux.wait_for(lambda s: children_named(pids[0], "sleep"), "the job's sleep under main's shell")
        tmux.keys("C-c")
        screen = tmux.wait_for(lambda s: s.count("dshpty> ") > prompts, "the prompt after Ctrl-C")
        tail = screen[screen.rfind(f"dshpty> {line}"):]
        check("started background job 2 in session pty-1\n" in tail and "[exit: 130]\n" in tail, tail)
        run("send main echo after-$((3+4))", "after-7\n")

        tmux.keys("C-d")
        tmux.wait_for(lambda s: tmux.exit_known(), "the REPL's exit status")
        status = tmux.pane("#{pane_dead_status}")
        check(status == "0", f"exit status {status!r}; screen:\n{tmux.screen()}")
        wait_gone(pids, "Ctrl-D")
    finally:
        tmux.kill()
        kill_quietly(pids)
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "")
    print("ok")
