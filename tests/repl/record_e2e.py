"""Recordings through dshpty-repl's JSON face (docs/watch.md, "Recordings"), real programs on
the real shell backend: with --record-dir, a session running `echo`, a `read -s` password
prompt and its answer, vim opened and quit, and a resize is written as asciicast v2 that
parses line by line; `asciinema cat` prints the echoed text and `asciinema play` plays it (skipped, with the reason, where
asciinema is not installed); the password appears nowhere in the file; there is one `m`
marker per send, in order; the `r` event carries the new size; the file is complete when
`close` answers. `record: false` opts out, `record: true` without a directory is refused, and
a 1 MiB cap cuts the file with a last marker saying so; a full disk (a small tmpfs, where one
can be mounted) fails the recording, never the session; a lingering session taken over is
recorded on in the new host's file; a lingering session whose host is killed (SIGKILL) mid-output
goes on in the same file, written by its helper while no host holds it, in order, until a host
takes it over, and the file plays. A host killed (SIGKILL) the moment a send's result reached
its client leaves that result's output in the file, and so does one killed the moment a job's
output reached it through `output`, `read` or `screen`. A password typed through a relay
(`script`) at a far `read -s` is recorded as "[input through a relay]" in its marker and
input event, never in clear.

Usage: record_e2e.py DSHPTY_REPL"""

import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

from repl_harness import JsonRepl, check, kill_quietly, wait_gone

PASSWORD = "s3cr3t-Pa55-w0rd"


def read_cast(path):
    """The file's lines parsed: (header, events). Every line must be JSON."""
    with open(path, "rb") as f:
        data = f.read()
    check(data.endswith(b"\n"), f"{path}: the last line is not ended")
    lines = data.decode("utf-8").split("\n")[:-1]
    header = json.loads(lines[0])
    events = []
    for number, line in enumerate(lines[1:], start=2):
        try:
            event = json.loads(line)
        except ValueError as e:
            check(False, f"{path}:{number} is not JSON ({e}): {line[:200]!r}")
        check(isinstance(event, list) and len(event) == 3 and isinstance(event[0], (int, float))
              and event[1] in ("o", "i", "m", "r") and isinstance(event[2], str),
              f"{path}:{number} is no asciicast v2 event: {line[:200]!r}")
        events.append(event)
    times = [e[0] for e in events]
    check(times == sorted(times), f"{path}: event times go backwards")
    return data, header, events


def run_on_terminal(argv):
    """Runs argv with a terminal of its own (asciinema cat opens /dev/tty): its exit status
    and everything it printed."""
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    out = b""
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], deadline - time.monotonic())
            if not ready:
                break
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the terminal's last user closed it
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(fd)
    if time.monotonic() >= deadline:
        os.kill(pid, 9)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out


def recordings(directory):
    return sorted(os.path.join(directory, n) for n in os.listdir(directory))


