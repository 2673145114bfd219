"""Background jobs through dshpty-repl --json, with real programs (docs/tool-protocol.md,
"Background jobs"): a job with `until` answers when its condition holds and runs on (its
output still readable by offset, the session's one live send still its, its end still
its status); `output` by offset for two readers, with `waitMs` and `droppedBytes`, and
after the job's session closed; `stop` ends the job's processes (a double-forked setsid
server too) and not an earlier `&` job, frees the port, keeps the shell's state. Run on bash, zsh and fish, and on a confined
session with its network on (skipped with the reason where bubblewrap cannot run)."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from repl_harness import JsonRepl, check, pid_alive, wait_gone

SERVER = "python3 -m http.server {port} --bind 127.0.0.1 >/dev/null 2>&1"
# The server leaves the job's tree: a subshell starts it in a session of its own and exits
# (its parent gone, the session's helper adopts it), while the job's own command waits.
DAEMON = "sh -c '(setsid {server} &); exec sleep 1000'"
EXPORT = {"bash": "export KEEP=kept-{n}", "zsh": "export KEEP=kept-{n}", "fish": "set -gx KEEP kept-{n}"}
# zsh's and fish's `wait` with no job named waits for every background job, the earlier `&`
# too (zsh holds the shell's SIGINT until then): theirs names the job's own.
# The dialects' runs go in parallel and pid_of finds a process by its command line: each run
# sleeps for lengths of its own (a run found another's `sleep 1081` and saw it killed by that
# run's own cleanup). S(k) is run-unique and still a long sleep.
RUN_BASE = (os.getpid() % 90000 + 10000) * 1000


def S(k):
    return RUN_BASE + k


WAIT = {"bash": f"sleep {S(973)} & wait", "zsh": f"sleep {S(973)} & wait $!", "fish": f"sleep {S(973)} & wait $last_pid"}
AMP = {"bash": f"sleep {S(999)} & echo amp-pid=$!", "zsh": f"sleep {S(999)} & echo amp-pid=$!",
       "fish": f"sleep {S(999)} & echo amp-pid=$last_pid"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listens(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            return True
    except OSError:
        return False


def read_all(repl, job, rid, offset=0, wait_ms=20000):
    """Reads a job by offset until it is done, as a client written from the doc does (it
    stops at `done`: the tail must be in what it read): (text, dropped bytes, final answer)."""
    text, dropped, n = "", 0, 0
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        n += 1
        out = repl.ok({"id": f"{rid}-{n}", "op": "output", "sendId": job, "offset": offset, "waitMs": wait_ms})
        check(out["nextOffset"] >= offset and out["truncated"] == (out["droppedBytes"] > 0), out)
        text += out["delta"]
        dropped += out["droppedBytes"]
        offset = out["nextOffset"]
        if out["done"]:
            check("result" in out, out)
            return text, dropped, out
    check(False, f"job {job} did not end")


def host_pid(pid, comm):
    """The host's number for `pid` as a confined session's pid namespace numbers it (its
    NSpid line ends in it). `$!` is said before the child's exec: until then its name is
    the shell's, so the look is repeated until `comm` runs (its namespace number alone,
    a small number, is some host process's too: pid 3 was a kernel thread)."""
    deadline = time.monotonic() + 30
    while True:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/status") as f:
                    fields = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
            except OSError:
                continue
            nspids = fields.get("NSpid", "").split()
            if len(nspids) > 1 and nspids[-1] == str(pid) and fields.get("Name") == comm:
                return int(entry)
        check(time.monotonic() < deadline, f"no {comm} numbered {pid} in a pid namespace")
        time.sleep(0.01)  # polling a condition with a deadline


def look(repl, rid, sid, text):
    out = repl.ok({"id": rid, "op": "send", "sessionId": sid, "text": text, "idleMs": 20000, "timeoutMs": 60000})
    check(out["waitReason"] == "stdin_read", out)
    return out


