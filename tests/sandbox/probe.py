#!/usr/bin/python3
"""The sandbox suite's probe: one attempt per run, its outcome on one line.

    probe.py NAME [ARGS]   prints "PROBE NAME ok DETAIL" or "PROBE NAME err ERRNO_NAME"

Run inside a session (confined, or not for the positive control). Each probe tries the
real thing (connect, the system call, the ioctl) and reports the errno the kernel or the
filter gave, so the test asserts an exact outcome. `serve` is the host side: listeners that
answer HOST-ANSWER, for the connect probes to reach or not.
"""
import ctypes
import errno
import fcntl
import os
import pty
import select
import socket
import struct
import sys
import tty

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
ANSWER = b"HOST-ANSWER"

# x86_64 system call numbers the probes make directly.
NR = {"keyctl": 250, "io_uring_setup": 425, "clone3": 435, "fsopen": 430, "personality": 135,
      "pidfd_open": 434, "pidfd_getfd": 438}


def report(name, ok, detail=""):
    print(f"PROBE {name} {'ok' if ok else 'err'} {detail}".rstrip(), flush=True)


def err_name(e):
    return errno.errorcode.get(e, str(e))


def syscall(name, *args):
    ret = libc.syscall(NR[name], *args)
    return ret, (ctypes.get_errno() if ret < 0 else 0)


def by_syscall(name, *args, close=False):
    ret, e = syscall(name, *args)
    if ret < 0:
        report(name, False, err_name(e))
    else:
        if close:
            os.close(ret)
        report(name, True)


def read_answer(sock):
    sock.settimeout(5)
    return sock.recv(64)


def connect(kind, target):
    try:
        if kind == "tcp":
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.settimeout(5)
            s.connect(("127.0.0.1", int(target)))
        else:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(5)
            s.connect("\0" + target if kind == "abstract" else target)
        data = read_answer(s)
        report("connect-" + kind, data == ANSWER, data.decode(errors="replace"))
    except OSError as e:
        report("connect-" + kind, False, err_name(e.errno) if e.errno else type(e).__name__)


def dns(port):
    # A resolver query (a real DNS question for example.com) to a resolver on the
    # loopback: reaching the host's means an answer; a private network namespace has none.
    query = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0) + b"\x07example\x03com\x00" + struct.pack(">HH", 1, 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5)
    try:
        # Connected, as resolvers do, so "nobody listens" comes back as ECONNREFUSED.
        s.connect(("127.0.0.1", int(port)))
        s.send(query)
        data = s.recv(512)
        report("dns", data[:2] == b"\x12\x34", "answered")
    except socket.timeout:
        report("dns", False, "timeout")
    except OSError as e:
        report("dns", False, err_name(e.errno))


def tiocsti():
    # The 64-bit spelling of TIOCSTI (upper bits set; the kernel reads 32) on a terminal
    # of the probe's own, made its controlling terminal in a session of its own, so
    # nothing is typed into the terminal the probe runs on.
    master, slave = pty.openpty()
    tty.setraw(slave)  # the injected byte is readable at once, no line to end
    pid = os.fork()
    if pid == 0:
        os.close(master)
        os.setsid()
        fcntl.ioctl(slave, 0x540E)  # TIOCSCTTY
        try:
            fcntl.ioctl(slave, 0x100005412, b"Z")
            os._exit(0)
        except OSError as e:
            os._exit(e.errno)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        report("tiocsti", False, err_name(code))
        return
    # The injected byte is the terminal's input now: the slave side reads it.
    r, _, _ = select.select([slave], [], [], 5)
    report("tiocsti", bool(r) and os.read(slave, 1) == b"Z", "injected")


def mount(target):
    libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_void_p]
    if libc.mount(b"none", target.encode(), b"tmpfs", 0, None) < 0:
        report("mount", False, err_name(ctypes.get_errno()))
    else:
        libc.umount(target.encode())
        report("mount", True)


def socket_family(family):
    try:
        socket.socket(family, socket.SOCK_STREAM).close()
        report("socket-" + str(family), True)
    except OSError as e:
        report("socket-" + str(family), False, err_name(e.errno))


def fds():
    listed = sorted(int(f) for f in os.listdir("/proc/self/fd"))
    # listdir's own descriptor is closed by now; whichever were open are what it saw.
    open_now = [f for f in listed if os.path.exists(f"/proc/self/fd/{f}")]
    report("fds", True, ",".join(map(str, open_now)))


def signal_pid(pid):
    try:
        os.kill(int(pid), 0)
        report("kill", True)
    except OSError as e:
        report("kill", False, err_name(e.errno))


def write_file(path):
    try:
        with open(path, "w") as f:
            f.write("probe\n")
        report("write", True)
    except OSError as e:
        report("write", False, err_name(e.errno))


