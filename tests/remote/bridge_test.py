#!/usr/bin/env python3
"""dshpty-supervisor --stdio against real bash: speaks the frames of link/frames.hpp over
pipes, and checks by a /proc scan that no process of the session survives the kill, EOF, a
bad peer or garbage on the link. Usage: bridge_test.py PATH-TO-dshpty-supervisor"""
import os
import select
import struct
import subprocess
import sys
import time
import uuid

SUPERVISOR = sys.argv[1]
VERSION = 1
# host -> helper
HELLO, OPEN, IN, RESIZE, SIGNAL, MARK, PROBE, ACK, KILL, PING = range(1, 11)
# helper -> host
(WELCOME, STARTED, START_FAILED, OUT, STATE, WRITTEN, OUTPUT_ENDED, EXITED, QUIESCENT, PONG,
 ERROR) = range(64, 75)
NAMES = {v: k for k, v in dict(globals()).items() if isinstance(v, int) and k.isupper() and k not in ('VERSION',)}
STATE_READING = 8
STATE_LEADER_IS_SHELL = 16
WINDOW = 1024 * 1024


def frame(ftype, payload=b''):
    return struct.pack('<IB', len(payload) + 1, ftype) + payload


def s(text):
    data = text.encode() if isinstance(text, str) else text
    return struct.pack('<I', len(data)) + data


def hello(version=VERSION, ping_ms=10000, timeout_ms=30000):
    return frame(HELLO, struct.pack('<III', version, ping_ms, timeout_ms))


# The far helper starts bash with the integration it carries when the environment holds a
# nonce (its marks then carry it), as the host asks for it.
NONCE = '0123456789abcdef'


def open_frame(marker, argv=('/bin/bash', '--noprofile', '--rcfile', '@DSHPTY_INIT@', '-i'), cwd='/tmp'):
    env = ['BRIDGE_TEST_MARKER=' + marker, 'DSHPTY_NONCE=' + NONCE, 'DSHPTY_RC=none',
           'DSHPTY_HISTORY=private']
    payload = struct.pack('<HH', 24, 80) + s('sid-' + marker) + s('dumb')
    payload += struct.pack('<B', 1) + s(cwd)
    payload += struct.pack('<I', len(argv)) + b''.join(s(a) for a in argv)
    payload += struct.pack('<I', len(env)) + b''.join(s(e) for e in env)
    return frame(OPEN, payload)


