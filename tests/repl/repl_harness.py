"""Helpers for dshpty-repl's end-to-end tests: a child REPL on pipes with bounded waits,
and process checks. Every wait has a deadline so a broken REPL fails a test instead of
hanging it; nothing here sleeps to paper over a race."""

import json
import os
import select
import signal
import subprocess
import sys
import time
import traceback

DEADLINE_S = 60.0


def fail(message):
    # Where the check was made: a failure in CI is read from this line alone.
    caller = "".join(traceback.format_stack(limit=4)[:-1])
    print(f"FAIL: {message}\n{caller}", file=sys.stderr, flush=True)
    raise SystemExit(1)


def check(condition, message):
    if not condition:
        fail(message)


def pid_alive(pid):
    """True while a process with this pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def wait_gone(pids, what):
    deadline = time.monotonic() + DEADLINE_S
    while any(pid_alive(p) for p in pids):
        if time.monotonic() > deadline:
            fail(f"{what}: processes still alive: {[p for p in pids if pid_alive(p)]}")
        time.sleep(0.02)  # polling a condition with a deadline, not waiting out a race


def kill_quietly(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class JsonRepl:
    """dshpty-repl --json on pipes."""

    def __init__(self, repl, extra_args=(), tmpdir=None):
        """tmpdir: the host's TMPDIR (a case that kills a helper: it leaves its PYTHONSTARTUP
        directory there, docs/security.md; the case removes it after)."""
        env = None if tmpdir is None else dict(os.environ, TMPDIR=tmpdir)
        self.proc = subprocess.Popen(
            [repl, "--json", *extra_args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sys.stderr,
            start_new_session=True, env=env)
        self.buffer = b""
        self.responses = []
        self.raw_lines = []  # every response line as it came, for byte-exact checks
        self.pids = []  # session pids seen, for the leak check and cleanup

    def send_raw(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def request(self, obj):
        self.send_raw((json.dumps(obj) + "\n").encode())

    def _read_some(self, deadline):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            fail(f"no response before the deadline; got so far: {self.responses[-5:]}")
        ready, _, _ = select.select([self.proc.stdout], [], [], remaining)
        if not ready:
            return False
        chunk = os.read(self.proc.stdout.fileno(), 65536)
        if not chunk:
            return None
        self.buffer += chunk
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            self.raw_lines.append(line)
            response = json.loads(line)
            self.responses.append(response)
            result = response.get("result")
            if isinstance(result, dict) and isinstance(result.get("pid"), int):
                self.pids.append(result["pid"])
        return True

    def response(self, rid):
        """The response to request `rid`, waiting for it."""
        deadline = time.monotonic() + DEADLINE_S
        while True:
            for r in self.responses:
                if r.get("id") == rid:
                    return r
            if self._read_some(deadline) is None:
                fail(f"EOF before the response to {rid!r}")

    def call(self, obj):
        self.request(obj)
        return self.response(obj["id"])

    def ok(self, obj):
        r = self.call(obj)
        check(r.get("ok") is True, f"{obj} failed: {r}")
        return r["result"]

    def error(self, obj, code):
        r = self.call(obj)
        check(r.get("ok") is False and r["error"]["code"] == code, f"{obj}: expected {code}, got {r}")
        return r["error"]

    def raw_call(self, data):
        """Sends one raw request line and returns the next response line, as bytes (only for
        requests answered at once, with nothing else in flight)."""
        seen = len(self.raw_lines)
        self.send_raw(data)
        deadline = time.monotonic() + DEADLINE_S
        while len(self.raw_lines) == seen:
            if self._read_some(deadline) is None:
                fail(f"EOF before the response to {data[:80]!r}")
        return self.raw_lines[seen]

    def wait_exit(self):
        try:
            return self.proc.wait(timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            fail("the REPL did not exit")

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        kill_quietly(self.pids)


def run_text_script(repl_path, script):
    """Runs dshpty-repl's text face with `script` on a pipe (no terminal) to its EOF; checks
    it exited 0 and returns what it printed (also printed, for the test log)."""
    proc = subprocess.Popen([repl_path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=sys.stderr, start_new_session=True)
    try:
        out, _ = proc.communicate(script.encode(), timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        fail("text mode did not finish: " + out.decode(errors="replace"))
    text = out.decode()
    print(text)
    check(proc.returncode == 0, f"exit status {proc.returncode}")
    return text