def until_runs_on(repl, sid):
    """A job with an output condition answers when it holds; the job runs on and ends
    with its own status; the one live send is still its meanwhile."""
    sent = repl.ok({"id": "ready", "op": "send", "sessionId": sid, "background": True, "idleMs": 50,
                    "text": "sh -c 'echo starting; sleep 1; echo ready; sleep 1; echo after-ready; exit 5'",
                    "until": {"output": "^ready$"}})
    check(sent["job"] == "ready" and sent["waitReason"] == "matched" and sent["match"] == {"output": "ready"}, sent)
    check(sent["done"] is False, sent)
    busy = repl.error({"id": "busy", "op": "send", "sessionId": sid, "text": "true"}, "SEND_ACTIVE")
    check('"ready"' in busy["message"], busy)
    text, dropped, last = read_all(repl, "ready", "ready-read")
    check(dropped == 0 and "starting" in text and "after-ready" in text, text)
    result = last["result"]
    check(result["waitReason"] == "stdin_read" and result["exitCode"] == 5, result)


def exits_first(repl, sid):
    """A job that ends before its condition answers with how it ended."""
    sent = repl.ok({"id": "exit3", "op": "send", "sessionId": sid, "background": True,
                    "text": "sh -c 'sleep 0.3; exit 3'", "until": {"output": "^never$"}})
    check(sent["done"] is True and sent["waitReason"] == "stdin_read", sent)
    check(sent["result"]["exitCode"] == 3 and "match" not in sent, sent)


def condition_timeout(repl, sid):
    """timeoutMs bounds only the wait for the condition: the job runs on."""
    sent = repl.ok({"id": "slow", "op": "send", "sessionId": sid, "background": True, "timeoutMs": 300,
                    "text": "sh -c 'sleep 1; echo late-line; exit 6'", "until": {"output": "^never$"}})
    check(sent["waitReason"] == "timeout" and sent["done"] is False, sent)
    text, _, last = read_all(repl, "slow", "slow-read")
    check("late-line" in text and last["result"]["exitCode"] == 6, last)


def two_readers(repl, sid):
    """Two readers by offset get the same bytes; a wait returns on new output; a reader
    too slow for the retained window is told what it lost."""
    sent = repl.ok({"id": "lines", "op": "send", "sessionId": sid, "background": True,
                    "text": "for i in 1 2 3; do echo line-$i; sleep 0.3; done"})
    check(sent == {"job": "lines", "sessionId": sid}, sent)
    a, _, _ = read_all(repl, "lines", "reader-a")
    b, _, _ = read_all(repl, "lines", "reader-b")
    check(a == b and "line-3" in a, (a, b))
    # Without an offset: the send's one consuming cursor, as before (the result holds it all).
    cur = repl.ok({"id": "lines-cursor", "op": "output", "sendId": "lines"})
    check(cur["done"] is True and cur["result"]["waitReason"] == "stdin_read", cur)
    # A flood past the window (1 MiB): a reader from 0 after it is told what it lost.
    repl.ok({"id": "flood", "op": "send", "sessionId": sid, "background": True,
             "text": "seq 1 400000; echo flood-end"})
    # The slow reader starts once the job ended (its end seen through the consuming cursor).
    consume(repl, "flood")
    text, dropped, last = read_all(repl, "flood", "flood-read")
    check(dropped > 0 and dropped + len(text.encode()) == last["nextOffset"], (dropped, len(text), last["nextOffset"]))
    check("flood-end" in text, text[-200:])
    # A wait with nothing new runs out and says so.
    repl.ok({"id": "quiet", "op": "send", "sessionId": sid, "background": True, "text": "sleep 1; echo woke"})
    first = repl.ok({"id": "quiet-0", "op": "output", "sendId": "quiet", "offset": 0})
    waited = repl.ok({"id": "quiet-1", "op": "output", "sendId": "quiet", "offset": first["nextOffset"],
                      "waitMs": 30000})
    check("woke" in waited["delta"] or waited["done"], waited)
    read_all(repl, "quiet", "quiet-read")
    bad = repl.error({"id": "past", "op": "output", "sendId": "quiet", "offset": 1 << 40}, "INVALID_ARGUMENT")
    check("offset" in bad["message"], bad)


