"""dshpty-repl's text mode in a real terminal: the REPL runs under tmux (its own server
socket), keys go in with send-keys and the screen comes back with capture-pane. Checks the
exact texts of docs/tool-protocol.md, --open-main, Tab completion, history, errors, Ctrl-C at the prompt
(nothing) and during `send main sleep 300` (the send returns and the session stays usable),
and Ctrl-D (exit 0, every session's tree gone). The tmux server is always killed, and its
socket lives in a private temporary directory that is removed with it (tmux -L would leave
a socket file in /tmp/tmux-UID behind every run)."""

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from repl_harness import DEADLINE_S, check, fail, kill_quietly, wait_gone


class Tmux:
    def __init__(self, command):
        self.socket_dir = tempfile.mkdtemp(prefix="dshpty-repl-tmux-")
        self.socket = os.path.join(self.socket_dir, "socket")
        try:
            # One tmux command, so the pane cannot exit before it is told to remain.
            self.tmux("-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "150", "-y", "50", command,
                      ";", "set-option", "-t", "t", "remain-on-exit", "on")
        except BaseException:
            self.kill()
            raise

    def tmux(self, *args, check_rc=True):
        result = subprocess.run(["tmux", "-S", self.socket, *args], capture_output=True, text=True,
                                timeout=DEADLINE_S)
        if check_rc and result.returncode != 0:
            fail(f"tmux {args}: {result.stderr}")
        return result.stdout

    def keys(self, *keys):
        self.tmux("send-keys", "-t", "t", *keys)

    def type(self, text):
        self.tmux("send-keys", "-t", "t", "-l", text)

    def screen(self):
        return self.tmux("capture-pane", "-t", "t", "-p", "-J", "-S", "-")

    def wait_for(self, predicate, what):
        deadline = time.monotonic() + DEADLINE_S
        while True:
            screen = self.screen()
            if predicate(screen):
                return screen
            if time.monotonic() > deadline:
                fail(f"timed out waiting for {what}; screen:\n{screen}")
            time.sleep(0.05)  # polling the screen for a condition, with a deadline

    def wait_text(self, text, count=1):
        return self.wait_for(lambda s: s.count(text) >= count, repr(text))

    def pane(self, fmt):
        return self.tmux("display-message", "-t", "t", "-p", fmt).strip()

    def exit_known(self):
        """True once tmux has reaped the pane's process. tmux 3.3a reports pane_dead as soon as
        the pty hangs up, before its SIGCHLD handler has run (tmux PR #4841), and on this
        kernel it sometimes never runs for that exit: the REPL stays a zombie with its status
        unread until the server gets another SIGCHLD (seen 4 in 20 times with plain bash as
        the pane). So while the pane is dead and unreaped, tell the server to look again."""
        if self.pane("#{pane_dead_status}#{pane_dead_signal}") != "":
            return True
        if self.pane("#{pane_dead}") == "1":
            os.kill(int(self.pane("#{pid}")), signal.SIGCHLD)
        return False

    def kill(self):
        try:
            self.tmux("kill-server", check_rc=False)
        finally:
            shutil.rmtree(self.socket_dir, ignore_errors=True)


def main(repl_path, supervisor):
    env = f"DSHPTY_SUPERVISOR={shlex.quote(supervisor)}" if supervisor else ""
    command = f"env {env} TERM=xterm {shlex.quote(repl_path)} --open-main --timeout-ms 600000"
    tmux = Tmux(command)
    pids = []
    try:
        tmux.wait_text("started terminal session pty-1 (main) [type: shell]\n")
        tmux.wait_text("dshpty> ")

        tmux.type("list")
        tmux.keys("Enter")
        screen = tmux.wait_for(lambda s: re.search(r"pty-1 \(main\) \[shell\] running pid=\d+", s), "list")
        pids = [int(p) for p in re.findall(r"pid=(\d+)", screen)]

        tmux.type("send main echo hello-$((6*7))")
        tmux.keys("Enter")
        screen = tmux.wait_text("[session: running]")
        check("hello-42\n" in screen and
              re.search(r"\[wait: stdin_read\]\n\[exit: 0\]\n\[cwd: /[^\n]*\]\n\[session: running\]", screen), screen)

        # Tab completes commands and session names.
        tmux.type("sen")
        tmux.keys("Tab")
        tmux.wait_text("dshpty> send ")
        tmux.type("ma")
        tmux.keys("Tab")
        tmux.wait_text("dshpty> send main ")
        tmux.type("echo tab-$((1+1))")
        tmux.keys("Enter")
        tmux.wait_text("tab-2\n")

        # History: Up recalls the last line.
        tmux.keys("Up")
        tmux.wait_text("dshpty> send main echo tab-$((1+1))", count=2)
        tmux.keys("Enter")
        tmux.wait_text("tab-2\n", count=2)

        tmux.type("bogus")
        tmux.keys("Enter")
        tmux.wait_text('error: INVALID_ARGUMENT: unknown command "bogus" (try help)\n')
        tmux.type("help")
        tmux.keys("Enter")
        tmux.wait_text("quit                           close every session and exit; Ctrl-D (end of input), SIGTERM and\n")

        # Ctrl-C at the prompt does nothing: the REPL is still there, the line still usable.
        tmux.keys("C-c")
        tmux.type("use main")
        tmux.keys("Enter")
        tmux.wait_text("using terminal session pty-1 (main)\n")

        # Ctrl-C during a live send cancels it; the session stays usable.
        prompts = tmux.screen().count("dshpty> ")
        tmux.type("send sleep 300")
        tmux.keys("Enter")
        tmux.wait_text("dshpty> send sleep 300\n")
        tmux.keys("C-c")
        tmux.wait_for(lambda s: s.count("dshpty> ") > prompts, "the prompt after Ctrl-C")
        screen = tmux.screen()
        tail = screen[screen.rfind("dshpty> send sleep 300"):]
        # Interrupted at its prompt: bash reports 128 + SIGINT.
        check("[wait: stdin_read]\n[exit: 130]\n[cwd: " in tail, tail)
        tmux.type("send echo still-$((2+3))")
        tmux.keys("Enter")
        tmux.wait_text("still-5\n")

        tmux.type("read main 0 3")
        tmux.keys("Enter")
        tmux.wait_for(lambda s: re.search(r"\[lines: \d+-\d+ of \d+\]", s), "read footer")
        tmux.type("signal main SIGINT")
        tmux.keys("Enter")
        tmux.wait_for(lambda s: re.search(r"delivered SIGINT to foreground process group \d+\n", s), "signal")

        # Ctrl-D: dispose the service and exit 0.
        tmux.keys("C-d")
        tmux.wait_for(lambda s: tmux.exit_known(), "the REPL's exit status")
        status = tmux.pane("#{pane_dead_status}")
        signal = tmux.pane("#{pane_dead_signal}")
        check(status == "0", f"exit status {status!r}, signal {signal!r}; screen:\n{tmux.screen()}")
        wait_gone(pids, "Ctrl-D")
    finally:
        tmux.kill()
        kill_quietly(pids)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "")
    print("ok")