def hostname_rewrite():
    # Writes the host name it already has: harmless where it works (the positive control).
    path = "/proc/sys/kernel/hostname"
    try:
        with open(path) as f:
            name = f.read()
        with open(path, "w") as f:
            f.write(name)
        report("hostname", True)
    except OSError as e:
        report("hostname", False, err_name(e.errno))


def proc_writable():
    # Every file of /proc outside the processes' own directories that opens for writing
    # (opening writes nothing): their count and the first few. /proc/pressure is left out:
    # its files are writable by everyone by design (a PSI trigger lives with its open file).
    found = []
    for root, dirs, files in os.walk("/proc", followlinks=False):
        if root == "/proc":
            dirs[:] = [d for d in dirs
                       if not d.isdigit() and d not in ("self", "thread-self", "pressure")]
        for name in files:
            path = os.path.join(root, name)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
            except OSError:
                continue
            os.close(fd)
            found.append(path)
    report("proc-writable", True, f"{len(found)} {' '.join(sorted(found)[:5])}".rstrip())


def tiocsetd():
    # TIOCSETD to N_TTY (the discipline it already has) on a terminal of its own.
    master, slave = pty.openpty()
    try:
        fcntl.ioctl(slave, 0x5423, struct.pack("i", 0))
        report("tiocsetd", True)
    except OSError as e:
        report("tiocsetd", False, err_name(e.errno))


def netlink(protocol):
    try:
        socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, int(protocol)).close()
        report("netlink-" + protocol, True)
    except OSError as e:
        report("netlink-" + protocol, False, err_name(e.errno))


def capabilities():
    with open("/proc/self/status") as f:
        eff = [line.split()[1] for line in f if line.startswith("CapEff:")][0]
    report("caps", True, eff)


def getfd(pid, fd):
    # Takes a copy of another process's fd: the helper's control socket is its fd 3.
    pidfd, e = syscall("pidfd_open", int(pid), 0)
    if pidfd < 0:
        report("pidfd_open", False, err_name(e))
        return
    got, e = syscall("pidfd_getfd", pidfd, int(fd), 0)
    os.close(pidfd)
    if got >= 0:
        os.close(got)
    report("pidfd_getfd", got >= 0, err_name(e) if got < 0 else "")


def serve(args):
    # serve --unix PATH ... --abstract NAME ... : listeners, plus a TCP one and a UDP
    # resolver on 127.0.0.1; prints "READY TCP_PORT UDP_PORT", answers until stdin closes.
    listeners = []
    it = iter(args)
    for flag in it:
        value = next(it)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind("\0" + value if flag == "--abstract" else value)
        s.listen(16)
        listeners.append(s)
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(16)
    listeners.append(tcp)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    print(f"READY {tcp.getsockname()[1]} {udp.getsockname()[1]}", flush=True)
    while True:
        r, _, _ = select.select(listeners + [udp, sys.stdin], [], [])
        if sys.stdin in r and not sys.stdin.readline():
            return
        for s in r:
            if s is udp:
                data, peer = udp.recvfrom(512)
                udp.sendto(data[:2] + b"\x81\x80" + data[4:], peer)
            elif s is not sys.stdin:
                conn, _ = s.accept()
                conn.sendall(ANSWER)
                conn.close()


def main():
    name, args = sys.argv[1], sys.argv[2:]
    if name == "serve":
        serve(args)
    elif name in ("connect-unix", "connect-abstract", "connect-tcp"):
        connect(name.split("-")[1], args[0])
    elif name == "dns":
        dns(args[0])
    elif name == "keyctl":
        by_syscall("keyctl", 0, ctypes.c_long(-3), 0)  # KEYCTL_GET_KEYRING_ID of the session keyring
    elif name == "io_uring":
        params = ctypes.create_string_buffer(120)
        by_syscall("io_uring_setup", 1, params, close=True)
    elif name == "clone3":
        by_syscall("clone3", None, 0)
    elif name == "fsopen":
        by_syscall("fsopen", b"tmpfs", 0, close=True)
    elif name == "personality":
        ret, e = syscall("personality", 0x0040000)  # ADDR_NO_RANDOMIZE
        if ret >= 0:
            syscall("personality", 0)
        report("personality", ret >= 0, err_name(e) if ret < 0 else "")
    elif name == "tiocsti":
        tiocsti()
    elif name == "mount":
        mount(args[0])
    elif name == "vsock":
        socket_family(40)  # AF_VSOCK
    elif name == "fds":
        fds()
    elif name == "kill":
        signal_pid(args[0])
    elif name == "write":
        write_file(args[0])
    elif name == "hostname":
        hostname_rewrite()
    elif name == "proc-writable":
        proc_writable()
    elif name == "tiocsetd":
        tiocsetd()
    elif name == "netlink":
        netlink(args[0])
    elif name == "caps":
        capabilities()
    elif name == "getfd":
        getfd(args[0], args[1])
    else:
        sys.exit("unknown probe " + name)


main()