class Bridge:
    """One dshpty-supervisor --stdio, its frames decoded as they arrive."""

    def __init__(self, args=()):
        self.proc = subprocess.Popen([SUPERVISOR, '--stdio', *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)
        self.buf = b''
        self.reads = []         # each read's frames: [(type, payload)], OUT included
        self.output = b''       # every OUT byte, in order
        self.offset = 0         # the next OUT offset expected
        self.frames = []        # (type, payload) of everything but OUT
        self.eof = False
        self.ack = True         # wait_for acknowledges the output it saw
        self.acked = 0

    def send(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def pump(self, timeout):
        """Reads what arrives within `timeout` seconds; False at EOF."""
        if self.eof:
            return False
        ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, timeout))
        if not ready:
            return True
        data = os.read(self.proc.stdout.fileno(), 65536)
        if not data:
            self.eof = True
            return False
        self.buf += data
        self.reads.append([])
        while len(self.buf) >= 5:
            length, ftype = struct.unpack_from('<IB', self.buf)
            assert 1 <= length <= 65536, 'helper sent a frame of length %d' % length
            if len(self.buf) < 4 + length:
                break
            payload = self.buf[5:4 + length]
            self.buf = self.buf[4 + length:]
            assert ftype in NAMES, 'unknown frame type %d' % ftype
            self.reads[-1].append((ftype, payload))
            if ftype == OUT:
                (offset,) = struct.unpack_from('<Q', payload)
                assert offset == self.offset, 'OUT at %d, expected %d' % (offset, self.offset)
                assert len(payload) - 8 <= 32768
                # The window (1 MiB) holds, give or take the one read (64 KiB) that crossed it.
                assert self.offset - self.acked <= WINDOW + 65536, (self.offset, self.acked)
                self.output += payload[8:]
                self.offset += len(payload) - 8
            else:
                self.frames.append((ftype, payload))
        return True

    def wait_for(self, what, condition, timeout=15.0):
        """Polls the link until `condition()` holds, with a deadline (not a sleep)."""
        deadline = time.monotonic() + timeout
        while not condition():
            left = deadline - time.monotonic()
            if left <= 0 or not self.pump(min(left, 0.5)) and not condition():
                raise AssertionError('timed out waiting for %s; frames %s; output %r' % (
                    what, [NAMES[t] for t, _ in self.frames], self.output[-400:]))
        if self.ack and self.offset and not self.proc.stdin.closed:
            try:
                self.send(frame(ACK, struct.pack('<Q', self.offset)))
                self.acked = self.offset
            except BrokenPipeError:
                pass  # the helper has exited (after QUIESCENT or an ERROR)

    def frame_of(self, ftype):
        return next((p for t, p in self.frames if t == ftype), None)

    def exit_status(self, timeout=15.0):
        deadline = time.monotonic() + timeout
        while self.pump(max(0.0, deadline - time.monotonic())) and time.monotonic() < deadline:
            pass
        return self.proc.wait(timeout=max(0.1, deadline - time.monotonic()))

    def start_session(self, marker, timeout_ms=30000):
        self.wait_for('WELCOME', lambda: self.frame_of(WELCOME) is not None)
        version, caps = struct.unpack_from('<II', self.frame_of(WELCOME))
        assert version == VERSION, version
        self.send(hello(timeout_ms=timeout_ms) + open_frame(marker))
        self.wait_for('STARTED', lambda: self.frame_of(STARTED) is not None)
        self.wait_for('the prompt', lambda: b'dsh> ' in self.output)
        return caps


def survivors(marker):
    """Pids of processes whose environment or command line carries the marker."""
    found = []
    needle = marker.encode()
    for name in os.listdir('/proc'):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open('/proc/%s/environ' % name, 'rb') as f:
                env = f.read()
            with open('/proc/%s/cmdline' % name, 'rb') as f:
                cmd = f.read()
        except OSError:
            continue
        if needle in env or needle in cmd:
            found.append((int(name), cmd.replace(b'\0', b' ').decode(errors='replace')))
    return found


def wait_until(what, condition, timeout):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError('timed out waiting for ' + what)
        time.sleep(0.02)


def start_escapes(bridge, marker):
    # A background job, one in a session of its own, one ignoring HUP and TERM: the kill
    # must get them all.
    bridge.send(frame(IN, b"sleep 1000 & setsid sleep 1001 & (trap '' HUP TERM; sleep 1002; : "
                      + marker.encode() + b") &\r"))
    wait_until('the escapes to run', lambda: len(survivors(marker)) >= 6, 10)


def probe(bridge, seq):
    bridge.send(frame(PROBE, struct.pack('<I', seq)))
    found = {}

    def answered():
        for t, p in bridge.frames:
            if t == STATE and struct.unpack_from('<I', p)[0] == seq:
                found['state'] = p
                return True
        return False
    bridge.wait_for('STATE %d' % seq, answered)
    seq_, offset, fg, flags, unread, sig_ign, cwd_len = struct.unpack_from('<IQiBiQI', found['state'])
    cwd = found['state'][struct.calcsize('<IQiBiQI'):]
    assert len(cwd) == cwd_len
    return {'offset': offset, 'fg': fg, 'flags': flags, 'unread': unread, 'sig_ign': sig_ign,
            'cwd': cwd.decode()}


def kill_and_prove(bridge, marker, grace_ms=0):
    """KILL, then QUIESCENT, a clean exit and no process of the session left."""
    bridge.send(frame(KILL, struct.pack('<I', grace_ms)))
    bridge.wait_for('QUIESCENT', lambda: bridge.frame_of(QUIESCENT) is not None)
    assert bridge.exit_status() == 0
    assert not survivors(marker)