def session_run(repl_path, record_dir, state_dir):
    repl = JsonRepl(repl_path, ["--record-dir", record_dir, "--state-dir", state_dir])
    try:
        opened = repl.ok({"id": 1, "op": "open", "type": "shell", "name": "rec", "terminal": "xterm"})
        sid = opened["sessionId"]
        rec = opened.get("recording")
        check(rec and rec["state"] == "recording", opened)
        path = rec["path"]
        check(os.path.dirname(path) == record_dir and path.endswith(".cast"), rec)
        check(os.path.basename(path).startswith("default-" + sid + "-"), f"named by owner and session: {path}")
        check(os.stat(path).st_mode & 0o777 == 0o600, f"{path}: mode {oct(os.stat(path).st_mode)}")

        sends = []

        def send(rid, fields, marker):
            result = repl.ok({"id": rid, "op": "send", "sessionId": sid, **fields})
            sends.append(marker)
            return result

        echoed = send(2, {"text": "echo hello-$((6*7))"}, "echo hello-$((6*7))")
        check("hello-42" in echoed["viewport"], echoed)
        prompt = send(3, {"text": "read -rs -p 'Password: ' pw; echo; echo got-${#pw}-chars"},
                      "read -rs -p 'Password: ' pw; echo; echo got-${#pw}-chars")
        check(prompt["waitReason"] == "stdin_read" and prompt.get("inputHidden") is True, prompt)
        answered = send(4, {"text": PASSWORD}, "[hidden input]")
        check(f"got-{len(PASSWORD)}-chars" in answered["viewport"], answered)
        # Echo off without canonical mode, read by the shell itself (a PIN, a key, a
        # delimiter): hidden too. The full-screen vim below is not.
        pin = send(40, {"text": "read -s -n 8 -p 'PIN: ' pin; echo; echo pin-${#pin}"},
                   "read -s -n 8 -p 'PIN: ' pin; echo; echo pin-${#pin}")
        check(pin["waitReason"] == "stdin_read" and pin.get("inputHidden") is True, pin)
        pinned = send(41, {"text": "SECRETD5", "submit": False}, "[hidden input]")
        check("pin-8" in pinned["viewport"], pinned)
        delim = send(42, {"text": "read -s -d X -p 'P: ' pw2; echo; echo delim-${#pw2}"},
                     "read -s -d X -p 'P: ' pw2; echo; echo delim-${#pw2}")
        check(delim.get("inputHidden") is True, delim)
        delimited = send(43, {"text": "SECRETK13X", "submit": False}, "[hidden input]")
        check("delim-9" in delimited["viewport"], delimited)
        vim = send(5, {"text": "vim -u NONE -N -n", "idleMs": 500}, "vim -u NONE -N -n")
        check(vim.get("screen", {}).get("alternate") is True, vim)
        send(6, {"keys": ["Escape"]}, "keys: Escape")
        quit_vim = send(7, {"text": ":q"}, ":q")
        check("screen" not in quit_vim, quit_vim)
        check(repl.ok({"id": 8, "op": "resize", "sessionId": sid, "rows": 30, "cols": 100}) == {}, "resize")
        size = send(9, {"text": "stty size"}, "stty size")
        check("30 100" in size["viewport"], size)
        send(10, {}, "[check-in]")

        listed = repl.ok({"id": 11, "op": "list"})["sessions"][0]
        check(listed["recording"]["path"] == path and listed["recording"]["state"] == "recording", listed)

        # Opted out: no file, no recording field.
        before = recordings(record_dir)
        plain = repl.ok({"id": 12, "op": "open", "type": "shell", "name": "plain", "record": False})
        check("recording" not in plain, plain)
        check(recordings(record_dir) == before, "record: false made a file")
        repl.error({"id": 13, "op": "open", "type": "shell", "record": "yes"}, "INVALID_ARGUMENT")

        repl.ok({"id": 14, "op": "close", "sessionId": sid})
        # The close answered: the file is complete now.
        data, header, events = read_cast(path)
        check(repl.ok({"id": 15, "op": "shutdown"}) == {}, "shutdown")
        check(repl.wait_exit() == 0, "exit status")
        wait_gone(repl.pids, "shutdown")
    finally:
        repl.close()

    check(header["version"] == 2 and header["width"] == 160 and header["height"] == 40, header)
    check(header["env"]["TERM"] == "xterm-256color" and header["env"]["SHELL"].endswith("bash"), header)
    check(header["title"] == "rec" and isinstance(header["timestamp"], int), header)
    check(PASSWORD.encode() not in data, "the password is in the recording")
    check(b"SECRETD5" not in data and b"SECRETK13" not in data, "a non-canonical secret is in the recording")
    # The prompt marks are there (the scrub had work), their nonce is not.
    check(b"133;B;dshpty=" in data, "no prompt marks in the output")
    check(not re.search(rb"dshpty=[0-9a-f]{6}", data), "the mark nonce is in the recording")
    markers = [e[2] for e in events if e[1] == "m"]
    check(markers == sends, f"markers {markers} vs sends {sends}")
    inputs = [e[2] for e in events if e[1] == "i"]
    check("echo hello-$((6*7))\r" in inputs and "[hidden input]" in inputs and "\x1b" in inputs, inputs)
    resizes = [e[2] for e in events if e[1] == "r"]
    check(resizes == ["100x30"], resizes)
    output = "".join(e[2] for e in events if e[1] == "o")
    check("hello-42" in output and f"got-{len(PASSWORD)}-chars" in output, "the output events")
    check("\x1b[?1049h" in output, "vim's screen switch is in the output")
    # Each marker comes before its input.
    order = [(e[1], e[2]) for e in events if e[1] in ("m", "i")]
    at = order.index(("m", "[hidden input]"))
    check(order[at + 1] == ("i", "[hidden input]"), order[at:at + 2])

    asciinema = shutil.which("asciinema")
    if not asciinema:
        print("SKIP (part): asciinema cat: asciinema is not installed (Debian package asciinema)", flush=True)
        return
    status, shown = run_on_terminal([asciinema, "cat", path])
    check(status == 0, f"asciinema cat: exit status {status}: {shown[-500:]!r}")
    check(b"hello-42" in shown and PASSWORD.encode() not in shown, "asciinema cat's text")
    # And it plays (idle gaps capped, ten times the speed: the same text goes by).
    status, played = run_on_terminal([asciinema, "play", "-i", "0.05", "-s", "10", path])
    check(status == 0, f"asciinema play: exit status {status}: {played[-500:]!r}")
    check(b"hello-42" in played and PASSWORD.encode() not in played, "asciinema play's text")


