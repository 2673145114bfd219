"""Exact prompts, end to end, for one shell dialect: drives the real `dshpty-repl --json` the
way an agent does (requests written at once, real timing, no waiting for the right moment)
and checks what settled each send, the status and cwd from the shell's marks, and the
output lines themselves (not just the echo of the command).

    prompts_e2e.py PATH/TO/dshpty-repl bash|zsh|fish

Scenarios (docs/shell-backend.md, "Marks" and "Dialects"; docs/tool-protocol.md):
  multi-line     three commands, a heredoc (fish: a begin ... end block), a for loop: one
                 result with every line's output and the last status, 20 times each
  type-ahead     50 rounds: `sleep 0.6` left running (idle), then `echo ahead-N` at once
  prompt-changes the user's and a virtualenv's prompt changes and hooks: marks, status, cwd hold
  forged-marks   output posing as our marks (no nonce, a wrong one) does not end a send
  sourced-forgery  a sourced file's prompt and prompt hook print a D of 0 with the real
                 nonce: `false` still says 1
  nonce-environ  the nonce is in no /proc/PID/environ (shell, helper); the shell still marks
                 with it
  rc             rc user reads the user's startup file; one that exits fails the open;
                 rc none ignores it
  nested         the dialect's own shell inside the session, then back out
  status-cwd     exit status and cwd
  hidden-input   `read -s` (bash, zsh) and python's getpass (every dialect): inputHidden
  signal-then-send  10 rounds: SIGINT to a running job and, at once, `echo after-N`
  cancel         a cancelled send's job dies of SIGINT: status 130
  history        private history: nothing written to HOME, nothing recalled by a new session

Every repl runs with a temporary HOME (and cwd) of its own, removed at the end; every session
is closed and the repl shut down (killed, with its sessions, when a scenario failed). A
failing check names the scenario, the request and the result; the other scenarios still run.
Exit 0 on pass, 1 on failure, 77 when the dialect's shell is not installed.
"""

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

RESPONSE_DEADLINE_S = 30.0  # a bound on any one response (every send has a timeoutMs below it)
SEND_TIMEOUT_MS = 20000
PROMPT = "dsh> "  # rc none's prompt in every dialect
TRACE = bool(os.environ.get("PROMPTS_E2E_TRACE"))  # print every request and response


class Failure(Exception):
    pass


def show(value, limit=3000):
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def pid_alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def lines_of(text):
    return [line.rstrip() for line in text.replace("\r", "").split("\n")]