def case_session_and_kill():
    marker = 'bridge-' + uuid.uuid4().hex
    b = Bridge()
    caps = b.start_session(marker)
    shell_pid = struct.unpack('<i', b.frame_of(STARTED))[0]
    b.send(frame(IN, b'echo hi-$((6*7))\r'))
    b.wait_for('hi-42', lambda: b'hi-42' in b.output)
    b.send(frame(PING))
    b.wait_for('PONG', lambda: b.frame_of(PONG) is not None)
    # Back at its prompt, bash sits in read() on the terminal: the probe proves it.
    seq = [0]

    def reading():
        seq[0] += 1
        st = probe(b, seq[0])
        assert st['offset'] <= b.offset
        return st
    if caps & 1:
        deadline = time.monotonic() + 10
        while True:
            st = reading()
            if st['flags'] & STATE_READING:
                break
            assert time.monotonic() < deadline, 'bash never proven reading: %r' % st
        assert st['fg'] == shell_pid, st
        assert st['cwd'] == '/tmp', st
    written = [struct.unpack('<Q', p)[0] for t, p in b.frames if t == WRITTEN]
    assert written and written[-1] == len(b'echo hi-$((6*7))\r'), written
    start_escapes(b, marker)
    b.send(frame(KILL, struct.pack('<I', 0)))
    b.wait_for('QUIESCENT', lambda: b.frame_of(QUIESCENT) is not None)
    assert b.exit_status() == 0
    left = survivors(marker)
    assert not left, 'survived the kill: %r' % left
    print('ok: session, probe, kill')


def case_eof():
    marker = 'bridge-' + uuid.uuid4().hex
    b = Bridge()
    b.start_session(marker)
    start_escapes(b, marker)
    b.proc.stdin.close()
    closed = time.monotonic()
    wait_until('the tree to go after EOF', lambda: not survivors(marker), 2.0)
    assert b.exit_status() == 0
    assert b.frame_of(QUIESCENT) is not None
    print('ok: EOF killed the tree in %.2f s' % (time.monotonic() - closed))


def case_bad_version():
    b = Bridge()
    b.send(hello(version=99))
    b.wait_for('ERROR', lambda: b.frame_of(ERROR) is not None)
    p = b.frame_of(ERROR)
    code, n = struct.unpack_from('<II', p)
    text = p[8:8 + n].decode()
    assert code == 1 and text == 'protocol version 99; this helper speaks 1', (code, text)
    assert b.exit_status() == 1
    print('ok: bad version: ' + text)


def case_frame_before_open():
    b = Bridge()
    b.send(hello() + frame(IN, b'ls\r'))
    b.wait_for('ERROR', lambda: b.frame_of(ERROR) is not None)
    code = struct.unpack_from('<I', b.frame_of(ERROR))[0]
    assert code == 3, code
    assert b.exit_status() == 1
    print('ok: IN before OPEN is a protocol error')


def case_garbage():
    marker = 'bridge-' + uuid.uuid4().hex
    b = Bridge()
    b.start_session(marker)
    start_escapes(b, marker)
    b.send(b'\xff\xff\xff\xff' + os.urandom(64))
    b.wait_for('ERROR', lambda: b.frame_of(ERROR) is not None)
    p = b.frame_of(ERROR)
    code, n = struct.unpack_from('<II', p)
    assert code == 3, code
    assert b'frame length 4294967295' in p[8:8 + n], p
    assert b.exit_status() == 1  # an exit, not a signal (that would be negative)
    left = survivors(marker)
    assert not left, 'survived garbage on the link: %r' % left
    print('ok: garbage: ' + p[8:8 + n].decode())


def case_flow_control():
    # 3 MiB of output with no ACK: the helper stops at the window (the pump asserts the bound
    # on every OUT); ACKs then let the rest through, every byte in order.
    marker = 'bridge-' + uuid.uuid4().hex
    b = Bridge()
    b.start_session(marker)
    total = 3 * 1024 * 1024
    start = len(b.output)
    b.ack = False
    b.send(frame(IN, b"head -c %d /dev/zero | tr '\\0' x; echo; echo flood-$((40+2))\r" % total))
    b.wait_for('a window of output', lambda: b.offset - b.acked >= WINDOW)
    # Nothing more may come while nothing is acknowledged: watch the link for a moment (the
    # bound is asserted on each OUT; this only gives a runaway helper the time to show).
    b.pump(0.3)
    b.pump(0.3)
    assert b.offset - b.acked <= WINDOW + 65536
    b.ack = True
    while b'flood-42' not in b.output[start:]:
        b.wait_for('the next window', lambda: b.offset - b.acked > 0 or b'flood-42' in b.output[start:])
    assert b.output[start:].count(b'x') >= total
    kill_and_prove(b, marker)
    print('ok: flow control held the window over %d bytes' % total)