def refused_without_directory(repl_path, state_dir):
    repl = JsonRepl(repl_path, ["--state-dir", state_dir])
    try:
        err = repl.error({"id": 1, "op": "open", "type": "shell", "record": True}, "INVALID_ARGUMENT")
        check("record" in err["message"], err)
        plain = repl.ok({"id": 2, "op": "open", "type": "shell", "record": False})
        check("recording" not in plain, plain)
        check(repl.ok({"id": 3, "op": "shutdown"}) == {}, "shutdown")
        check(repl.wait_exit() == 0, "exit status")
        wait_gone(repl.pids, "shutdown")
    finally:
        repl.close()
    # A directory that is none fails at start-up.
    bad = subprocess.run([repl_path, "--json", "--record-dir", "/nonexistent-dshpty-dir"], input=b"",
                         capture_output=True, timeout=60)
    check(bad.returncode != 0 and b"--record-dir" in bad.stderr, bad)


def cut_at_cap(repl_path, record_dir, state_dir):
    cap = 1 << 20
    repl = JsonRepl(repl_path, ["--record-dir", record_dir, "--state-dir", state_dir,
                                "--record-max-bytes", str(cap)])
    try:
        opened = repl.ok({"id": 1, "op": "open", "type": "shell", "name": "big"})
        path = opened["recording"]["path"]
        flood = repl.ok({"id": 2, "op": "send", "sessionId": opened["sessionId"],
                         "text": "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo flood-done"})
        check("flood-done" in flood["viewport"], "the flood ended")
        listed = repl.ok({"id": 3, "op": "list"})["sessions"][0]
        check(listed["recording"]["state"] == "cut", listed)
        after = repl.ok({"id": 4, "op": "send", "sessionId": opened["sessionId"], "text": "echo after-$((2*3))"})
        check("after-6" in after["viewport"], "the session runs on after the cut")
        repl.ok({"id": 5, "op": "close", "sessionId": opened["sessionId"]})
        data, _, events = read_cast(path)
        check(len(data) <= cap, f"{len(data)} bytes past the cap {cap}")
        check(len(data) > cap - 70000, f"cut far below the cap: {len(data)}")
        check(events[-1][1] == "m" and "recording cut" in events[-1][2], events[-1])
        check(not any("after-6" in e[2] for e in events), "recorded past the cut")
        check(repl.ok({"id": 6, "op": "shutdown"}) == {}, "shutdown")
        check(repl.wait_exit() == 0, "exit status")
        wait_gone(repl.pids, "shutdown")
    finally:
        repl.close()


def full_disk(repl_path, top, state_dir):
    """A recording directory that fills up (a 256 KiB tmpfs): the recording fails with its
    cause in `list`, the file ends at its last whole line, the session runs on."""
    casts = os.path.join(top, "full")
    os.mkdir(casts)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", casts], capture_output=True)
    if mounted.returncode != 0:
        print(f"SKIP (part): full disk: cannot mount a small tmpfs here: {mounted.stderr.decode().strip()}",
              flush=True)
        return
    repl = JsonRepl(repl_path, ["--record-dir", casts, "--state-dir", state_dir])
    try:
        opened = repl.ok({"id": 1, "op": "open", "type": "shell", "name": "full"})
        sid = opened["sessionId"]
        flood = repl.ok({"id": 2, "op": "send", "sessionId": sid, "text": "seq 1 200000"})
        check("200000" in flood["viewport"], flood)
        rec = repl.ok({"id": 3, "op": "list"})["sessions"][0]["recording"]
        check(rec["state"] == "failed" and "No space left on device" in rec.get("error", ""), rec)
        after = repl.ok({"id": 4, "op": "send", "sessionId": sid, "text": "echo still-$((7*6))"})
        check("still-42" in after["viewport"], "the session runs on")
        repl.ok({"id": 5, "op": "close", "sessionId": sid})
        data, _, _ = read_cast(rec["path"])  # every line whole and JSON
        check(len(data) == rec["bytes"], (len(data), rec))
        check(repl.ok({"id": 6, "op": "shutdown"}) == {}, "shutdown")
        check(repl.wait_exit() == 0, "exit status")
        wait_gone(repl.pids, "shutdown")
    finally:
        repl.close()
        subprocess.run(["umount", casts])


