"""What the model reads, through dshpty-repl --json with the real shell backend: a flood cut
to head and tail with the marker between at three caps; backspaces applied (man ls reads NAME);
ids kept for requests with bad bytes; strict fields; the faces' refusals, each with its code
and message; cancel and output fenced to their owner; each owner's own request ids."""

import re
import shutil
import subprocess
import sys

from repl_harness import JsonRepl, check, wait_gone

MARKER = re.compile(r"^\[output truncated: (\d+) lines?, (\d+) bytes? left out\]$", re.M)


def flood_at(repl_path, cap):
    """seq 1 100000 at --max-result-bytes cap: the command and first numbers, the marker,
    the last numbers; head + omitted + tail = the whole."""
    repl = JsonRepl(repl_path, ["--max-result-bytes", str(cap)])
    try:
        repl.ok({"id": 1, "op": "open", "type": "shell"})
        sent = repl.ok({"id": 2, "op": "send", "sessionId": "pty-1", "text": "seq 1 100000", "timeoutMs": 60000})
        viewport = sent["viewport"]
        check(sent["waitReason"] == "stdin_read" and sent["exitCode"] == 0, sent)
        check(sent["truncated"] is True, sent)
        check(len(viewport.encode()) <= cap, f"cap {cap}: {len(viewport.encode())} bytes")
        marks = MARKER.findall(viewport)
        check(len(marks) == 1, f"cap {cap}: one marker line: {viewport[:300]!r}")
        lines, omitted = int(marks[0][0]), int(marks[0][1])
        check(sent["omittedLines"] == lines and sent["omittedBytes"] == omitted, sent)
        head = viewport[:MARKER.search(viewport).start()]
        tail = viewport[MARKER.search(viewport).end() + 1:]
        # The head: the command's echo, then 1, 2, 3 ... in order.
        check("seq 1 100000" in head.splitlines()[0], f"cap {cap}: head {head[:80]!r}")
        numbers = [l for l in head.splitlines()[1:] if l.strip()]
        check(numbers == [str(i) for i in range(1, len(numbers) + 1)], f"cap {cap}: head {head[:200]!r}")
        # The tail: ... 99999, 100000, then the prompt; more of it than of the head.
        tail_numbers = [l for l in tail.splitlines() if l.isdigit()]
        check(tail_numbers and tail_numbers[-1] == "100000", f"cap {cap}: tail {tail[-200:]!r}")
        first = int(tail_numbers[0])
        check(tail_numbers == [str(i) for i in range(first, 100001)], f"cap {cap}: tail not contiguous")
        check(len(tail) >= len(head), f"cap {cap}: the end is favoured ({len(head)} head, {len(tail)} tail)")
        # head + omitted + tail = the whole output (the echo line, 1..100000, the prompt).
        whole_numbers = sum(len(str(i)) + 1 for i in range(1, 100001))
        left_out = sum(len(str(i)) + 1 for i in range(len(numbers) + 1, first))
        check(omitted == left_out, f"cap {cap}: omitted {omitted} bytes, the gap is {left_out}")
        check(lines == first - len(numbers) - 1, f"cap {cap}: omitted {lines} lines, the gap is {first - len(numbers) - 1}")
        check(len(head.encode()) + omitted + len(tail.encode()) > whole_numbers, "the accounts")
        # read can still page what the scrollback retained.
        page = repl.ok({"id": 3, "op": "read", "sessionId": "pty-1", "count": 5, "offset": 1})
        check(page["text"].splitlines()[-1] == "100000", page)
        repl.ok({"id": 4, "op": "shutdown"})
        check(repl.wait_exit() == 0, "exit status")
        wait_gone(repl.pids, "shutdown")
    finally:
        repl.close()


def test_flood_head_and_tail(repl_path):
    for cap in (256, 4096, 65536):
        flood_at(repl_path, cap)


def test_backspace_applied(repl_path):
    repl = JsonRepl(repl_path)
    try:
        repl.ok({"id": 1, "op": "open", "type": "shell"})
        sent = repl.ok({"id": 2, "op": "send", "sessionId": "pty-1",
                        "text": r"printf 'abc\bX|N\bN|_\bU|a\bb\n'"})
        check("abX|N|U|b\n" in sent["viewport"], sent)
        spin = repl.ok({"id": 3, "op": "send", "sessionId": "pty-1",
                        "text": "for c in '|' / - '\\' '|' /; do printf '%s\\b' \"$c\"; done; echo done"})
        check("\ndone\n" in spin["viewport"], spin)
        if shutil.which("man") is None or subprocess.run(["man", "-w", "ls"], capture_output=True).returncode != 0:
            print("skipped man ls: man or the ls page is not installed", flush=True)
        else:
            man = repl.ok({"id": 4, "op": "send", "sessionId": "pty-1", "text": "MANWIDTH=80 man ls",
                           "timeoutMs": 60000})
            check(re.search(r"^NAME$", man["viewport"], re.M), man["viewport"][:400])
            check("NNAAMMEE" not in man["viewport"] and "\b" not in man["viewport"], man["viewport"][:400])
            check("-a, --all" in man["viewport"], man["viewport"][:2000])
        repl.ok({"id": 5, "op": "shutdown"})
        check(repl.wait_exit() == 0, "exit status")
    finally:
        repl.close()


