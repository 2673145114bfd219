"""Sessions that outlive their host (docs/outlive.md), end to end: real dshpty-repl --json
hosts, real bash, a private --state-dir and HOME. Run as: outlive_e2e.py REPL SUPERVISOR.

- a host SIGKILLed with a numbered loop printing and a send live: a second host attaches,
  every numbered line is there in order, the send is reported over, a send works, close
  proves the tree gone and the rendezvous empty;
- a session without linger still dies with its host;
- EOF detaches; linger runs out: nothing of the tree (setsid and nohup children included)
  is left, a late attach gets the tombstone once;
- refusals: a wrong token, a peer of another uid (setpriv), a peer inside a session (with
  the right token), a state directory with the wrong mode or owner;
- a flood while detached overflows the ring: the oldest output is dropped and the attach
  reports the gap.
"""

import glob
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "repl"))
from repl_harness import DEADLINE_S, JsonRepl, check, fail, kill_quietly, pid_alive, wait_gone  # noqa: E402

REPL, SUPERVISOR = sys.argv[1], sys.argv[2]
MCP = sys.argv[3] if len(sys.argv) > 3 else None
WORK = tempfile.mkdtemp(prefix="dshpty-outlive-")
HOME = os.path.join(WORK, "home")
STATE = os.path.join(WORK, "state")


def rendezvous():
    """The state directory's files but the hosts' own watch sockets (docs/watch.md): a host
    killed with SIGKILL leaves its host-PID.watch, which is no session's rendezvous."""
    return [f for f in os.listdir(STATE) if not (f.startswith("host-") and f.endswith(".watch"))]
os.mkdir(HOME)
os.mkdir(STATE, 0o700)
os.chmod(STATE, 0o700)
os.environ["HOME"] = HOME
os.environ.pop("XDG_RUNTIME_DIR", None)

hosts = []
stray = []  # pids to kill if a check fails half-way


def host(state=STATE):
    h = JsonRepl(REPL, ["--state-dir", state])
    hosts.append(h)
    return h


def wait_until(predicate, what):
    deadline = time.monotonic() + DEADLINE_S
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            fail(f"timed out waiting for {what}")
        time.sleep(0.02)  # polling a condition with a deadline


def records(kind):
    return sorted(glob.glob(os.path.join(STATE, "*." + kind)))


def info(path):
    fields = {}
    with open(path) as f:
        for line in f:
            name, _, value = line.rstrip("\n").partition("=")
            fields[name] = value
    return fields


def record_named(name):
    for path in records("info"):
        fields = info(path)
        if fields.get("name") == name:
            return fields
    fail(f"no rendezvous record named {name}: {rendezvous()}")


def read_all(h, sid):
    return h.ok({"id": f"read-{time.monotonic()}", "op": "read", "sessionId": sid, "count": 20000})["text"]


def ticks(text):
    # The loop's first line may land right after the prompt ("dsh> tick 1").
    return [int(n) for n in re.findall(r"^(?:dsh> )?tick (\d+)$", text, re.M)]


def pids_by_arg(arg):
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                words = f.read().split(b"\0")
        except OSError:
            continue
        if arg.encode() in words:
            out.append(int(d))
    return out


# ---- the frames of link/frames.hpp, for the refusal probes ------------------------------