def after_close(repl):
    """A job's output stays readable by offset once its session is closed: a reader carries
    on from where it was (done, with the result), one from 0 gets it all again, and nothing
    claims the log was empty."""
    sid = repl.ok({"id": "ac-open", "op": "open", "type": "shell", "name": "closing"})["sessionId"]
    repl.ok({"id": "ac", "op": "send", "sessionId": sid, "background": True,
             "text": "echo before-$((6*7)); sleep 300"})
    seen, text = 0, ""
    for n in range(100):
        out = repl.ok({"id": f"ac-{n}", "op": "output", "sendId": "ac", "offset": seen, "waitMs": 20000})
        seen, text = out["nextOffset"], text + out["delta"]
        if "before-42\n" in text:
            break
    check("before-42\n" in text and out["done"] is False, out)
    repl.ok({"id": "ac-close", "op": "close", "sessionId": sid})
    there = repl.ok({"id": "ac-there", "op": "output", "sendId": "ac", "offset": seen})
    check(there["done"] is True and there["nextOffset"] == seen and there["delta"] == "", there)
    check(there["result"]["error"]["code"] == "SESSION_CLOSING", there)
    again, dropped, last = read_all(repl, "ac", "ac-again")
    check(again == text and dropped == 0 and last["nextOffset"] == seen, (again, text, last))
    cursor = repl.ok({"id": "ac-cursor", "op": "output", "sendId": "ac"})
    check(cursor["done"] is True and cursor["nextOffset"] == seen, cursor)
    bad = repl.error({"id": "ac-past", "op": "output", "sendId": "ac", "offset": seen + 1}, "INVALID_ARGUMENT")
    check("past" in bad["message"], bad)


def consume(repl, job):
    """Reads `job` through its one consuming cursor to its end, every read accounting for
    what it took: given, or counted as dropped (the ring's loss and the cap's cut alike)."""
    # It first falls behind by more than one delta's cap (an offset reader sees how far).
    seen = 0
    for n in range(1000):
        ahead = repl.ok({"id": f"ahead-{n}", "op": "output", "sendId": job, "offset": seen, "waitMs": 20000})
        seen = ahead["nextOffset"]
        if seen > 600_000 or ahead["done"]:
            break
    before = 0
    for n in range(1000):
        out = repl.ok({"id": f"wait-{n}", "op": "output", "sendId": job, "waitMs": 20000})
        if out["done"]:
            check(out["droppedBytes"] == 0 and "result" in out, out)
            break
        check(len(out["delta"].encode()) + out["droppedBytes"] == out["nextOffset"] - before, (before, out))
        check(out["truncated"] == (out["droppedBytes"] > 0), out)
        before = out["nextOffset"]


def consuming_reader(repl_path):
    """A consuming reader behind a flood on a host whose result cap (30000) is below the
    cursor's retained tail: each delta is cut to the cap, and the cut is counted."""
    repl = JsonRepl(repl_path, ("--max-result-bytes", "30000"))
    try:
        sid = repl.ok({"id": 1, "op": "open", "type": "shell", "shell": "bash"})["sessionId"]
        repl.pids += [repl.ok({"id": "ls", "op": "list"})["sessions"][0]["pid"]]
        repl.ok({"id": "cf", "op": "send", "sessionId": sid, "background": True, "text": "seq 1 300000"})
        consume(repl, "cf")
        repl.request({"id": "bye", "op": "shutdown"})
        check(repl.wait_exit() == 0, "shutdown")
        wait_gone(repl.pids, "after shutdown")
    finally:
        repl.close()


def stop_at_once(repl, sid):
    """A stop right after the ack (the command may not even be typed yet, or typed and taken
    back unread) and a stop of a job that runs inside the shell (a builtin loop, whose group is
    the shell's) both end it: once the stop answers, the job is done. Several rounds, since
    where the stop lands (before the write, in the queue, in the command) is the loop's."""
    for n, text in enumerate(("sleep 100",) * 8 + ("while :; do :; done",)):
        repl.ok({"id": f"early-{n}", "op": "send", "sessionId": sid, "background": True, "text": text})
        stop = repl.ok({"id": f"early-{n}-stop", "op": "stop", "sendId": f"early-{n}"})
        check(stop["stopped"] is True and stop["remaining"] == [], stop)
        done = repl.ok({"id": f"early-{n}-out", "op": "output", "sendId": f"early-{n}"})
        check(done["done"] is True and done["result"]["waitReason"] == "stdin_read", done)
    look(repl, "early-after", sid, "echo fine")