class Repl:
    """One `dshpty-repl --json` with a temporary HOME of its own."""

    def __init__(self, repl_path, dialect):
        self.dialect = dialect
        self.tmp = tempfile.TemporaryDirectory(prefix="dshpty-prompts-")
        self.home = os.path.realpath(self.tmp.name)
        env = dict(os.environ)
        env["HOME"] = self.home
        # The user's startup files are the temporary HOME's, wherever the environment says.
        for name in ("ZDOTDIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "HISTFILE", "ENV", "BASH_ENV"):
            env.pop(name, None)
        self.proc = subprocess.Popen([repl_path, "--json"], cwd=self.home, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=sys.stderr, start_new_session=True)
        self.buffer = b""
        self.responses = {}
        self.next_id = 0
        self.pids = []
        self.sessions = []

    # ---- the wire ----

    def new_id(self):
        self.next_id += 1
        return self.next_id

    def write(self, *requests):
        """Writes the requests in one write: they reach the repl together."""
        data = b"".join((json.dumps(r) + "\n").encode() for r in requests)
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def response(self, rid, request):
        deadline = time.monotonic() + RESPONSE_DEADLINE_S
        while rid not in self.responses:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Failure(f"no response within {RESPONSE_DEADLINE_S} s to {show(request)}")
            ready, _, _ = select.select([self.proc.stdout], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                raise Failure(f"the repl closed its stdout before answering {show(request)}")
            self.buffer += chunk
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                r = json.loads(line)
                self.responses[r.get("id")] = r
        r = self.responses.pop(rid)
        if TRACE:
            print(f"  > {show(request, 400)}\n  < {show(r, 600)}", flush=True)
        result = r.get("result")
        if isinstance(result, dict) and isinstance(result.get("pid"), int):
            self.pids.append(result["pid"])
        for field in ("viewport", "motd", "delta"):
            if isinstance(result, dict) and isinstance(result.get(field), str):
                text = result[field]
                if "\x1b" in text or "133;" in text:
                    raise Failure(f"a mark or an escape reached the {field}: request {show(request)} "
                                  f"result {show(result)}")
        return r

    def call(self, request):
        request = dict(request, id=self.new_id())
        self.write(request)
        return request, self.response(request["id"], request)

    def ok(self, request):
        request, r = self.call(request)
        if r.get("ok") is not True:
            raise Failure(f"request {show(request)} failed: {show(r)}")
        return r["result"]

    # ---- sessions ----

    def open(self, **fields):
        fields.setdefault("shell", self.dialect)
        result = self.ok(dict({"op": "open", "type": "shell"}, **fields))
        self.sessions.append(result["sessionId"])
        return result["sessionId"], result

    def close(self, sid):
        self.ok({"op": "close", "sessionId": sid})
        self.sessions.remove(sid)

    def send(self, sid, text, **fields):
        request = dict({"op": "send", "sessionId": sid, "text": text, "timeoutMs": SEND_TIMEOUT_MS}, **fields)
        request, r = self.call(request)
        if r.get("ok") is not True:
            raise Failure(f"send {show(request)} failed: {show(r)}")
        return Sent(request, r["result"])

    def shutdown(self):
        for sid in list(self.sessions):
            self.close(sid)
        self.ok({"op": "shutdown"})
        self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=RESPONSE_DEADLINE_S)
        except subprocess.TimeoutExpired:
            raise Failure("the repl did not exit after shutdown")
        if code != 0:
            raise Failure(f"the repl exited {code} after shutdown")

    def destroy(self):
        """Whatever happened: no repl, session or temporary directory is left."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except (BrokenPipeError, OSError):
                pass
        deadline = time.monotonic() + RESPONSE_DEADLINE_S
        while any(pid_alive(p) for p in self.pids) and time.monotonic() < deadline:
            time.sleep(0.05)  # polling for the helpers' own kill, with a deadline
        leaked = [p for p in self.pids if pid_alive(p)]
        for pid in leaked:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.tmp.cleanup()
        return leaked


class Sent:
    """A send's request and result, with checks that say both when they fail."""

    def __init__(self, request, result):
        self.request = request
        self.result = result
        self.lines = lines_of(result.get("viewport", ""))

    def fail(self, what):
        raise Failure(f"{what}\n    request: {show(self.request)}\n    result:  {show(self.result)}")

    def expect(self, condition, what):
        if not condition:
            self.fail(what)
        return self

    def at_prompt(self, exit_code=None, cwd=None):
        """Settled at the shell's own prompt, by its marks, with the status and cwd."""
        r = self.result
        self.expect(r["waitReason"] == "stdin_read", "expected waitReason stdin_read")
        self.expect(r.get("evidence") == "prompt_marks", "expected evidence prompt_marks")
        self.expect(isinstance(r["exitCode"], int), "expected an exitCode")
        self.expect(isinstance(r["cwd"], str) and r["cwd"].startswith("/"), "expected a cwd")
        if exit_code is not None:
            self.expect(r["exitCode"] == exit_code, f"expected exitCode {exit_code}")
        if cwd is not None:
            self.expect(r["cwd"] == cwd, f"expected cwd {cwd!r}")
        self.expect(r["sessionStatus"] == {"kind": "running"}, "expected the session running")
        return self

    def probe_read(self, hidden=None):
        """Settled by the stdin probe: a reader other than the shell's own prompt."""
        r = self.result
        self.expect(r["waitReason"] == "stdin_read", "expected waitReason stdin_read")
        self.expect(r.get("evidence") == "stdin_probe", "expected evidence stdin_probe")
        self.expect(r["exitCode"] is None and r["cwd"] is None, "expected no exitCode or cwd")
        if hidden is not None:
            self.expect(r["inputHidden"] is hidden, f"expected inputHidden {hidden}")
        return self

    def has_line(self, *wanted):
        for line in wanted:
            self.expect(line in self.lines, f"expected the output line {line!r}")
        return self

    def lacks_line(self, *unwanted):
        for line in unwanted:
            self.expect(line not in self.lines, f"did not expect the line {line!r}")
        return self

    def prompt_shows(self, fragment):
        tail = [line for line in self.lines if line.strip()]
        self.expect(tail and tail[-1].endswith(fragment.rstrip()),
                    f"expected the prompt {fragment!r} to end the viewport")
        return self


def status_command(dialect, n):
    """A command whose status is n, in the dialect."""
    return f"sh -c 'exit {n}'" if dialect == "fish" else f"(exit {n})"


# ---- scenarios -------------------------------------------------------------------------

def multi_line(repl, dialect):
    sid, _ = repl.open()
    status = lambda n: status_command(dialect, n)
    for n in range(20):
        # Three commands: every line's output, the last one's status.
        repl.send(sid, f"echo one-{n}\necho two-{n}\n{status(4)}").at_prompt(exit_code=4) \
            .has_line(f"one-{n}", f"two-{n}").lacks_line(f"one-{n - 1}", f"two-{n - 1}")
        # A heredoc is one command (fish has none: a block is).
        if dialect == "fish":
            block = f"begin\n  echo alpha-{n}\n  echo beta-{n}\n  sh -c 'exit 7'\nend"
        else:
            block = f"sh -c 'cat; exit 7' <<EOF\nalpha-{n}\nbeta-{n}\nEOF"
        sent = repl.send(sid, block).at_prompt(exit_code=7).has_line(f"alpha-{n}", f"beta-{n}")
        if dialect == "bash":
            # Read as one command and echoed as typed: the echo is told in one line.
            sent.expect(sent.lines[0] == f"[typed 4 lines, {len(block)} bytes]" and "EOF" not in sent.lines,
                        "the heredoc's echo told as [typed 4 lines, ...]")
        # A for loop over several lines is one command: the status of its last body command.
        if dialect == "fish":
            loop = f"for i in 1 2 3\n  echo item-{n}-$i\n  sh -c \"exit $i\"\nend"
        else:
            loop = f"for i in 1 2 3\ndo\n  echo item-{n}-$i\n  (exit $i)\ndone"
        repl.send(sid, loop).at_prompt(exit_code=3).has_line(f"item-{n}-1", f"item-{n}-2", f"item-{n}-3")
    if dialect == "bash":
        # A 100-line heredoc: one line for its 100 lines of echo, then its output whole.
        body = [f"row-{i:03d} " + "x" * 40 for i in range(98)]
        text = "cat <<EOF\n" + "\n".join(body) + "\nEOF"
        sent = repl.send(sid, text).at_prompt(exit_code=0)
        # The line stands for the echo only when the shell echoed exactly what was typed: a
        # send written before readline took the terminal back is echoed by the kernel first
        # (seen about once in two loaded runs), and then the echo stays, the output's tail
        # with it.
        if sent.lines[0].startswith("[typed"):
            sent.expect(sent.lines[0] == f"[typed 100 lines, {len(text)} bytes]" and sent.lines[1:99] == body,
                        "a 100-line heredoc: one line for the echo, the output whole")
        else:
            sent.expect(sent.lines[0] == "cat <<EOF" and body[-10:] == sent.lines[-11:-1],
                        "a 100-line heredoc echoed as the kernel did: the echo, then the output's tail")
        # Lines that are commands of their own keep their echo (output between them), even
        # when a line's text equals the output before it.
        sent = repl.send(sid, "echo x\nx")
        sent.expect(sent.lines[:2] == ["echo x", "x"] and not any(l.startswith("[typed") for l in sent.lines),
                    "separate commands keep their echo")
    repl.close(sid)


def type_ahead(repl, dialect):
    sid, _ = repl.open()
    typed_ahead = 0
    for n in range(50):
        started = time.monotonic()
        sleeping = repl.send(sid, "sleep 0.6", idleMs=150)
        if sleeping.result["waitReason"] != "inferred_idle":
            # A machine so loaded that 150 ms of quiet never came within the sleep: then the
            # send must have waited for the sleep's own end, at the prompt.
            sleeping.at_prompt(exit_code=0).expect(time.monotonic() - started >= 0.6,
                                                   f"round {n}: settled at a prompt while sleep 0.6 ran")
        else:
            typed_ahead += 1
        # At once, while the sleep still runs: the line waits in the terminal's queue.
        repl.send(sid, f"echo ahead-{n}").at_prompt(exit_code=0).has_line(f"ahead-{n}")
    repl.close(sid)
    print(f"     type-ahead: {typed_ahead} of 50 rounds typed ahead of a running sleep", flush=True)


def prompt_changes(repl, dialect):
    home = repl.home
    odd = os.path.join(home, "a dir; with space")
    os.mkdir(odd)
    activate = os.path.join(home, "activate")
    with open(activate, "w") as f:  # what a virtualenv's bin/activate does to the prompt
        f.write('PS1="(venv) ${PS1:-}"\nexport PS1\n')
    with open(activate + ".fish", "w") as f:  # and its bin/activate.fish
        f.write("functions -c fish_prompt _old_fish_prompt\n"
                "function fish_prompt\n  printf '(venv) '\n  _old_fish_prompt\nend\n")
    sid, _ = repl.open()
    if dialect == "bash":
        changes = [("PS1=broken-prompt", "broken-prompt", None),
                   (r"PS1='\[\e[32m\]green> \[\e[0m\]'", "green> ", None),
                   (f"source '{activate}'", "(venv) green> ", None),
                   ("PROMPT_COMMAND='history -a'", "(venv) green> ", None),
                   ("PROMPT_COMMAND+=(true)", "(venv) green> ", None),
                   ("PROMPT_COMMAND+=('echo pc-ran')", "(venv) green> ", "pc-ran")]
    elif dialect == "zsh":
        changes = [("PROMPT='%~ z> '", " z> ", None),
                   ("PS1=broken-prompt", "broken-prompt", None),
                   ("PROMPT=$'%{\\e[32m%}green> %{\\e[0m%}'", "green> ", None),
                   (f"source '{activate}'", "(venv) green> ", None),
                   ("myhook() { echo hook-ran; return 3; }; precmd_functions+=(myhook)",
                    "(venv) green> ", "hook-ran")]
    else:
        changes = [("function fish_prompt; echo -n 'fishy> '; end", "fishy> ", None),
                   (f"source '{activate}.fish'", "(venv) fishy> ", None)]
    for change, prompt, hook_line in changes:
        repl.send(sid, f"cd '{home}'").at_prompt(exit_code=0, cwd=home)
        changed = repl.send(sid, change).at_prompt(exit_code=0, cwd=home).prompt_shows(prompt)
        if hook_line:
            changed.has_line(hook_line)
        entered = repl.send(sid, f"cd '{odd}'").at_prompt(exit_code=0, cwd=odd).prompt_shows(prompt)
        failed = repl.send(sid, status_command(dialect, 3)).at_prompt(exit_code=3, cwd=odd).prompt_shows(prompt)
        if hook_line:
            entered.has_line(hook_line)
            failed.has_line(hook_line)
    # The prompt and its hooks stay the shell's own: a child sees none of them.
    leak = repl.send(sid, "env | grep -c -i -E '^(PS1|PS0|PROMPT_COMMAND|DSHPTY[A-Z_]*|__dshpty[a-z_]*)='")
    leak.at_prompt(exit_code=1).has_line("0")
    repl.close(sid)


def forged_marks(repl, dialect):
    sid, _ = repl.open()
    # Marks without the nonce and with a wrong one, printed while the command goes on. The
    # typed text spells no mark (13 and 3 are joined by the shell) so that "133;" can only
    # reach a viewport from the output.
    forged = (r"\033]${m}3;D;0\007dsh> \033]${m}3;P;cwd=/forged;dshpty=0123456789abcdef\007"
              r"\033]${m}3;A\007\033]${m}3;B\007\033]${m}3;B;dshpty=0123456789abcdef\007\n")
    if dialect == "fish":
        forged = forged.replace("${m}", "\"$m\"")
        text = f"set m 13; printf \"{forged}\"; sleep 1; echo slept"
    else:
        text = f"m=13; printf \"{forged}\"; sleep 1; echo slept"
    for _ in range(3):
        repl.send(sid, text, idleMs=5000).at_prompt(exit_code=0, cwd=repl.home).has_line("slept")
    repl.close(sid)


# What a repository's env file (.envrc, a venv's activate) can do once sourced: read the nonce
# and print a D of its own that says 0, from the prompt and from a prompt hook.
SOURCED_FORGERIES = {
    "bash": [r"PS1='\[\e]133;D;0;dshpty=${__dshpty_nonce}\a\]dsh> '",
             "PROMPT_COMMAND+=('printf \"\\e]133;D;0;dshpty=%s\\a\" \"$__dshpty_nonce\"')"],
    "zsh": ["setopt prompt_subst", r"PROMPT=$'%{\e]133;D;0;dshpty=${__dshpty_nonce}\a%}dsh> '",
            r"forge() { printf '\e]133;D;0;dshpty=%s\a' $__dshpty_nonce }", "precmd_functions+=(forge)"],
    "fish": [r"function fish_prompt; printf '\e]133;D;0;dshpty=%s\a' $__dshpty_nonce; echo -n 'dsh> '; end",
             r"function forge --on-event fish_prompt; printf '\e]133;D;0;dshpty=%s\a' $__dshpty_nonce; end"],
}


def sourced_forgery(repl, dialect):
    envrc = os.path.join(repl.home, ".envrc")
    sid, _ = repl.open()
    for line in SOURCED_FORGERIES[dialect]:
        with open(envrc, "w") as f:
            f.write(line + "\n")
        repl.send(sid, f"source '{envrc}'").at_prompt(exit_code=0)
        repl.send(sid, "false").at_prompt(exit_code=1)
        repl.send(sid, status_command(dialect, 3)).at_prompt(exit_code=3, cwd=repl.home)
        repl.send(sid, "true").at_prompt(exit_code=0)
    repl.close(sid)


def environ_of(pid):
    with open(f"/proc/{pid}/environ", "rb") as f:
        return f.read()


def parent_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def nonce_environ(repl, dialect):
    """The nonce never travels in an environment: /proc/PID/environ shows the one a process
    was started with to every program of the session, whatever the shell unset since."""
    sid, _ = repl.open()
    # The positive control: the shell holds the nonce (its marks carry it: this send
    # settles by them), and prints it when asked.
    pid_var = "$fish_pid" if dialect == "fish" else "$$"
    shown = repl.send(sid, f"echo nonce=$__dshpty_nonce pid={pid_var}").at_prompt(exit_code=0)
    line = next((l for l in shown.lines if l.startswith("nonce=") and " pid=" in l), None)
    shown.expect(line is not None, "expected the nonce line")
    nonce, pid = line[len("nonce="):].split(" pid=")
    shown.expect(len(nonce) == 16 and all(c in "0123456789abcdef" for c in nonce), f"a nonce, got {nonce!r}")
    helper = parent_of(int(pid))
    for who, owner in (("shell", int(pid)), ("helper", helper)):
        environ = environ_of(owner)
        shown.expect(nonce.encode() not in environ, f"the nonce is in the {who}'s /proc/{owner}/environ")
        shown.expect(b"DSHPTY_NONCE=" + nonce[:4].encode() not in environ, f"DSHPTY_NONCE in the {who}'s environ")
    # And the shell still marks every prompt with it.
    repl.send(sid, "cd /tmp").at_prompt(exit_code=0, cwd="/tmp")
    repl.close(sid)


def long_line(repl, dialect):
    # A line longer than the terminal's width: its echo in the result is the line as typed
    # (readline and zle scroll it sideways on a dumb terminal, zsh and fish redraw it with
    # cursor moves on xterm), on both terminals, every time.
    words = " ".join(f"word{i:03d}" for i in range(60))
    for terminal in ("dumb", "xterm"):
        sid, _ = repl.open(terminal=terminal)
        for n in range(5):
            line = f"echo {words} end-{n}"
            sent = repl.send(sid, line).at_prompt(exit_code=0).has_line(f"{words} end-{n}")
            sent.expect(sent.result["viewport"].startswith(line + "\n"), f"{terminal}: the echo is the line typed")
        # No C mark for a line the shell does not run: its own words stay (a syntax error).
        broken = "echo )" if dialect != "fish" else "echo )"
        failed = repl.send(sid, broken)
        failed.expect(failed.result["waitReason"] == "stdin_read", "a syntax error comes back at the prompt")
        failed.expect("echo )" in failed.result["viewport"] and len(lines_of(failed.result["viewport"])) > 2,
                      f"{terminal}: the shell's error is in the viewport")
        repl.close(sid)


def startup_files(repl_path, dialect):
    repl = Repl(repl_path, dialect)
    try:
        home = repl.home
        if dialect == "bash":
            rc = os.path.join(home, ".bashrc")
            good = "export FROM_RC=yes\nPS1='rcprompt> '\n"
        elif dialect == "zsh":
            rc = os.path.join(home, ".zshrc")
            good = "export FROM_RC=yes\nPROMPT='rcprompt> '\n"
        else:
            rc = os.path.join(home, ".config", "fish", "config.fish")
            os.makedirs(os.path.dirname(rc))
            good = "set -gx FROM_RC yes\nfunction fish_prompt; echo -n 'rcprompt> '; end\n"
        with open(rc, "w") as f:
            f.write(good)

        sid, _ = repl.open(rc="user")
        repl.send(sid, "echo \"from-rc:$FROM_RC\"").at_prompt(exit_code=0, cwd=home) \
            .has_line("from-rc:yes").prompt_shows("rcprompt> ")
        repl.send(sid, status_command(dialect, 5)).at_prompt(exit_code=5, cwd=home).prompt_shows("rcprompt> ")
        repl.close(sid)

        # rc none (the default) ignores the file.
        sid, opened = repl.open(rc="none")
        repl.send(sid, "echo \"from-rc:$FROM_RC\"").at_prompt(exit_code=0, cwd=home) \
            .has_line("from-rc:").prompt_shows(PROMPT)
        repl.close(sid)

        # A startup file that exits: the open fails, naming the startup files. (fish's `exit`
        # in config.fish ends only that file, so there the file replaces the shell.)
        with open(rc, "w") as f:
            f.write("exec sh -c 'exit 7'\n" if dialect == "fish" else "exit 7\n")
        request, r = repl.call({"op": "open", "type": "shell", "shell": dialect, "rc": "user"})
        if r.get("ok") is not False or r["error"]["code"] != "BACKEND_FAILED" \
                or "rc: user" not in r["error"]["message"]:
            if r.get("ok"):
                repl.sessions.append(r["result"]["sessionId"])
            raise Failure(f"rc user with a startup file that exits: expected BACKEND_FAILED naming "
                          f"rc: user\n    request: {show(request)}\n    result:  {show(r)}")
        # A startup file that hangs fails the same way, but only after the shell's start-up
        # timeout (10 s), which the repl has no option to shorten: not tested here.
        repl.shutdown()
    finally:
        leaked = repl.destroy()
    if leaked:
        raise Failure(f"processes left behind: {leaked}")


def nested_shell(repl, dialect):
    sid, _ = repl.open()
    inner = {"bash": "bash --norc --noprofile", "zsh": "zsh -f", "fish": "fish --no-config --private"}[dialect]
    repl.send(sid, inner).probe_read()
    repl.send(sid, "echo inner").probe_read().has_line("inner")
    repl.send(sid, "exit").at_prompt(exit_code=0)
    repl.send(sid, "echo outer").at_prompt(exit_code=0).has_line("outer").prompt_shows(PROMPT)
    repl.send(sid, status_command(dialect, 6)).at_prompt(exit_code=6)
    repl.close(sid)


def status_and_cwd(repl, dialect):
    home = repl.home
    sid, _ = repl.open()
    repl.send(sid, "false").at_prompt(exit_code=1)
    repl.send(sid, "true").at_prompt(exit_code=0)
    repl.send(sid, "sh -c 'exit 42'").at_prompt(exit_code=42)
    repl.send(sid, "cd /").at_prompt(exit_code=0, cwd="/")
    repl.send(sid, f"cd '{home}'").at_prompt(exit_code=0, cwd=home)
    # A name the cwd mark must encode: its separator, a percent, UTF-8, BEL and a newline
    # (printf makes it, so the line typed holds none of them).
    made = r'''"$(printf '%s/w;x %%41 \303\251\a\nz' "$HOME")"'''
    repl.send(sid, f"mkdir -p {made} && cd {made}").at_prompt(exit_code=0, cwd=f"{home}/w;x %41 \u00e9\x07\nz")
    repl.send(sid, "cd ..").at_prompt(exit_code=0, cwd=home)
    repl.close(sid)


def hidden_input(repl, dialect):
    sid, _ = repl.open()
    # The shell's own `read -s` (bash, zsh); python's getpass everywhere (fish's
    # read cannot be told from the terminal's modes: it reads through its own editor).
    if dialect != "fish":
        repl.send(sid, "read -s secret").probe_read(hidden=True)
        repl.send(sid, "hunter2").at_prompt(exit_code=0)
        repl.send(sid, "echo \"got:$secret\"").at_prompt(exit_code=0).has_line("got:hunter2")
    getpass = (f"'{sys.executable}' -c 'import getpass; print(\"pw:\" + getpass.getpass(\"Pass: \"))'")
    repl.send(sid, getpass).probe_read(hidden=True)
    repl.send(sid, "swordfish").at_prompt(exit_code=0).has_line("pw:swordfish")
    repl.close(sid)


def send_right_after(repl, what, first, sid, text, first_ok=lambda result: True):
    """Writes `first` and a send of `text` in one write, so the send follows it at once;
    both must succeed (`first_ok` judges the first's result). The send's Sent."""
    first = dict(first, id=repl.new_id())
    send = {"op": "send", "sessionId": sid, "text": text, "timeoutMs": SEND_TIMEOUT_MS, "id": repl.new_id()}
    repl.write(first, send)
    r = repl.response(first["id"], first)
    if r.get("ok") is not True or not first_ok(r["result"]):
        raise Failure(f"{what}: {first['op']} failed\n    request: {show(first)}\n    result:  {show(r)}")
    r = repl.response(send["id"], send)
    if r.get("ok") is not True:
        raise Failure(f"{what}: send after {first['op']} failed\n    request: {show(send)}\n    result:  {show(r)}")
    return Sent(send, r["result"])


def signal_then_send(repl, dialect):
    sid, _ = repl.open()
    # A send written at once after the signal is the new prompt's, with its own line.
    for n in range(10):
        running = repl.send(sid, "sleep 30", idleMs=200)
        running.expect(running.result["waitReason"] == "inferred_idle", f"round {n}: sleep 30 should idle")
        sig = {"op": "signal", "sessionId": sid, "signal": "SIGINT"}
        sent = send_right_after(repl, f"round {n}", sig, sid, f"echo after-{n}",
                                lambda result: result.get("delivered") is True)
        sent.at_prompt(exit_code=0).has_line(f"after-{n}")
    repl.close(sid)


def resize_then_send(repl, dialect):
    # A line editor repaints its prompt on a resize (bash's repaint repeats its P mark, with
    # the prompt's count): written at once after the resize, the send still ends at the
    # prompt after its own command, with its output.
    sid, _ = repl.open()
    for n in range(10):
        resize = {"op": "resize", "sessionId": sid, "rows": 30 + n % 2, "cols": 100 + n}
        sent = send_right_after(repl, f"round {n}", resize, sid, f"sleep 0.05; echo resized-{n}")
        sent.at_prompt(exit_code=0).has_line(f"resized-{n}")
    repl.close(sid)


def cancel(repl, dialect):
    sid, _ = repl.open()
    status = "$status" if dialect == "fish" else "$?"
    for n in range(3):
        # A real SIGINT: the job dies of it (status 130).
        long = {"op": "send", "sessionId": sid, "text": "sleep 30", "idleMs": 60000, "timeoutMs": 60000,
                "id": repl.new_id()}
        repl.write(long)
        seen = ""
        deadline = time.monotonic() + RESPONSE_DEADLINE_S
        while "sleep 30" not in seen:  # the typed line's echo: the shell has it
            if time.monotonic() > deadline:
                raise Failure(f"cancel round {n}: the send's echo never came: {seen!r}")
            seen += repl.ok({"op": "output", "sendId": long["id"]})["delta"]
            if "sleep 30" not in seen:
                time.sleep(0.02)  # polling a condition with a deadline
        cancelled = repl.ok({"op": "cancel", "sendId": long["id"]})
        if cancelled != {"cancelled": True}:
            raise Failure(f"cancel round {n}: expected cancelled true, got {show(cancelled)}")
        r = repl.response(long["id"], long)
        if r.get("ok") is not True:
            raise Failure(f"cancel round {n}: the cancelled send failed\n    request: {show(long)}\n"
                          f"    result:  {show(r)}")
        Sent(long, r["result"]).at_prompt(exit_code=130)
        repl.send(sid, f"echo \"was-{n}:{status}\"").at_prompt(exit_code=0).has_line(f"was-{n}:130")
    repl.close(sid)


def history(repl_path, dialect):
    repl = Repl(repl_path, dialect)
    try:
        home = repl.home
        # A user whose startup file keeps history in the usual file: private wins over it.
        if dialect == "bash":
            files = [os.path.join(home, ".bash_history")]
            rc_path, rc = os.path.join(home, ".bashrc"), \
                "HISTFILE=~/.bash_history\nHISTSIZE=1000\nHISTFILESIZE=1000\nshopt -s histappend\n"
        elif dialect == "zsh":
            files = [os.path.join(home, ".zsh_history")]
            rc_path, rc = os.path.join(home, ".zshrc"), \
                "HISTFILE=~/.zsh_history\nHISTSIZE=1000\nSAVEHIST=1000\nsetopt inc_append_history\n"
        else:
            files = [os.path.join(home, ".local", "share", "fish", "fish_history")]
            rc_path, rc = os.path.join(home, ".config", "fish", "config.fish"), "set -g fish_greeting ''\n"
            os.makedirs(os.path.dirname(rc_path))
        with open(rc_path, "w") as f:
            f.write(rc)
        listing = "history | cat" if dialect == "fish" else "history | tail -n 20"
        unique = f"echo secret-{os.getpid()}-history"
        for rc_mode in ("none", "user"):
            sid, _ = repl.open(rc=rc_mode)
            repl.send(sid, unique).at_prompt(exit_code=0).has_line(f"secret-{os.getpid()}-history")
            # Kept in memory for the session itself.
            own = repl.send(sid, listing).at_prompt(exit_code=0)
            own.expect(any(unique in line and "echo" in line for line in own.lines[1:]),
                       f"rc {rc_mode}: the session's own history should list {unique!r}")
            repl.close(sid)
            for path in files:
                if os.path.exists(path):
                    with open(path, errors="replace") as f:
                        content = f.read()
                    if unique in content:
                        raise Failure(f"rc {rc_mode}: history private, yet {path} holds {unique!r}:\n{content}")
            # A new session does not recall it.
            sid, _ = repl.open(rc=rc_mode)
            recalled = repl.send(sid, listing).at_prompt(exit_code=0)
            recalled.expect(not any(unique in line for line in recalled.lines),
                            f"rc {rc_mode}: a new session recalls the first one's {unique!r}")
            repl.close(sid)
        if dialect == "fish":
            # fish keeps history by session name: a file of one's choice is refused.
            request, r = repl.call({"op": "open", "type": "shell", "shell": dialect,
                                    "history": os.path.join(home, "fish_history")})
            if r.get("ok") is not False or r["error"]["code"] != "INVALID_ARGUMENT":
                if r.get("ok"):
                    repl.sessions.append(r["result"]["sessionId"])
                raise Failure(f"fish with a history file: expected INVALID_ARGUMENT\n"
                              f"    request: {show(request)}\n    result:  {show(r)}")
        else:
            # The positive control: a history file of one's choice is written and read back.
            chosen = os.path.join(home, "chosen history")
            sid, _ = repl.open(history=chosen)
            repl.send(sid, unique).at_prompt(exit_code=0)
            repl.close(sid)
            with open(chosen, errors="replace") as f:
                content = f.read()
            if unique not in content:
                raise Failure(f"history {chosen!r}: the command is not in the file after close:\n{content}")
            sid, _ = repl.open(history=chosen)
            recalled = repl.send(sid, listing).at_prompt(exit_code=0)
            recalled.expect(any(unique in line for line in recalled.lines[1:]),
                            f"history {chosen!r}: a new session should recall {unique!r}")
            repl.close(sid)
        repl.shutdown()
    finally:
        leaked = repl.destroy()
    if leaked:
        raise Failure(f"processes left behind: {leaked}")


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("bash", "zsh", "fish"):
        print("usage: prompts_e2e.py DSHPTY_REPL bash|zsh|fish", file=sys.stderr)
        return 2
    repl_path, dialect = os.path.abspath(sys.argv[1]), sys.argv[2]
    if shutil.which(dialect) is None:
        print(f"SKIP: {dialect} is not installed", flush=True)
        return 77

    def in_own_repl(scenario):
        def run():
            repl = Repl(repl_path, dialect)
            try:
                scenario(repl, dialect)
                repl.shutdown()
            finally:
                leaked = repl.destroy()
            if leaked:
                raise Failure(f"processes left behind: {leaked}")
        return run

    scenarios = [
        ("multi-line", in_own_repl(multi_line)),
        ("type-ahead", in_own_repl(type_ahead)),
        ("prompt-changes", in_own_repl(prompt_changes)),
        ("forged-marks", in_own_repl(forged_marks)),
        ("sourced-forgery", in_own_repl(sourced_forgery)),
        ("nonce-environ", in_own_repl(nonce_environ)),
        ("long-line", in_own_repl(long_line)),
        ("rc", lambda: startup_files(repl_path, dialect)),
        ("nested", in_own_repl(nested_shell)),
        ("status-cwd", in_own_repl(status_and_cwd)),
        ("hidden-input", in_own_repl(hidden_input)),
        ("signal-then-send", in_own_repl(signal_then_send)),
        ("resize-then-send", in_own_repl(resize_then_send)),
        ("cancel", in_own_repl(cancel)),
        ("history", lambda: history(repl_path, dialect)),
    ]
    only = os.environ.get("PROMPTS_E2E_ONLY")  # a comma-separated subset, when working on one
    failed = []
    for name, run in scenarios:
        if only and name not in only.split(","):
            continue
        started = time.monotonic()
        try:
            run()
            print(f"ok   {dialect} {name} ({time.monotonic() - started:.1f} s)", flush=True)
        except Failure as e:
            failed.append(name)
            print(f"FAIL {dialect} {name} ({time.monotonic() - started:.1f} s): {e}", flush=True)
    if failed:
        print(f"FAILED ({dialect}): {', '.join(failed)}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