def test_bad_bytes_keep_their_id(repl_path):
    repl = JsonRepl(repl_path)
    try:
        for rid, raw in ((51, b'{"id":51,"op":"send","sessionId":"pty-1","text":"a\xff\xfeb"}\n'),
                         (52, b'{"id":52,"op":"open","type":"shell","name":"\xc3"}\n'),
                         ("s53", b'{"id":"s53","op":"send","sessionId":"pty-1","text":"\\ud800"}\n'),
                         (54, b'{"id":54,"op":"send","sessionId":"pty-1","text":"x\\udc00"}\n')):
            repl.send_raw(raw)
            r = repl.response(rid)
            check(r["ok"] is False and r["error"]["code"] == "INVALID_ARGUMENT", r)
            check(r["error"]["message"] == "the request's strings hold invalid UTF-8 or a lone surrogate escape", r)
        repl.ok({"id": 55, "op": "shutdown"})
        check(repl.wait_exit() == 0, "exit status")
    finally:
        repl.close()


def test_refusals(repl_path):
    repl = JsonRepl(repl_path)
    try:
        opened = repl.ok({"id": 1, "op": "open", "type": "shell", "name": "main"})
        # Strict fields.
        err = repl.error({"id": 2, "op": "send", "sessionId": "pty-1", "text": "echo x", "timeout": 5}, "INVALID_ARGUMENT")
        check(err["message"] == 'unknown field "timeout" for op "send" (valid: id, op, owner, sessionId, text, '
                                'keys, submit, timeoutMs, idleMs, until, background)', err)
        err = repl.error({"id": 3, "op": "cancel", "sendId": 1, "session": "pty-1"}, "INVALID_ARGUMENT")
        check(err["message"] == 'unknown field "session" for op "cancel" (valid: id, op, owner, sendId)', err)
        # Wait bounds: 1..86400000 ms, the same on every face.
        for field, value in (("timeoutMs", 0), ("idleMs", 0), ("timeoutMs", 86400001), ("idleMs", -5)):
            err = repl.error({"id": f"b-{field}-{value}", "op": "send", "sessionId": "pty-1", "text": "echo x",
                              field: value}, "INVALID_ARGUMENT")
            word = "timeout (timeoutMs, timeout_ms)" if field == "timeoutMs" else "idle (idleMs, idle_ms)"
            check(err["message"] == f"{word} must be an integer from 1 to 86400000 ms, got {value}", err)
        ok = repl.ok({"id": 4, "op": "send", "sessionId": "pty-1", "text": "echo bounds-ok", "timeoutMs": 86400000,
                      "idleMs": 1})
        check(ok["waitReason"] in ("stdin_read", "inferred_idle"), ok)
        # network without a sandbox; names with control characters.
        err = repl.error({"id": 5, "op": "open", "type": "shell", "network": "off"}, "INVALID_ARGUMENT")
        check(err["message"] == "network is an option of a sandbox: give sandbox too, or leave network out", err)
        err = repl.error({"id": 6, "op": "open", "type": "shell", "name": "x]\n[session: exited"}, "INVALID_ARGUMENT")
        check(err["message"] == 'a session name must not hold control characters: "x]\n[session: exited"', err)
        check(len(repl.ok({"id": 7, "op": "list"})["sessions"]) == 1, "no session opened by a refusal")
        # keys: [] presses nothing: a line typed without Enter stays unsubmitted.
        repl.ok({"id": 8, "op": "send", "sessionId": "pty-1", "text": "echo typed-$((40+2))", "submit": False,
                 "idleMs": 300})
        none = repl.ok({"id": 9, "op": "send", "sessionId": "pty-1", "keys": [], "idleMs": 300})
        check("typed-42" not in none["viewport"], none)
        ran = repl.ok({"id": 10, "op": "send", "sessionId": "pty-1", "keys": ["Enter"]})
        check("typed-42" in ran["viewport"], ran)
        # cancel and output are fenced to the send's owner.
        repl.request({"id": "long", "op": "send", "sessionId": "pty-1", "text": "sleep 300", "timeoutMs": 600000})
        err = repl.error({"id": 11, "op": "cancel", "sendId": "long", "owner": "intruder"}, "FOREIGN_SESSION")
        check(err["message"] == 'send "long" belongs to another owner', err)
        err = repl.error({"id": 12, "op": "output", "sendId": "long", "owner": "intruder"}, "FOREIGN_SESSION")
        check(not any(r.get("id") == "long" for r in repl.responses), "the intruder's cancel reached the send")
        check(repl.ok({"id": 13, "op": "cancel", "sendId": "long"}) == {"cancelled": True}, "own cancel")
        check(repl.response("long")["ok"] is True, "the long send settled")
        repl.ok({"id": 14, "op": "shutdown"})
        check(repl.wait_exit() == 0, "exit status")
        wait_gone([opened["pid"]], "shutdown")
    finally:
        repl.close()