def stop_own_amp_at_once(repl, sid, shell):
    """A stop right after the ack of a line the shell runs itself with its own `&`
    (`sleep N & wait`): wherever the stop lands (before the write, the line taken back, the
    shell reading it, its `&` forked or not yet), once it answers `stopped` nothing of the
    line runs, nor starts after. Before: the look at the line's start could come before its
    `&` forked, and the sleep outlived a `stopped: true`."""
    for n in range(12):
        k = S(1100 + n)
        text = WAIT[shell].replace(str(S(973)), str(k))
        repl.ok({"id": f"amp-once-{n}", "op": "send", "sessionId": sid, "background": True, "text": text})
        stop = repl.ok({"id": f"amp-once-{n}-stop", "op": "stop", "sendId": f"amp-once-{n}"})
        check(stop["stopped"] is True and stop["remaining"] == [], stop)
        check(not alive_named(f"sleep {k}"), f"round {n}: `{text}` still runs after {stop}")
        read_all(repl, f"amp-once-{n}", f"amp-once-{n}-read")
        check(not alive_named(f"sleep {k}"), f"round {n}: `{text}` started after {stop}")
    look(repl, "amp-once-after", sid, "echo fine")


def alive_named(cmdline):
    """Whether a live process has exactly this command line (words), looked at once."""
    return bool(live_named(cmdline))


def server_job(repl, sid, shell, n, second=None, confined=False):
    """A server started as a job, waited for by port; reachable from a second session;
    stopped whole; its port freed; the shell's state kept; an earlier `&` job left alone."""
    look(repl, f"export-{n}", sid, EXPORT[shell].format(n=n))
    bg = look(repl, f"amp-{n}", sid, AMP[shell])
    amp = int(bg["viewport"].split("amp-pid=")[-1].split()[0])
    if confined:
        amp = host_pid(amp, "sleep")
    port = free_port()
    sent = repl.ok({"id": f"srv-{n}", "op": "send", "sessionId": sid, "background": True, "timeoutMs": 60000,
                    "text": DAEMON.format(server=SERVER.format(port=port)), "until": {"port": port}})
    check(sent["waitReason"] == "matched" and sent["match"]["port"] == port, sent)
    server = sent["match"]["pid"]
    check(listens(port), f"port {port} does not listen at the match")
    listed = {x["sessionId"]: x for x in repl.ok({"id": f"list-{n}", "op": "list"})["sessions"]}[sid]
    activity = listed["activity"]
    check(activity["state"] == "busy" and "http.server" in activity["job"]["command"], listed)
    check(activity["job"]["sendId"] == f"srv-{n}" and activity["job"]["processes"] >= 2, listed)
    check({"port": port, "address": "127.0.0.1", "pid": server, "command": "python3"} in activity["listening"], listed)
    if second:
        fetch = look(repl, f"curl-{n}", second, f"curl -s -o /dev/null -w 'code=%{{http_code}}\\n' http://127.0.0.1:{port}/")
        check("code=200" in fetch["viewport"], fetch)
    stop = repl.ok({"id": f"stop-{n}", "op": "stop", "sendId": f"srv-{n}"})
    check(stop["stopped"] is True and stop["remaining"] == [] and stop["signals"][0] == "SIGINT", stop)
    check(not pid_alive(server), f"server {server} survived the stop")
    check(not listens(port), f"port {port} still listens after the stop")
    check(pid_alive(amp), f"the earlier background job {amp} did not survive the stop")
    done = repl.ok({"id": f"srv-{n}-done", "op": "output", "sendId": f"srv-{n}"})
    check(done["done"] is True and done["result"]["waitReason"] == "stdin_read", done)
    after = {x["sessionId"]: x for x in repl.ok({"id": f"list-{n}-after", "op": "list"})["sessions"]}[sid]
    check(after["activity"]["state"] == "prompt" and "job" not in after["activity"], after)
    check(all(x["port"] != port for x in after["activity"]["listening"]), after)
    kept = look(repl, f"keep-{n}", sid, "echo have-$KEEP")
    check(f"have-kept-{n}" in kept["viewport"], kept)
    # A second stop of the ended job: nothing left to do.
    again = repl.ok({"id": f"stop-{n}-again", "op": "stop", "sendId": f"srv-{n}"})
    check(again["stopped"] is True and again["signals"] == [], again)
    return amp