def across_a_take_over(repl_path, record_dir, state_dir):
    """A lingering session: the first host's file ends when it leaves; the host that takes it
    over starts a file of its own with the take-over marker, the replay (what the session
    printed while no host held it included), then live output."""
    first = JsonRepl(repl_path, ["--record-dir", record_dir, "--state-dir", state_dir])
    second = None
    pid = None
    try:
        opened = first.ok({"id": 1, "op": "open", "type": "shell", "name": "keep", "linger": 60})
        pid = opened["pid"]
        first_path = opened["recording"]["path"]
        first.ok({"id": 2, "op": "send", "sessionId": opened["sessionId"],
                  "text": "(sleep 0.3; echo while-away-$((3*5))) & echo before-$((2*2))"})
        first.proc.stdin.close()  # EOF: the host leaves, the session lingers
        check(first.wait_exit() == 0, "exit status after EOF")
        _, _, events = read_cast(first_path)
        check(any("before-4" in e[2] for e in events if e[1] == "o"), "the first file has what its host saw")

        second = JsonRepl(repl_path, ["--record-dir", record_dir, "--state-dir", state_dir])
        attached = second.ok({"id": 3, "op": "attach", "name": "keep"})["sessions"]
        check(len(attached) == 1 and attached[0]["sessionId"], attached)
        sid = attached[0]["sessionId"]
        # The background echo ran while no host held the session (or just after): either
        # way it is in the new file, in the replay or live.
        seen = second.ok({"id": 4, "op": "send", "sessionId": sid, "text": "sleep 0.5; echo after-$((4*4))"})
        check("after-16" in seen["viewport"], seen)
        listed = second.ok({"id": 5, "op": "list"})["sessions"][0]
        second_path = listed["recording"]["path"]
        check(second_path != first_path, "the new host writes a file of its own")
        second.ok({"id": 6, "op": "close", "sessionId": sid})
        _, header, events = read_cast(second_path)
        check(header["title"] == "keep", header)
        check(events[0][1] == "m" and events[0][2].startswith("[taken over by a new host"), events[:2])
        output = "".join(e[2] for e in events if e[1] == "o")
        check("before-4" in output, "the replay is in the new file")
        check("while-away-15" in output and "after-16" in output, "the output since is in the new file")
        check(second.ok({"id": 7, "op": "shutdown"}) == {}, "shutdown")
        check(second.wait_exit() == 0, "exit status")
        wait_gone([pid], "close after attach")
    finally:
        first.close()
        if second:
            second.close()
        if pid:
            kill_quietly([pid])


