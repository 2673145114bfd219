"""A far side that misbehaves on purpose, for the host's stream-channel tests: run as the
transport of a remote backend (its stdin/stdout are the link), it writes its pid to PIDFILE
and then acts out MODE.

    fake_far.py PIDFILE MODE
      exit-words        says a line on stderr, exits 255 (an ssh refused)
      bad-version       WELCOME with protocol version 99, then waits for EOF
      garbage           four 0xff bytes (a frame length of 4 GiB), then waits for EOF
      silent            says nothing, waits for EOF
      prompt-then-mute  WELCOME, STARTED, a prompt; then reads and never answers
      prompt-then-exit  WELCOME, STARTED, a prompt; exits 0 at the first IN frame
      odd-frame         WELCOME, then a frame of type 200
      unknown-error     WELCOME, then ERROR with a code no helper sends yet (99)
"""

import os
import struct
import sys

def prompt(nonce):
    """The marks a far shell prints around its prompt, with the session's nonce."""
    def mark(body):
        return b"\x1b]133;" + body + b";dshpty=" + nonce + b"\x07"
    return mark(b"P;cwd=/") + mark(b"D;0") + mark(b"A") + b"dsh> " + mark(b"B")


def nonce_of(open_payload):
    """DSHPTY_NONCE from an OPEN frame's environment entries (the last strings in it)."""
    key = b"DSHPTY_NONCE="
    at = open_payload.find(key)
    if at < 0:
        return b""
    end = at + len(key)
    while end < len(open_payload) and open_payload[end:end + 1] in b"0123456789abcdef":
        end += 1
    return open_payload[at + len(key):end]


def frame(kind, payload=b""):
    return struct.pack("<IB", len(payload) + 1, kind) + payload


def welcome(version=1):
    name = b"fake"
    return frame(64, struct.pack("<III", version, 0, len(name)) + name)


def out(offset, data):
    return frame(67, struct.pack("<Q", offset) + data)


def send(data):
    os.write(1, data)


def read_frames():
    """Yields (type, payload) until EOF."""
    buf = b""
    while True:
        chunk = os.read(0, 65536)
        if not chunk:
            return
        buf += chunk
        while len(buf) >= 5:
            (length,) = struct.unpack_from("<I", buf)
            if len(buf) < 4 + length:
                break
            yield buf[4], buf[5:4 + length]
            buf = buf[4 + length:]


def drain():
    for _ in read_frames():
        pass


def main():
    pidfile, mode = sys.argv[1], sys.argv[2]
    with open(pidfile, "w") as f:
        f.write(str(os.getpid()))
    if mode == "exit-words":
        sys.stderr.write("fake-ssh: connect to host far port 22: Connection refused\n")
        sys.exit(255)
    if mode == "bad-version":
        send(welcome(99))
        drain()
    elif mode == "garbage":
        send(b"\xff\xff\xff\xff")
        drain()
    elif mode == "silent":
        drain()
    elif mode == "odd-frame":
        send(welcome() + frame(200, b"?"))
        drain()
    elif mode == "unknown-error":
        text = b"a newer helper's failure"
        send(welcome() + frame(74, struct.pack("<II", 99, len(text)) + text))
        drain()
    elif mode in ("prompt-then-mute", "prompt-then-exit"):
        send(welcome())
        frames = read_frames()
        for kind, payload in frames:
            if kind == 2:  # OPEN: answer with the shell started and its first prompt
                send(frame(65, struct.pack("<i", 4242)) + out(0, prompt(nonce_of(payload))))
                break
        for kind, _ in frames:
            if kind == 3 and mode == "prompt-then-exit":  # IN
                sys.exit(0)
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