def scrollback(repl, rid, sid):
    return repl.ok({"id": rid, "op": "read", "sessionId": sid})["text"]


def stop_typed_ahead(repl, sid, work, shell):
    """A stop of a job typed ahead behind a command still running (its text in the input
    queue, no command start of its own) takes the text back: no signal, the command in
    front runs on to its end, the job never runs. The command in front waits on a FIFO the
    test opens when it is done, so nothing here depends on timing."""
    fifo = os.path.join(work, f"front-{shell}.fifo")
    mark = os.path.join(work, f"ahead-{shell}-ran")
    os.mkfifo(fifo)
    front = repl.ok({"id": "front", "op": "send", "sessionId": sid, "idleMs": 300,
                     "text": f"cat {fifo} >/dev/null; printf '%s-%s\\n' FRONT DONE"})
    check(front["waitReason"] == "inferred_idle", front)
    text = f"touch {mark}; sleep 30"
    sent = repl.ok({"id": "ahead", "op": "send", "sessionId": sid, "background": True, "text": text})
    check(sent == {"job": "ahead", "sessionId": sid}, sent)
    stop = repl.ok({"id": "ahead-stop", "op": "stop", "sendId": "ahead"})
    check(stop == {"stopped": True, "signals": [], "remaining": [], "takenBackBytes": len(text) + 1}, stop)
    with open(fifo, "w"):
        pass  # the command in front reads its end and goes on
    read_all(repl, "ahead", "ahead-read")
    look(repl, "ahead-after", sid, "echo fine")
    check("\nFRONT-DONE" in scrollback(repl, "ahead-scroll", sid), "the command in front did not run to its end")
    check(not os.path.exists(mark), "the stopped job ran")
    os.unlink(fifo)


def stop_typed_ahead_started(repl, sid, work, shell):
    """A job typed ahead behind a line still running, started once that line ended: its stop
    leaves the `&` the earlier line started after the job's write (adversary round 6 F1). The
    earlier line waits on a FIFO the test opens, so nothing here depends on timing."""
    fifo = os.path.join(work, f"earlier-{shell}.fifo")
    os.mkfifo(fifo)
    front = repl.ok({"id": "earlier", "op": "send", "sessionId": sid, "idleMs": 300,
                     "text": f"cat {fifo} >/dev/null; sleep {S(1081)} &"})
    check(front["waitReason"] == "inferred_idle", front)
    repl.request({"id": "later", "op": "send", "sessionId": sid, "background": True,
                  "text": f"printf '%s-%s\\n' started 42; sleep {S(1082)}", "until": {"output": "^started-42$"}})
    with open(fifo, "w"):
        pass  # the earlier line goes on: its `&`, its end, then the job typed behind it
    matched = repl.response("later")
    check(matched.get("ok") and matched["result"]["match"] == {"output": "started-42"}, matched)
    earlier, job = pid_of(f"sleep {S(1081)}"), pid_of(f"sleep {S(1082)}")
    stop = repl.ok({"id": "later-stop", "op": "stop", "sendId": "later"})
    check(stop["stopped"] is True and stop["signals"][:1] == ["SIGINT"], stop)
    check(not pid_alive(job), f"the typed-ahead job's command {job} survived its stop")
    check(pid_alive(earlier), f"the earlier line's & was stopped with the job typed behind it: {stop} earlier={earlier} job={job}")
    read_all(repl, "later", "later-read")
    os.kill(earlier, signal.SIGKILL)
    wait_gone([earlier], "the earlier line's & after kill")
    look(repl, "later-after", sid, "echo fine")
    os.unlink(fifo)


def match(seen, program, args):
    head, _, rest = seen.partition("\0")
    return os.path.basename(head).startswith(program) and rest == args