def case_signal():
    marker = 'bridge-' + uuid.uuid4().hex
    b = Bridge()
    b.start_session(marker)
    shell_pid = struct.unpack('<i', b.frame_of(STARTED))[0]
    b.send(frame(IN, b'sleep 1003\r'))
    # The job holds the terminal: a STATE names its group, not the shell's.
    seq = [100]

    # Its leader must have exec'd sleep: a SIGINT while it is still bash's fork (the
    # leader-is-shell flag) would be swallowed by bash's own handler.
    def job_in_front():
        seq[0] += 1
        st = probe(b, seq[0])
        return st if st['fg'] not in (-1, shell_pid) and not st['flags'] & STATE_LEADER_IS_SHELL else None
    deadline = time.monotonic() + 10
    while not (st := job_in_front()):
        assert time.monotonic() < deadline, 'the job never took the terminal'
    fg = st['fg']
    b.send(frame(SIGNAL, struct.pack('<ii', fg, 2)))
    # The prompt marker after it carries the job's status: 128 + SIGINT.
    b.wait_for('the interrupted job', lambda: b'\x1b]133;D;130;dshpty=' + NONCE.encode() + b'\x07' in b.output)
    b.send(frame(SIGNAL, struct.pack('<ii', 0, 15)))  # group 0 is refused, not our own group
    b.send(frame(PING))
    b.wait_for('PONG', lambda: b.frame_of(PONG) is not None)
    kill_and_prove(b, marker, 200)
    print('ok: SIGNAL interrupts the foreground job')


def case_start_failed():
    for argv, cwd, words in ((('/nonexistent/shell',), '/tmp', b'cannot execute shell'),
                             (('/bin/bash',), '/nonexistent/dir', b'cannot enter working directory')):
        marker = 'bridge-' + uuid.uuid4().hex
        b = Bridge()
        b.send(hello() + open_frame(marker, argv=argv, cwd=cwd))
        b.wait_for('START_FAILED', lambda: b.frame_of(START_FAILED) is not None)
        assert words in b.frame_of(START_FAILED), b.frame_of(START_FAILED)
        kill_and_prove(b, marker)
    print('ok: START_FAILED, then KILL answered with QUIESCENT')


def case_link_timeout():
    # A host silent past its own link timeout is dead: the tree goes, the helper exits 1.
    marker = 'bridge-' + uuid.uuid4().hex
    b = Bridge()
    b.ack = False
    b.start_session(marker, timeout_ms=1500)
    start_escapes(b, marker)
    status = b.exit_status()
    assert status == 1, status
    assert b.frame_of(QUIESCENT) is not None
    assert not survivors(marker)
    print('ok: link timeout killed the tree')


PROMPT_END = b'\x1b]133;B;dshpty=' + NONCE.encode() + b'\x07'


