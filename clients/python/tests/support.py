"""What the client's tests share: services on a private HOME with host secrets in their
environment, temporary directories removed afterwards, and facts about processes read from
/proc (no test trusts the client's word that a process tree is gone)."""

import os
import shutil
import tempfile
import time
import unittest

import dshpty

# A send that stays live: the program neither prints nor reads the terminal, and the idle
# period is longer than any test.
LIVE = {"idle_ms": 600000, "timeout_ms": 600000}


def alive(pid):
    """Alive and not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


def command_of(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")[0].decode()
    except OSError:
        return ""


def ignores_signal(pid, number):
    with open(f"/proc/{pid}/status") as f:
        line = next(l for l in f if l.startswith("SigIgn:"))
    return bool(int(line.split()[1], 16) & (1 << (number - 1)))


def wait_until(condition, what, timeout=30.0):
    """Bounded polling of a condition the test cannot be told about (a process's state)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.005)
    raise AssertionError(f"timed out waiting until {what}")


def holds_terminal(shell_pid, argv0):
    """A child of the shell named argv0 is the terminal's foreground group: a SIGINT sent
    while bash is still starting a job (before its exec) would be lost."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == shell_pid and fields[2] == fields[5] and command_of(entry).endswith(argv0):
            return True
    return False


def wait_foreground(shell_pid, argv0):
    wait_until(lambda: holds_terminal(shell_pid, argv0), f"{argv0} holds the terminal of shell {shell_pid}")


def output_until(send, text):
    seen = []

    def holds():
        seen.append(send.read_output().delta)
        return text in "".join(seen)

    wait_until(holds, f"the output holds {text!r}")
    return "".join(seen)


def read_pid(path):
    with open(path) as f:
        return int(f.read().strip())


class ClientTest(unittest.TestCase):
    def temp_dir(self):
        path = tempfile.mkdtemp(prefix="dshpty-py-")
        self.addCleanup(shutil.rmtree, path, ignore_errors=True)
        return path

    def service_env(self, **extra):
        return dict(os.environ, HOME=self.temp_dir(), MY_API_KEY="host-secret-1", GITHUB_TOKEN="host-secret-2",
                    **extra)

    def service(self, **options):
        options.setdefault("env", self.service_env())
        service = dshpty.Service(**options)
        self.addCleanup(self.assert_gone_after_close, service)
        return service

    def assert_gone_after_close(self, service):
        service.close()
        self.assertFalse(alive(service.pid), f"dshpty-repl {service.pid} outlived close()")