PROBE = os.path.join(WORK, "probe.py")
PROBE_TEXT = r'''
import os, socket, struct, sys
path, key, token, owner = sys.argv[1:5]
def frame(t, payload):
    return struct.pack("<IB", len(payload) + 1, t) + payload
def s(text):
    b = text.encode()
    return struct.pack("<I", len(b)) + b
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
c.connect(path)
try:
    c.sendall(frame(1, struct.pack("<III", 1, 0, 0)) + frame(12, s(key) + s(token) + s(owner) + struct.pack("<BQ", 0, 0)))
except (BrokenPipeError, ConnectionResetError):
    pass  # refused before it read a byte: its answer is still there to read
data = b""
c.settimeout(20)
while True:
    try:
        chunk = c.recv(65536)
    except ConnectionResetError:
        break
    if not chunk:
        break
    data += chunk
    if b"refused" in data or len(data) > 64:
        break
types = []
at = 0
while at + 5 <= len(data):
    length, t = struct.unpack_from("<IB", data, at)
    if at + 4 + length > len(data):
        break
    payload = data[at + 5: at + 4 + length]
    if t == 74:
        (n,) = struct.unpack_from("<I", payload, 4)
        print("ERROR " + payload[8:8 + n].decode())
    else:
        types.append(t)
    at += 4 + length
print("FRAMES", types)
'''
with open(PROBE, "w") as f:
    f.write(PROBE_TEXT)


def probe(path, key, token, owner, prefix=(), python=sys.executable):
    out = subprocess.run([*prefix, python, "-c", PROBE_TEXT, path, key, token, owner], capture_output=True,
                         text=True, timeout=DEADLINE_S)
    return out.stdout + out.stderr