def across_a_host_death(repl_path, record_dir, state_dir):
    """A lingering session whose host is killed mid-output: its helper goes on with the same
    file while no host holds it (the output printed meanwhile, in order, after a marker), and
    stops with a last marker when a new host takes the session over."""
    first = JsonRepl(repl_path, ["--record-dir", record_dir, "--state-dir", state_dir])
    second = None
    pid = None
    try:
        opened = first.ok({"id": 1, "op": "open", "type": "shell", "name": "dies", "linger": 60})
        pid = opened["pid"]
        path = opened["recording"]["path"]
        first.ok({"id": 2, "op": "send", "sessionId": opened["sessionId"],
                  "text": "(for i in $(seq 1 15); do echo tick-$i; sleep 0.1; done; echo ticks-$((100+1))) &"})
        deadline = time.monotonic() + 30
        while b"tick-3" not in open(path, "rb").read():
            check(time.monotonic() < deadline, "the host records the first ticks")
            time.sleep(0.02)  # polling the file, with a deadline
        first.proc.kill()  # SIGKILL, mid-output
        first.proc.wait()
        while b"ticks-101" not in open(path, "rb").read():
            check(time.monotonic() < deadline, "the helper records the ticks printed while no host holds the session")
            time.sleep(0.02)  # polling the file, with a deadline
        second = JsonRepl(repl_path, ["--record-dir", record_dir, "--state-dir", state_dir])
        attached = second.ok({"id": 3, "op": "attach", "name": "dies"})["sessions"]
        sid = attached[0]["sessionId"]
        second.ok({"id": 4, "op": "close", "sessionId": sid})
        _, _, events = read_cast(path)  # every line JSON, times never going back
        marks = [i for i, e in enumerate(events) if e[1] == "m" and e[2].startswith("[no host holds the session")]
        check(len(marks) == 1, f"one marker where the helper took over: {events[-30:]}")
        check(events[-1][1] == "m" and events[-1][2].startswith("[taken over by a new host"), events[-3:])
        ticks_before = [int(n) for e in events[:marks[0]] if e[1] == "o" for n in re.findall(r"tick-(\d+)", e[2])]
        ticks_after = [int(n) for e in events[marks[0]:] if e[1] == "o" for n in re.findall(r"tick-(\d+)", e[2])]
        ticks = ticks_before + ticks_after
        check(ticks == sorted(set(ticks)), f"the ticks in order, none twice: {ticks}")
        check(ticks_before and ticks_after, f"ticks on both sides of the death: {ticks_before} | {ticks_after}")
        # Everything printed after the death is there: only what was in flight to the dying
        # host (read by it, not yet written) can be missing.
        check(ticks_after == list(range(ticks_after[0], 16)), f"the ticks while no host held it: {ticks_after}")
        output = "".join(e[2] for e in events if e[1] == "o")
        check("ticks-101" in output, "the last output")
        asciinema = shutil.which("asciinema")
        if asciinema:
            status, shown = run_on_terminal([asciinema, "cat", path])
            check(status == 0 and b"tick-15" in shown, f"asciinema cat: {status} {shown[-300:]!r}")
        else:
            print("SKIP (part): asciinema cat: asciinema is not installed (Debian package asciinema)", flush=True)
        check(second.ok({"id": 5, "op": "shutdown"}) == {}, "shutdown")
        check(second.wait_exit() == 0, "exit status")
        wait_gone([pid], "close after attach")
    finally:
        first.close()
        if second:
            second.close()
        if pid:
            kill_quietly([pid])

def killed_after_a_result(repl_path, record_dir, state_dir):
    """A host killed (SIGKILL) the moment a send's result reached its client: what the result
    showed is in the file (written before the answer), and so is the send's marker."""
    repl = JsonRepl(repl_path, ["--record-dir", record_dir, "--state-dir", state_dir])
    try:
        opened = repl.ok({"id": 1, "op": "open", "type": "shell", "name": "killed"})
        path = opened["recording"]["path"]
        sent = repl.ok({"id": 2, "op": "send", "sessionId": opened["sessionId"],
                        "text": "echo last-words-$((6*7))"})
        repl.proc.kill()  # at once: no loop iteration of the host after its answer
        repl.proc.wait()
        check("last-words-42" in sent["viewport"], sent)
        _, _, events = read_cast(path)
        markers = [e[2] for e in events if e[1] == "m"]
        check(markers == ["echo last-words-$((6*7))"], markers)
        output = "".join(e[2] for e in events if e[1] == "o")
        check("last-words-42" in output, f"the output the result showed is not in the file: {events}")
        wait_gone(repl.pids, "the session of a killed host")
    finally:
        repl.close()


def killed_after_a_read(repl_path, record_dir, state_dir):
    """A host killed (SIGKILL) the moment a job's output reached its client through `output`
    (by offset, or by the cursor), a `read` page or the `screen`: what it was shown is in the
    file (written before the answer), though no result showed it."""
    for way in ("offset", "cursor", "page", "screen"):
        repl = JsonRepl(repl_path, ["--record-dir", record_dir, "--state-dir", state_dir])
        try:
            opened = repl.ok({"id": 1, "op": "open", "type": "shell", "name": f"shown-{way}"})
            sid, path = opened["sessionId"], opened["recording"]["path"]
            repl.ok({"id": "job", "op": "send", "sessionId": sid, "background": True,
                     "text": "sleep 0.2; echo shown-$((6*7)); sleep 300"})
            seen, offset = "", 0
            for n in range(100000):
                if way in ("offset", "cursor"):
                    read = {"id": f"r{n}", "op": "output", "sendId": "job", "waitMs": 20000}
                    if way == "offset":
                        read["offset"] = offset
                    out = repl.ok(read)
                    seen, offset = seen + out["delta"], out["nextOffset"]
                elif way == "page":
                    seen = repl.ok({"id": f"r{n}", "op": "read", "sessionId": sid})["text"]
                else:
                    seen = "\n".join(repl.ok({"id": f"r{n}", "op": "read", "sessionId": sid, "screen": True})["screen"]["lines"])
                if "shown-42" in seen:
                    break
            repl.proc.kill()  # at once: no loop iteration of the host after its answer
            repl.proc.wait()
            check("shown-42" in seen, (way, seen))
            _, _, events = read_cast(path)
            output = "".join(e[2] for e in events if e[1] == "o")
            check("shown-42" in output, f"{way}: the output the client was shown is not in the file: {events}")
            wait_gone(repl.pids, "the session of a killed host")
        finally:
            repl.close()