def live_named(cmdline):
    """The live processes whose command line is `cmdline` (words), looked at once."""
    # argv[0] as the command line says it, or the full path a launcher (a pyenv shim) put there.
    words = cmdline.split()
    want = "\0".join(words[1:]) + "\0"
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline") as f:
                if entry.isdigit() and match(f.read(), words[0], want) and pid_alive(int(entry)):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def pid_of(cmdline):
    """The pid of the one process whose command line is `cmdline` (words), polled for."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = live_named(cmdline)
        if found:
            return found[0]
        time.sleep(0.02)  # polling a condition with a deadline
    check(False, f"no process {cmdline!r}")


def state_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def stop_ended(repl, sid, shell, earlier):
    """A job that ended but left processes running is still stopped: a server its command
    daemonized (setsid, its parent gone) and a server the shell holds suspended (SIGTSTP);
    an earlier `&` job and a later one are left alone."""
    port = free_port()
    sent = repl.ok({"id": "daemon", "op": "send", "sessionId": sid, "background": True, "timeoutMs": 60000,
                    "text": f"sh -c '(setsid {SERVER.format(port=port)} &)'; echo launched"})
    if not sent.get("done"):
        read_all(repl, "daemon", "daemon-read")
    deadline = time.monotonic() + 60
    while not listens(port):
        check(time.monotonic() < deadline, f"the daemon never listened on {port}")
        time.sleep(0.05)  # polling a condition with a deadline
    server = pid_of(f"python3 -m http.server {port} --bind 127.0.0.1")
    later = look(repl, "daemon-later", sid, AMP[shell].replace(str(S(999)), str(S(998))))
    later = int(later["viewport"].split("amp-pid=")[-1].split()[0])
    stop = repl.ok({"id": "daemon-stop", "op": "stop", "sendId": "daemon"})
    check(stop["stopped"] is True and stop["remaining"] == [] and stop["signals"][:1] == ["SIGINT"], stop)
    check(not pid_alive(server), f"the daemon {server} survived the stop of its ended job")
    check(not listens(port), f"port {port} still listens after the stop")
    check(pid_alive(earlier) and pid_alive(later), "an earlier or later & job was stopped")
    # Suspended: the job ends at the shell's prompt, its server stopped (T) in the job table.
    port = free_port()
    repl.ok({"id": "tstp", "op": "send", "sessionId": sid, "background": True,
             "text": f"python3 -m http.server {port} --bind 127.0.0.1"})
    server = pid_of(f"python3 -m http.server {port} --bind 127.0.0.1")
    repl.ok({"id": "tstp-signal", "op": "signal", "sessionId": sid, "signal": "SIGTSTP"})
    read_all(repl, "tstp", "tstp-read")
    check(state_of(server) == "T", f"the suspended server is {state_of(server)}")
    stop = repl.ok({"id": "tstp-stop", "op": "stop", "sendId": "tstp"})
    check(stop["stopped"] is True and stop["remaining"] == [] and stop["signals"][:1] == ["SIGINT"], stop)
    check(not pid_alive(server), f"the suspended server {server} survived the stop")
    look(repl, "tstp-after", sid, "echo fine")
    return later


def stop_own_line(repl, sid, work, shell, earlier):
    """A stop ends what the job's own line put in the background, while the job runs (`a &
    b`; `a & wait`, which the shell runs itself) and after it settled by its timeout while
    its line ran on (what the line starts then is still its); an earlier `&` job stays, and
    so does the command a job settled behind without starting its line.
    Each stop comes once the process it must end is seen, so nothing depends on timing."""
    for n, text in enumerate((f"sleep {S(971)} & sleep {S(972)}", WAIT[shell])):
        repl.ok({"id": f"own-{n}", "op": "send", "sessionId": sid, "background": True, "text": text})
        mine = pid_of(f"sleep {S(971 + 2 * n)}")
        front = pid_of(f"sleep {S(972)}") if n == 0 else None
        stop = repl.ok({"id": f"own-{n}-stop", "op": "stop", "sendId": f"own-{n}"})
        check(stop["stopped"] is True and stop["remaining"] == [] and stop["signals"][:1] == ["SIGINT"], (text, stop))
        check(not pid_alive(mine), f"{text!r}: its own & {mine} survived the stop")
        check(front is None or not pid_alive(front), f"{text!r}: its command {front} survived the stop")
        read_all(repl, f"own-{n}", f"own-{n}-read")
    # Settled by its timeout while its line waits on a FIFO; the line then starts its next
    # command, which the stop must end as the job's.
    fifo = os.path.join(work, f"settled-{shell}.fifo")
    os.mkfifo(fifo)
    repl.ok({"id": "late", "op": "send", "sessionId": sid, "background": True, "timeoutMs": 300,
             "text": f"cat {fifo} >/dev/null; sleep {S(975)}"})
    _, _, last = read_all(repl, "late", "late-read")
    check(last["result"]["waitReason"] == "timeout", last)
    with open(fifo, "w"):
        pass
    after = pid_of(f"sleep {S(975)}")
    stop = repl.ok({"id": "late-stop", "op": "stop", "sendId": "late"})
    check(stop["stopped"] is True and stop["remaining"] == [] and stop["signals"][:1] == ["SIGINT"], stop)
    check(not pid_alive(after), f"the settled job's next command {after} survived the stop")
    check(pid_alive(earlier), "an earlier & job was stopped")
    look(repl, "late-after", sid, "echo fine")
    # Settled by its timeout while typed behind a command still running, its line not
    # started: that command is not its, and the stop leaves it alone.
    repl.ok({"id": "held", "op": "send", "sessionId": sid, "idleMs": 300, "text": f"cat {fifo} >/dev/null"})
    front = pid_of(f"cat {fifo}")
    repl.ok({"id": "behind", "op": "send", "sessionId": sid, "background": True, "timeoutMs": 300, "text": "true"})
    _, _, last = read_all(repl, "behind", "behind-read")
    check(last["result"]["waitReason"] == "timeout", last)
    stop = repl.ok({"id": "behind-stop", "op": "stop", "sendId": "behind"})
    check(stop == {"stopped": True, "signals": [], "remaining": []}, stop)
    check(pid_alive(front), "the command a stopped job was typed behind was stopped")
    with open(fifo, "w"):
        pass
    look(repl, "behind-after", sid, "echo fine")
    os.unlink(fifo)


def run(repl_path, shell, sandbox=None):
    with tempfile.TemporaryDirectory(prefix="dshpty-jobs-") as home:
        os.environ["HOME"] = home
        work = os.path.join(home, "work")
        os.mkdir(work)
        repl = JsonRepl(repl_path, ("--workspace", work) if sandbox else ())
        try:
            opened = {"id": 1, "op": "open", "type": "shell", "name": "main", "shell": shell, "cwd": work}
            if sandbox:
                opened.update({"sandbox": "workspace-write", "network": "on"})
            first = repl.call(opened)
            if not first["ok"]:
                check(sandbox is not None, first)
                print(f"skipped: a confined session cannot start here: {first['error']['message']}")
                return []
            sid = first["result"]["sessionId"]
            second = repl.ok({"id": 2, "op": "open", "type": "shell", "name": "other"})["sessionId"]
            repl.pids += [first["result"]["pid"]]
            amps = [server_job(repl, sid, shell, 1, second, confined=bool(sandbox))]
            if not sandbox:
                stop_typed_ahead(repl, sid, work, shell)
                stop_typed_ahead_started(repl, sid, work, shell)
                amps.append(stop_ended(repl, sid, shell, amps[0]))
                stop_own_line(repl, sid, work, shell, amps[0])
                stop_own_amp_at_once(repl, sid, shell)
            if shell == "bash" and not sandbox:
                until_runs_on(repl, sid)
                exits_first(repl, sid)
                condition_timeout(repl, sid)
                two_readers(repl, sid)
                after_close(repl)
                stop_at_once(repl, sid)
                amps.append(server_job(repl, sid, shell, 2))
            repl.request({"id": "bye", "op": "shutdown"})
            check(repl.wait_exit() == 0, "shutdown")
            wait_gone(amps, "the earlier background jobs after close")
            wait_gone(repl.pids, "after shutdown")
        finally:
            repl.close()
    print(f"ok: background jobs on {shell}{' (confined, network on)' if sandbox else ''}")


def main():
    repl_path = sys.argv[1]
    which = sys.argv[2] if len(sys.argv) > 2 else "bash"
    if shutil.which("curl") is None:
        print("skipped: curl is missing")
        return
    if which == "confined":
        run(repl_path, "bash", sandbox=True)
    elif shutil.which(which) is None:
        print(f"skipped: {which} is missing")
    else:
        run(repl_path, which)
        if which == "bash":
            consuming_reader(repl_path)


if __name__ == "__main__":
    main()
