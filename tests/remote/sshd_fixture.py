"""A private OpenSSH server on loopback for the remote suite: its own `sshd -D -e` on
127.0.0.1 and a free port, configured in a temp dir (a generated host key, a generated client
key authorised for the current user, `UsePAM no`), torn down with everything it started.
It never reaches the network and never touches the machine's own ssh configuration.

    with SshServer() as server:          # raises Skip when it cannot run here
        argv = server.ssh_argv(["echo", "ok"])

Run directly, it checks itself: `python3 sshd_fixture.py` prints "ok" through a real ssh
login, or exits 77 (meson's skip) with the reason."""

import atexit
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SKIP_CODE = 77  # meson: the test was skipped
START_DEADLINE_S = 15.0

SSHD = "/usr/sbin/sshd"


class Skip(Exception):
    """The fixture cannot run on this machine; the message says why."""


def skip(reason):
    """Ends the test as skipped (meson's code 77), saying why."""
    print(f"SKIP: {reason}", flush=True)
    raise SystemExit(SKIP_CODE)


def _free_port():
    # The kernel picks a free port; sshd binds it a moment later (a rare race another
    # program could win: start() then retries with another port).
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children(pid):
    """Every live descendant of `pid`, found through /proc (parents before children)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _account_locked(user):
    """True when `user`'s password field starts with '!': sshd (without PAM) refuses even a
    key login to such an account ("account is locked"). False when shadow is unreadable."""
    try:
        with open("/etc/shadow") as f:
            for line in f:
                fields = line.split(":")
                if fields[0] == user:
                    return fields[1].startswith("!")
    except OSError:
        pass
    return False


class SshServer:
    """`sshd -D -e -f CONFIG` on 127.0.0.1:PORT for the current user, in a temp dir."""

    def __init__(self):
        self.dir = None
        self.proc = None
        self.port = None
        self.user = pwd.getpwuid(os.getuid()).pw_name
        self.root = os.getuid() == 0
        self.log_path = None
        self._log = None
        self._registered = False

    # -- start and stop ---------------------------------------------------------------

    def start(self):
        for tool in (SSHD, shutil.which("ssh"), shutil.which("ssh-keygen")):
            if not tool or not os.access(tool, os.X_OK):
                raise Skip("OpenSSH is not installed (needs /usr/sbin/sshd, ssh and ssh-keygen: "
                           "apt-get install openssh-server openssh-client, as tools/dev does)")
        if not os.path.isdir("/run/sshd"):
            # sshd's privilege separation needs this (empty) directory.
            if not self.root:
                raise Skip("/run/sshd is missing and we are not root to create it")
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        if _account_locked(self.user):
            raise Skip(f"the account {self.user} is locked ('!' in /etc/shadow): sshd refuses its key "
                       f"login (usermod -p '*' {self.user} unlocks it for keys only)")
        if not self._registered:
            atexit.register(self.stop)
            self._registered = True
        self.dir = tempfile.mkdtemp(prefix="dshpty-sshd-")
        try:
            self._keys()
            last = None
            for _ in range(3):
                self.port = _free_port()
                self._write_config()
                last = self._launch()
                if last is None:
                    return self
            raise RuntimeError(f"sshd did not start: {last}")
        except BaseException:
            self.stop()
            raise

    def _keys(self):
        for name in ("host_key", "client_key"):
            subprocess.run(["ssh-keygen", "-t", "ed25519", "-N", "", "-q", "-C", f"dshpty-test-{name}",
                            "-f", os.path.join(self.dir, name)],
                           check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        shutil.copyfile(os.path.join(self.dir, "client_key.pub"), os.path.join(self.dir, "authorized_keys"))

    def _write_config(self):
        lines = [
            f"ListenAddress 127.0.0.1",
            f"Port {self.port}",
            f"HostKey {self.dir}/host_key",
            f"PidFile {self.dir}/sshd.pid",
            f"AuthorizedKeysFile {self.dir}/authorized_keys",
            "AuthenticationMethods publickey",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "UseDNS no",
            "PrintMotd no",
            "PrintLastLog no",
            "X11Forwarding no",
            "AllowTcpForwarding no",
            "AllowAgentForwarding no",
            "LogLevel ERROR",
            # The sessions are ours to end: sshd's own keepalives stay off so the tests see
            # only what the transport and the far helper do.
            "ClientAliveInterval 0",
        ]
        if self.root:
            lines.append("PermitRootLogin prohibit-password")
        with open(os.path.join(self.dir, "sshd_config"), "w") as f:
            f.write("\n".join(lines) + "\n")

    def _launch(self):
        """Starts sshd and waits until its port accepts; None, or why it failed."""
        self.log_path = os.path.join(self.dir, "sshd.log")
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", os.path.join(self.dir, "sshd_config")],
                                     stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log,
                                     start_new_session=True)
        deadline = time.monotonic() + START_DEADLINE_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.proc = None
                return f"sshd exited: {self.log()}"
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1.0):
                    return None
            except OSError:
                time.sleep(0.02)  # polling a condition with a deadline
        self._kill_tree()
        return f"sshd did not accept on port {self.port} within {START_DEADLINE_S} s: {self.log()}"

    def log(self):
        """What sshd wrote on stderr so far (its errors)."""
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read().strip()
        except (OSError, TypeError):
            return ""

    def listener_pid(self):
        return self.proc.pid if self.proc and self.proc.poll() is None else None

    def connection_pids(self):
        """The per-connection sshd processes (the listener's children) and what they run."""
        return _children(self.proc.pid) if self.proc else []

    def kill_listener(self):
        """SIGKILL of the listening sshd alone (its connections keep running)."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def _kill_tree(self):
        if not self.proc:
            return
        # The connections first (children of the listener), then the listener.
        for pid in reversed(_children(self.proc.pid)):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc = None

    def stop(self):
        """Kills sshd and every connection it serves, and removes the temp dir. Idempotent."""
        self._kill_tree()
        if self._log:
            self._log.close()
            self._log = None
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    # -- the client ---------------------------------------------------------------------

    def ssh_argv(self, remote_command=()):
        """The client's argv for one non-interactive login running `remote_command` (words; ssh
        joins them with spaces for the far shell, so pass words that need no quoting)."""
        return ["ssh", "-F", "/dev/null", "-T",
                "-o", "BatchMode=yes",
                "-o", "StrictHostKeyChecking=no",
                "-o", f"UserKnownHostsFile={self.dir}/known_hosts",
                "-o", "GlobalKnownHostsFile=/dev/null",
                "-o", "IdentitiesOnly=yes",
                "-o", "LogLevel=ERROR",
                "-i", f"{self.dir}/client_key",
                "-p", str(self.port),
                f"{self.user}@127.0.0.1", *remote_command]

    def bad_port_argv(self, remote_command=()):
        """The same client aimed at a loopback port nothing listens on."""
        argv = self.ssh_argv(remote_command)
        argv[argv.index("-p") + 1] = str(_free_port())
        return argv


def main():
    try:
        with SshServer() as server:
            out = subprocess.run(server.ssh_argv(["echo", "ok"]), stdin=subprocess.DEVNULL,
                                 capture_output=True, text=True, timeout=30)
            print(out.stdout, end="")
            if out.returncode != 0 or out.stdout != "ok\n":
                print(f"FAIL: ssh exited {out.returncode}: {out.stderr.strip()} (sshd: {server.log()})",
                      file=sys.stderr)
                return 1
            refused = subprocess.run(server.bad_port_argv(["true"]), stdin=subprocess.DEVNULL,
                                     capture_output=True, text=True, timeout=30)
            if refused.returncode != 255 or "Connection refused" not in refused.stderr:
                print(f"FAIL: a closed port: {refused.returncode} {refused.stderr.strip()}", file=sys.stderr)
                return 1
            left = server.dir
        if os.path.exists(left):
            print(f"FAIL: {left} left behind", file=sys.stderr)
            return 1
        return 0
    except Skip as why:
        skip(str(why))


if __name__ == "__main__":
    sys.exit(main())