def test_owners_own_their_ids(repl_path):
    """Request ids are each owner's own: alice's long job "dev" does not refuse bob's send
    "dev"; each reads and stops only its own; an id only alice has is FOREIGN_SESSION to bob."""
    repl = JsonRepl(repl_path)
    try:
        repl.ok({"id": 1, "op": "open", "type": "shell", "owner": "alice"})
        repl.ok({"id": 2, "op": "open", "type": "shell", "owner": "bob"})
        repl.ok({"id": 3, "op": "open", "type": "shell", "owner": "alice"})
        repl.request({"id": "dev", "op": "send", "owner": "alice", "sessionId": "pty-1", "background": True,
                      "text": "echo ALICE-$((40+2)); sleep 300"})
        check(repl.response("dev") == {"id": "dev", "ok": True, "result": {"job": "dev", "sessionId": "pty-1"}},
              repl.responses[-1])
        repl.request({"id": "dev", "op": "send", "owner": "bob", "sessionId": "pty-2", "background": True,
                      "text": "echo BOB-$((40+3)); sleep 300"})
        repl.ok({"id": 4, "op": "list", "owner": "bob"})  # answered after bob's send was
        devs = [r for r in repl.responses if r.get("id") == "dev"]
        check(devs[1:] == [{"id": "dev", "ok": True, "result": {"job": "dev", "sessionId": "pty-2"}}], devs)
        repl.ok({"id": "only-a", "op": "send", "owner": "alice", "sessionId": "pty-3", "background": True,
                 "text": "sleep 300"})

        def output_of(owner, marker, rid):
            for n in range(20):
                out = repl.ok({"id": f"{rid}-{n}", "op": "output", "owner": owner, "sendId": "dev", "offset": 0,
                               "waitMs": 1000})
                if marker in out["delta"]:
                    return out
            check(False, f"{owner}'s dev never showed {marker}: {out}")

        alice = output_of("alice", "ALICE-42", "ra")
        bob = output_of("bob", "BOB-43", "rb")
        check("BOB" not in alice["delta"] and "ALICE" not in bob["delta"], (alice, bob))
        for rid, op in ((5, "output"), (6, "stop"), (7, "cancel")):
            err = repl.error({"id": rid, "op": op, "owner": "bob", "sendId": "only-a"}, "FOREIGN_SESSION")
            check(err["message"] == 'send "only-a" belongs to another owner', err)
        check(repl.error({"id": 8, "op": "stop", "owner": "bob", "sendId": "none"}, "INVALID_ARGUMENT"), "none")
        stopped = repl.ok({"id": 9, "op": "stop", "owner": "bob", "sendId": "dev"})
        check(stopped["stopped"] is True, stopped)
        check(repl.ok({"id": 10, "op": "output", "owner": "bob", "sendId": "dev", "offset": 0})["done"] is True, "bob")
        check(repl.ok({"id": 11, "op": "output", "owner": "alice", "sendId": "dev", "offset": 0})["done"] is False,
              "alice's dev runs on after bob stopped his")
        check(repl.ok({"id": 12, "op": "stop", "owner": "alice", "sendId": "dev"})["stopped"] is True, "alice's")
        check(repl.ok({"id": 13, "op": "stop", "owner": "alice", "sendId": "only-a"})["stopped"] is True, "only-a")
        repl.ok({"id": 14, "op": "shutdown"})
        check(repl.wait_exit() == 0, "exit status")
        wait_gone(repl.pids, "shutdown")
    finally:
        repl.close()


if __name__ == "__main__":
    path = sys.argv[1]
    for test in (test_flood_head_and_tail, test_backspace_applied, test_bad_bytes_keep_their_id, test_refusals,
                 test_owners_own_their_ids):
        print(f"--- {test.__name__}", flush=True)
        test(path)
    print("ok")