RELAY = "script -q -c 'bash --norc -i' /dev/null"


def through_a_relay(repl_path, record_dir, state_dir):
    # Under a relay the terminal is raw with echo off whatever the far side reads: the far
    # `read -s` cannot be seen, so nothing typed through the relay is recorded.
    script = shutil.which("script")
    if not script:
        print("SKIP (part): through a relay: script is not installed (util-linux)", flush=True)
        return
    secret = "FarS3cret-" + os.urandom(4).hex()
    repl = JsonRepl(repl_path, ["--record-dir", record_dir, "--state-dir", state_dir])
    try:
        opened = repl.ok({"id": 1, "op": "open", "type": "shell", "name": "relay"})
        sid, path = opened["sessionId"], opened["recording"]["path"]
        # The far shell is named: `script` alone runs $SHELL, /bin/sh (dash, no `read -s`)
        # where SHELL is unset, as under CI.
        repl.ok({"id": 2, "op": "send", "sessionId": sid, "text": RELAY})
        prompt = repl.ok({"id": 3, "op": "send", "sessionId": sid,
                          "text": "read -rs -p 'FarPassword: ' pw; echo; echo far-${#pw}-chars"})
        check("FarPassword:" in prompt["viewport"], prompt)
        answered = repl.ok({"id": 4, "op": "send", "sessionId": sid, "text": secret})
        check(f"far-{len(secret)}-chars" in answered["viewport"], answered)
        repl.ok({"id": 5, "op": "close", "sessionId": sid})
        data, _, events = read_cast(path)
        check(repl.ok({"id": 6, "op": "shutdown"}) == {}, "shutdown")
        check(repl.wait_exit() == 0, "exit status")
        wait_gone(repl.pids, "shutdown")
    finally:
        repl.close()
    check(secret.encode() not in data, "the password typed through the relay is in the recording")
    markers = [e[2] for e in events if e[1] == "m"]
    check(markers[0] == RELAY and markers[1:] == ["[input through a relay]"] * 2, markers)
    inputs = [e[2] for e in events if e[1] == "i"]
    check(inputs[1:] == ["[input through a relay]"] * 2, inputs)
    output = "".join(e[2] for e in events if e[1] == "o")
    check(f"far-{len(secret)}-chars" in output, "the far side's output is recorded")


if __name__ == "__main__":
    repl_path = sys.argv[1]
    top = tempfile.mkdtemp(prefix="dshpty-record-")
    try:
        record_dir, state_dir, home = (os.path.join(top, n) for n in ("casts", "state", "home"))
        for d in (record_dir, home):
            os.mkdir(d)
        os.mkdir(state_dir, 0o700)
        os.environ["HOME"] = home
        print("--- a recorded session", flush=True)
        session_run(repl_path, record_dir, state_dir)
        print("--- record without a directory", flush=True)
        refused_without_directory(repl_path, state_dir)
        print("--- a 1 MiB cap", flush=True)
        cut_dir = os.path.join(top, "cut")
        os.mkdir(cut_dir)
        cut_at_cap(repl_path, cut_dir, state_dir)
        print("--- a full disk", flush=True)
        full_disk(repl_path, top, state_dir)
        print("--- a lingering session taken over", flush=True)
        across_a_take_over(repl_path, record_dir, state_dir)
        print("--- a lingering session whose host is killed", flush=True)
        across_a_host_death(repl_path, record_dir, state_dir)
        print("--- a host killed right after a result", flush=True)
        killed_after_a_result(repl_path, record_dir, state_dir)
        print("--- a host killed right after a read", flush=True)
        killed_after_a_read(repl_path, record_dir, state_dir)
        print("--- a password typed through a relay", flush=True)
        through_a_relay(repl_path, record_dir, state_dir)
    finally:
        shutil.rmtree(top, ignore_errors=True)