def case_prompt_hold():
    # Bounded by a minute, a hold ends only at the prompt's end mark or at another frame:
    # each send's answer, WRITTEN first, then the echo, the output and the prompt, comes as
    # one write (under PIPE_BUF, so one read), whatever bash's pieces were.
    marker = 'bridge-' + uuid.uuid4().hex
    b = Bridge(['--hold-ms', '60000'])
    b.start_session(marker)
    for text in (b'true', b'echo held-$((6*7))', b'printf "%s\\n" one two three'):
        first, ends = len(b.reads), b.output.count(PROMPT_END)
        b.send(frame(IN, text + b'\r'))
        b.wait_for('the prompt after ' + text.decode(), lambda: b.output.count(PROMPT_END) > ends)
        answer = b.reads[first:]
        assert len(answer) == 1, 'the answer to %r came in %d reads: %r' % (text, len(answer), answer)
        kinds = [NAMES[t] for t, _ in answer[0]]
        assert kinds[0] == 'WRITTEN' and 'OUT' in kinds, kinds
        out = b''.join(p[8:] for t, p in answer[0] if t == OUT)
        assert out.startswith(text) and out.rstrip(b' \b').endswith(PROMPT_END), out
    assert b'held-42' in b.output and b'three' in b.output
    # Any other frame ends a hold: output before a read that waits (no prompt to end it)
    # comes out with the PONG, not a minute later.
    b.send(frame(IN, b'echo released-$((6*7)); read -r x\r'))
    b.send(frame(PING))
    b.wait_for('the output before the read', lambda: b'released-42' in b.output)
    b.send(frame(IN, b'x\r'))
    ends = b.output.count(PROMPT_END)
    b.wait_for('the prompt after the read', lambda: b.output.count(PROMPT_END) > ends)
    kill_and_prove(b, marker)
    print('ok: a send\'s answer in one write; another frame ends the hold')


def case_hold_bound():
    # The default bound lets output out while the command runs on: here bash waits in a
    # read, its prompt far off, and nothing else is sent that would end the hold.
    marker = 'bridge-' + uuid.uuid4().hex
    b = Bridge()
    b.start_session(marker)
    b.send(frame(IN, b'echo bounded-$((6*7)); read -r x\r'))
    b.wait_for('the output before the read', lambda: b'bounded-42' in b.output)
    assert PROMPT_END not in b.output[b.output.index(b'bounded-42'):]
    b.send(frame(IN, b'x\r'))
    b.wait_for('the prompt after the read', lambda: PROMPT_END in b.output[b.output.index(b'bounded-42'):])
    kill_and_prove(b, marker)
    for bad in ('-1', 'soon', '60001', ''):
        r = subprocess.run([SUPERVISOR, '--stdio', '--hold-ms', bad], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=10)
        assert r.returncode == 2 and b'--hold-ms' in r.stderr, (bad, r)
    print('ok: a hold ends by its bound; a bad --hold-ms is refused')


def case_mark_baseline():
    # MARK takes the stdin probe's baseline: whoever reads the terminal then proves nothing
    # until it ran again. MARK 2 is the shell alone at its idle prompt (its baseline without
    # the tree's walk), MARK 1 the foreground group, MARK 0 forgets. bash idles in its read
    # at the prompt, so each PROBE answers at once from the baseline standing.
    marker = 'bridge-' + uuid.uuid4().hex
    b = Bridge()
    caps = b.start_session(marker)
    if not caps & 1:
        kill_and_prove(b, marker)
        print('skipped: MARK (no stdin probe on this platform)')
        return
    seq = [0]

    def reading():
        seq[0] += 1
        return bool(probe(b, seq[0])['flags'] & STATE_READING)
    deadline = time.monotonic() + 10
    while not reading():
        assert time.monotonic() < deadline, 'bash never proven reading at its prompt'
    for mark in (2, 1):
        b.send(frame(MARK, bytes([mark])))
        assert not reading(), 'MARK %d: the read begun before it proved a reader' % mark
        b.send(frame(MARK, bytes([0])))
        assert reading(), 'MARK 0 left a baseline standing after MARK %d' % mark
    # After MARK 2, a read the shell starts anew proves one.
    b.send(frame(MARK, bytes([2])) + frame(IN, b'read -r x\r'))
    deadline = time.monotonic() + 10
    while not reading():
        assert time.monotonic() < deadline, 'the read after MARK 2 never proven'
    b.send(frame(IN, b'x\r'))
    kill_and_prove(b, marker)
    print('ok: MARK 2, 1 and 0 set and forget the stdin probe\'s baseline')


def main():
    for case in (case_bad_version, case_frame_before_open, case_session_and_kill, case_eof,
                 case_garbage, case_flow_control, case_signal, case_start_failed,
                 case_link_timeout, case_prompt_hold, case_hold_bound, case_mark_baseline):
        case()


if __name__ == '__main__':
    main()
