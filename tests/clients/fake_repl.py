#!/usr/bin/env python3
"""A stand-in for `dshpty-repl --json` that shows the clients' requests as sent: it answers
every request with the request itself (under "request"), as a repl that refuses unknown
fields would: an `open` field outside $FAKE_REPL_OPEN_FIELDS (comma-separated; default the
fields every repl knows) is INVALID_ARGUMENT naming it. `shutdown` and EOF end it. Lets the
clients' tests check that only the fields a caller gave are sent, and that a repl's refusal
of a field reaches the caller as a DshptyError."""

import json
import os
import sys

KNOWN = {"id", "op", "owner"}
OPEN_FIELDS = set((os.environ.get("FAKE_REPL_OPEN_FIELDS") or "type,name,cwd,terminal,sandbox,network").split(","))


def answer(request):
    if request.get("op") == "open":
        unknown = sorted(set(request) - KNOWN - OPEN_FIELDS)
        if unknown:
            return {"ok": False, "error": {"code": "INVALID_ARGUMENT",
                                           "message": f'unknown field "{unknown[0]}" for open'}}
        return {"ok": True, "result": {"sessionId": "pty-1", "type": request.get("type"),
                                       "status": {"kind": "running"}, "motd": "", "truncated": False,
                                       "request": request}}
    if request.get("op") in ("list", "attach"):
        session = {"sessionId": "pty-1", "type": "shell", "status": {"kind": "running"}, "request": request}
        return {"ok": True, "result": {"sessions": [session]}}
    shapes = {
        "send": {"viewport": "", "waitReason": "stdin_read", "sessionStatus": {"kind": "running"}, "truncated": False,
                 "exitCode": None, "cwd": None, "inputHidden": False},
        "output": {"delta": "", "truncated": False},
        "read": {"text": "", "totalLines": 0, "lineBegin": 0, "lineEnd": 0, "truncated": False},
        "hello": {"name": "dshpty-repl", "version": "fake", "protocol": 1},
    }
    return {"ok": True, "result": {**shapes.get(request.get("op"), {}), "request": request}}


for line in sys.stdin:
    request = json.loads(line)
    reply = {"id": request.get("id"), **answer(request)}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
    if request.get("op") == "shutdown":
        break