def main():
    # ---- 1. the host SIGKILLed with a loop printing and a send live ----------------------
    h1 = host()
    opened = h1.ok({"id": 1, "op": "open", "type": "shell", "name": "keep", "linger": 120.0})
    sid = opened["sessionId"]
    shell_pid = opened["pid"]
    stray.append(shell_pid)
    r = h1.ok({"id": 2, "op": "send", "sessionId": sid,
               "text": "(i=0; while :; do i=$((i+1)); echo \"tick $i\"; sleep 0.05; done) & echo bg=$!"})
    bg = int(re.search(r"bg=(\d+)", r["viewport"]).group(1))
    stray.append(bg)
    rec = record_named("keep")
    helper = int(rec["helper_pid"])
    stray.append(helper)
    check(rec["attached"] == "1", f"a held session's record says attached: {rec}")
    st = os.stat(os.path.join(STATE, rec["key"] + ".info"))
    check(st.st_mode & 0o777 == 0o600, f"the record is 0600: {oct(st.st_mode)}")
    # A send live at the host's death: it waits for a file the test makes only after the
    # attach, so it cannot finish before the kill. Its echo on the first host proves its
    # write (and the SENDING frame queued before it) reached the helper.
    release = os.path.join(WORK, "release-send")
    live = f"while [ ! -e {release} ]; do sleep 0.05; done; echo after-wait"
    h1.request({"id": 3, "op": "send", "sessionId": sid, "text": live, "timeoutMs": 120000})

    def seen_on_first():
        text = read_all(h1, sid)
        return ticks(text) if live in text and len(ticks(text)) >= 5 else None
    seen = wait_until(seen_on_first, "the live send's echo and five ticks on the first host")
    last_seen = seen[-1]
    os.kill(h1.proc.pid, 9)
    h1.proc.wait()
    check(pid_alive(helper) and pid_alive(shell_pid) and pid_alive(bg), "the tree outlived its host")
    wait_until(lambda: info(os.path.join(STATE, rec["key"] + ".info"))["attached"] == "0",
               "the helper to notice its host is gone")

    h2 = host()
    attached = h2.ok({"id": 10, "op": "attach"})["sessions"]
    check(len(attached) == 1, f"one session taken over: {attached}")
    a = attached[0]
    check(a["name"] == "keep" and a["status"] == {"kind": "running"} and a["pid"] == shell_pid, f"attach: {a}")
    check(a["gapBytes"] == 0 and a["replayedBytes"] > 0, f"a replay with no gap: {a}")
    check("sendEnded" in a and "went away" in a["sendEnded"], f"the live send is reported over: {a}")
    sid2 = a["sessionId"]
    # Every numbered line, in order, with none missing, up to beyond the host's death.
    got = wait_until(lambda: ticks(read_all(h2, sid2)) if ticks(read_all(h2, sid2))[-1:] >= [last_seen + 10] else None,
                     "ticks past the first host's last")
    check(got == list(range(1, got[-1] + 1)), f"ticks continuous from 1: {got[:5]}...{got[-5:]}\n{read_all(h2, sid2)}")
    check(last_seen in got, "the first host's last tick is among them")
    # A second attach finds nothing left to take over; a name of nothing is NO_SESSION.
    check(h2.ok({"id": 11, "op": "attach"})["sessions"] == [], "nothing left to attach")
    h2.error({"id": 12, "op": "attach", "name": "nothing-by-this-name"}, "NO_SESSION")
    # Another owner cannot take it (by name).
    h2.error({"id": 13, "op": "attach", "owner": "someone-else", "name": "keep"}, "NO_SESSION")
    open(release, "w").close()  # the first host's send ends now, with no host of its own
    r = h2.ok({"id": 14, "op": "send", "sessionId": sid2, "text": "echo hello-$((6*7))", "timeoutMs": 60000})
    check("hello-42" in r["viewport"], f"a send works after the attach: {r}")
    check("after-wait" in read_all(h2, sid2), "the orphaned send's command ran on")

    # ---- 4a-c. refusals, against the same helper ---------------------------------------
    rec = record_named("keep")
    sock = os.path.join(STATE, rec["key"] + ".sock")
    out = probe(sock, rec["key"], "0" * 64, "default")
    check("ERROR refused: wrong token" in out, f"a wrong token is refused: {out}")
    # Positive control for the next two: from here, the right token and another owner get
    # past the peer checks and are refused for the owner only.
    out = probe(sock, rec["key"], rec["token"], "not-the-owner")
    check("ERROR refused: the session belongs to another owner" in out, f"control: {out}")
    # Another uid: the socket is made reachable on purpose (its directory is 0700 and it is
    # 0600), so only SO_PEERCRED stands in the way.
    setpriv = shutil.which("setpriv")
    system_python = "/usr/bin/python3"
    if setpriv and os.getuid() == 0 and os.access(system_python, os.X_OK):
        for d in (WORK, STATE):
            os.chmod(d, 0o711)
        os.chmod(sock, 0o666)
        try:
            out = probe(sock, rec["key"], rec["token"], "default", python=system_python,
                        prefix=(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"))
        finally:
            for d in (WORK, STATE):
                os.chmod(d, 0o700)
            os.chmod(sock, 0o600)
        check(f"ERROR refused: peer uid 65534 is not {os.getuid()}" in out, f"another uid is refused: {out}")
    else:
        print("setpriv, root or /usr/bin/python3 missing: the other-uid refusal is not checked", flush=True)
    # Inside a session, with the right token: refused.
    r = h2.ok({"id": 15, "op": "send", "sessionId": sid2, "timeoutMs": 60000,
               "text": f"{sys.executable} {PROBE} {sock} {rec['key']} {rec['token']} default"})
    check("runs inside a dshpty session" in r["viewport"], f"a peer inside a session is refused: {r['viewport']}")
    # The same from sessions whose helper is another file, with the right token: a copy at
    # another path (another install beside this one), and a copy under another name that
    # is renamed again once it runs. The helper's marks say "inside", not its path.
    for n, (label, name) in enumerate((("copied", "dshpty-supervisor"), ("renamed", "sh-helper"))):
        other = os.path.join(WORK, label)
        os.mkdir(other)
        copy = os.path.join(other, name)
        shutil.copy2(SUPERVISOR, copy)
        saved = os.environ.get("DSHPTY_SUPERVISOR")
        os.environ["DSHPTY_SUPERVISOR"] = copy
        try:
            hx = host()
        finally:
            if saved is None:
                os.environ.pop("DSHPTY_SUPERVISOR")
            else:
                os.environ["DSHPTY_SUPERVISOR"] = saved
        ox = hx.ok({"id": 150 + 10 * n, "op": "open", "type": "shell", "name": label})
        stray.append(ox["pid"])
        helper_x = int(open(f"/proc/{ox['pid']}/stat").read().rsplit(")", 1)[1].split()[1])
        check(os.path.realpath(f"/proc/{helper_x}/exe") == os.path.realpath(copy) or os.getuid() != 0,
              f"the {label} session runs the copy: {os.path.realpath(f'/proc/{helper_x}/exe')}")
        if label == "renamed":
            os.rename(copy, os.path.join(other, "renamed-again"))
        r = hx.ok({"id": 151 + 10 * n, "op": "send", "sessionId": ox["sessionId"], "timeoutMs": 60000,
                   "text": f"{sys.executable} {PROBE} {sock} {rec['key']} {rec['token']} default"})
        check("runs inside a dshpty session" in r["viewport"],
              f"a peer inside a session of a {label} helper is refused: {r['viewport']}")
        hx.ok({"id": 152 + 10 * n, "op": "close", "sessionId": ox["sessionId"]})
        wait_gone([ox["pid"], helper_x], f"close of the {label} helper's session")
    # None of it touched the attachment.
    r = h2.ok({"id": 16, "op": "send", "sessionId": sid2, "text": "echo still-$((2+3))", "timeoutMs": 60000})
    check("still-5" in r["viewport"], f"the session is still ours: {r}")

    h2.ok({"id": 17, "op": "close", "sessionId": sid2})
    wait_gone([shell_pid, bg, helper], "close of the attached session")
    check(records("sock") == [] and records("info") == [], f"the rendezvous is empty: {rendezvous()}")

    # ---- 2. without linger, the session dies with its host ------------------------------
    h3 = host()
    o = h3.ok({"id": 20, "op": "open", "type": "shell", "name": "plain"})
    stray.append(o["pid"])
    os.kill(h3.proc.pid, 9)
    h3.proc.wait()
    wait_gone([o["pid"]], "a session without linger after its host's death")
    check(rendezvous() == [], "no rendezvous for a session without linger")

    # ---- 3. EOF detaches; linger runs out; the tombstone -------------------------------
    h4 = host()
    o = h4.ok({"id": 30, "op": "open", "type": "shell", "name": "short", "linger": 2})
    stray.append(o["pid"])
    h4.ok({"id": 31, "op": "send", "sessionId": o["sessionId"],
           "text": "setsid sleep 4242 & nohup sleep 4343 >/dev/null 2>&1 & (trap '' HUP TERM; sleep 4444) &"})
    escaped = wait_until(lambda: (pids_by_arg("4242") + pids_by_arg("4343") + pids_by_arg("4444"))
                         if len(pids_by_arg("4242") + pids_by_arg("4343") + pids_by_arg("4444")) >= 3 else None,
                         "the setsid, nohup and HUP-proof children")
    stray.extend(escaped)
    helper = int(record_named("short")["helper_pid"])
    stray.append(helper)
    h4.proc.stdin.close()  # EOF: the host leaves, the session lingers
    check(h4.wait_exit() == 0, "the host exits 0 after detaching")
    # A helper writes a tombstone only when its linger ran out (or its shell ended) with no
    # host: so the tombstone itself proves EOF detached the session instead of killing it.
    wait_until(lambda: records("tomb"), "the tombstone")
    wait_gone([o["pid"], helper, *escaped], "linger's expiry")
    check(pids_by_arg("4242") + pids_by_arg("4343") + pids_by_arg("4444") == [], "nothing of the tree is left")
    check(records("sock") == [] and records("info") == [], f"only the tombstone is left: {rendezvous()}")
    h5 = host()
    late = h5.ok({"id": 40, "op": "attach", "name": "short"})["sessions"]
    check(len(late) == 1 and late[0]["sessionId"] is None, f"a late attach gets the tombstone: {late}")
    check(late[0]["status"] == {"kind": "exited", "exitCode": None, "signal": "SIGKILL",
                                "reason": "killed after linger"}, f"tombstone status: {late[0]}")
    h5.error({"id": 41, "op": "attach", "name": "short"}, "NO_SESSION")  # told once, then forgotten
    check(rendezvous() == [], f"the tombstone is consumed: {rendezvous()}")

    # ---- 4d. unsafe state directories ------------------------------------------------------
    loose = os.path.join(WORK, "loose")
    os.mkdir(loose)
    os.chmod(loose, 0o755)
    e = h5.call({"id": 42, "op": "open", "type": "shell", "linger": 5})  # h5's own dir is fine
    check(e["ok"], f"control: a lingering open with a 0700 state dir works: {e}")
    stray.append(e["result"]["pid"])
    h5.ok({"id": 43, "op": "close", "sessionId": e["result"]["sessionId"]})
    h6 = host(loose)
    err = h6.error({"id": 44, "op": "open", "type": "shell", "linger": 5}, "BACKEND_FAILED")
    check("mode 0755 lets others in" in err["message"], f"a 0755 state dir is refused: {err}")
    os.chmod(loose, 0o700)
    os.chown(loose, 65534, 65534) if os.getuid() == 0 else None
    if os.getuid() == 0:
        err = h6.error({"id": 45, "op": "open", "type": "shell", "linger": 5}, "BACKEND_FAILED")
        check("owned by uid 65534" in err["message"], f"a state dir of another owner is refused: {err}")
    h6.error({"id": 46, "op": "open", "type": "shell", "linger": 1.5}, "INVALID_ARGUMENT")
    h6.error({"id": 47, "op": "open", "type": "shell", "linger": 604801}, "INVALID_ARGUMENT")
    err = h6.error({"id": 48, "op": "open", "type": "shell", "linger": 5, "sandbox": "read-only"}, "INVALID_ARGUMENT")
    check("linger is not available for confined sessions" in err["message"], f"confined: {err}")

    # ---- 5. a flood while detached overflows the ring ---------------------------------------
    h7 = host()
    o = h7.ok({"id": 50, "op": "open", "type": "shell", "name": "flood", "linger": 120})
    stray.append(o["pid"])
    go, done = os.path.join(WORK, "go"), os.path.join(WORK, "done")
    h7.ok({"id": 51, "op": "send", "sessionId": o["sessionId"],
           "text": f"(while [ ! -e {go} ]; do sleep 0.05; done; seq 1 1500000; touch {done}) &"})
    helper = int(record_named("flood")["helper_pid"])
    stray.append(helper)
    os.kill(h7.proc.pid, 9)
    h7.proc.wait()
    wait_until(lambda: info(os.path.join(STATE, record_named("flood")["key"] + ".info"))["attached"] == "0",
               "the flood's helper to notice its host is gone")
    open(go, "w").close()
    # The program is never blocked by a host that is gone: the whole flood is written.
    wait_until(lambda: os.path.exists(done), "the flood to finish with no host")
    h8 = host()
    a = h8.ok({"id": 60, "op": "attach", "name": "flood"})["sessions"][0]
    check(a["gapBytes"] > 0, f"the overflow is reported as a gap: {a}")
    check(a["replayedBytes"] == 4 << 20, f"the ring replays its capacity: {a}")
    text = read_all(h8, a["sessionId"])
    numbers = [int(n) for n in re.findall(r"^(\d+)$", text, re.M)]
    check(numbers and numbers[-1] == 1500000, f"the flood's end is replayed: {numbers[-3:]}")
    check(numbers == list(range(numbers[0], 1500001)), "what is replayed is continuous")
    check(numbers[0] > 1, "the oldest output was dropped")
    # The first look shows what no host showed, once, cut by the one truncation rule with
    # its marker; the next shows none of it again.
    look = h8.ok({"id": 62, "op": "send", "sessionId": a["sessionId"], "timeoutMs": 10000})
    check(look["truncated"] and "[output truncated: " in look["viewport"], f"the replay is cut with the marker: {look}")
    check(look["viewport"].rstrip().endswith("dsh>") or "1500000\n" in look["viewport"],
          f"the flood's end is in the first look: {look['viewport'][-200:]!r}")
    again = h8.ok({"id": 63, "op": "send", "sessionId": a["sessionId"], "timeoutMs": 10000})
    check("1500000" not in again["viewport"] and not again["truncated"], f"a second look repeats nothing: {again}")
    h8.ok({"id": 61, "op": "close", "sessionId": a["sessionId"]})
    wait_gone([o["pid"], helper], "close of the flood session")
    for h in (h5, h6, h8):
        h.ok({"id": 99, "op": "shutdown"})
        h.wait_exit()
    check(rendezvous() == [], f"nothing is left in the state directory: {rendezvous()}")

    # ---- 6. the text face: --linger, EOF detaches, list and attach, quit kills --------------
    def text_repl(script):
        proc = subprocess.run([REPL, "--state-dir", STATE], input=script, capture_output=True, text=True,
                              timeout=DEADLINE_S, start_new_session=True)
        print(proc.stdout, flush=True)
        check(proc.returncode == 0, f"text REPL exit {proc.returncode}: {proc.stderr}")
        return proc.stdout
    out = text_repl("open shell txt --linger 60\n")
    check("started terminal session pty-1 (txt)" in out, f"text open: {out}")
    rec = record_named("txt")
    stray.extend([int(rec["helper_pid"]), int(rec["shell_pid"])])
    check(pid_alive(int(rec["shell_pid"])), "end of input left the --linger session running")
    out = text_repl("list\nattach txt\nsend txt echo text-$((3*3))\nquit\n")
    check("lingering (txt) [shell]" in out and "attach takes it over" in out, f"text list: {out}")
    check("attached terminal session pty-1 (txt) [shell] running" in out, f"text attach: {out}")
    check("text-9" in out, f"a send after the text attach: {out}")
    wait_gone([int(rec["helper_pid"]), int(rec["shell_pid"])], "quit after the text attach")
    check(rendezvous() == [], f"quit leaves nothing: {rendezvous()}")

    # ---- 7. MCP: SIGTERM detaches, a restarted server lists and attaches ------------------
    if MCP:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mcp"))
        from mcp_client import McpServer
        m1 = McpServer(MCP, ["--state-dir", STATE])
        m1.initialize()
        text = m1.tool("terminal_open", {"name": "agent", "linger": 60})
        check("started terminal session pty-1 (agent)" in text, f"MCP open: {text}")
        rec = record_named("agent")
        stray.extend([int(rec["helper_pid"]), int(rec["shell_pid"])])
        os.kill(m1.proc.pid, signal.SIGTERM)
        check(m1.proc.wait(timeout=DEADLINE_S) == 0, "the MCP server exits 0 on SIGTERM")
        check(pid_alive(int(rec["shell_pid"])), "SIGTERM left the lingering session running")
        m2 = McpServer(MCP, ["--state-dir", STATE])
        m2.initialize()
        text = m2.tool("terminal_list")
        check("(no terminal sessions)" in text and "lingering (agent) [shell]" in text and
              "s left: terminal_attach takes it over" in text, f"MCP list: {text}")
        text = m2.tool("terminal_attach")
        check("attached terminal session pty-1 (agent) [shell] running" in text, f"MCP attach: {text}")
        text = m2.tool("terminal_send", {"session": "agent", "text": "echo mcp-$((1+1))"})
        check("mcp-2" in text, f"MCP send after attach: {text}")
        m2.tool("terminal_close", {"session": "agent"})
        wait_gone([int(rec["helper_pid"]), int(rec["shell_pid"])], "MCP close after attach")
        check(m2.close_stdin_and_wait() == 0, "the MCP server exits 0")
        check(rendezvous() == [], f"MCP leaves nothing: {rendezvous()}")
    else:
        print("dshpty-mcp not built: its attach is not checked", flush=True)


try:
    main()
    print("outlive e2e: ok", flush=True)
finally:
    for h in hosts:
        h.close()
    kill_quietly(stray)
    shutil.rmtree(WORK, ignore_errors=True)
