"""A hand-written MCP client for dshpty-mcp's end-to-end tests and its bench: the server on
pipes, JSON-RPC messages with bounded waits (a broken server fails a test instead of hanging
it), every line checked to be strict UTF-8 JSON. Nothing here sleeps to paper over a race."""

import json
import os
import select
import subprocess
import sys
import time

DEADLINE_S = 60.0


def fail(message):
    print("FAIL: " + message, file=sys.stderr, flush=True)
    raise SystemExit(1)


def check(condition, message):
    if not condition:
        fail(message)


def pid_alive(pid):
    """True while a process with this pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def session_members(sid):
    """Live processes whose session id is `sid` (the server runs in a session of its own)."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if fields[0] != "Z" and int(fields[3]) == sid:
            members.append(int(entry))
    return members


def descendants(pid):
    """The live processes below `pid` (the sessions run in sessions of their own)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def wait_foreground(server_pid, argv0):
    """Waits (bounded) until a process `argv0` below the server holds its terminal: output
    before a job shows the shell got that far, not that the job runs, and a SIGINT that lands
    while bash is still starting the job (before its exec) is taken by bash's handlers and
    lost (docs/mcp.md, "Cancellation and progress")."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        for pid in descendants(server_pid):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    name = f.read().split(b"\0")[0]
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if name == argv0.encode() and int(fields[2]) == int(fields[5]):  # pgrp == tpgid
                return pid
        time.sleep(0.005)  # polling a condition with a deadline, not waiting out a race
    fail(f"{argv0} never held the terminal")


class McpServer:
    """dshpty-mcp on pipes, in a session of its own (so no process of its can hide)."""

    def __init__(self, binary, extra_args=()):
        self.proc = subprocess.Popen(
            [binary, *extra_args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sys.stderr,
            start_new_session=True)
        self.buffer = b""
        self.messages = []  # everything received, in order (batch answers in self.batches)
        self.batches = []  # the arrays that answered batches (protocol 2025-03-26)
        self.raw_lines = []  # every line as it came, for byte-exact checks
        self.next_id = 1000

    def send_raw(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, obj):
        self.send_raw((json.dumps(obj) + "\n").encode())

    def _read_some(self, deadline):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            fail(f"nothing before the deadline; last messages: {self.messages[-5:]}")
        ready, _, _ = select.select([self.proc.stdout], [], [], remaining)
        if not ready:
            return True
        chunk = os.read(self.proc.stdout.fileno(), 65536)
        if not chunk:
            return False
        self.buffer += chunk
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            try:
                text = line.decode("utf-8")  # strict: the stream must stay valid UTF-8
            except UnicodeDecodeError as e:
                fail(f"a line that is not UTF-8 ({e}): {line[:200]!r}")
            self.raw_lines.append(line)
            message = json.loads(text)
            if isinstance(message, list):
                check(message and all(m.get("jsonrpc") == "2.0" for m in message), f"a batch answer: {message}")
                self.batches.append(message)
                continue
            check(message.get("jsonrpc") == "2.0", f"not JSON-RPC 2.0: {message}")
            self.messages.append(message)
        return True

    def wait_for(self, predicate, what):
        """The first message (received so far or later) that `predicate` accepts."""
        deadline = time.monotonic() + DEADLINE_S
        seen = 0
        while True:
            for message in self.messages[seen:]:
                if predicate(message):
                    return message
            seen = len(self.messages)
            if not self._read_some(deadline):
                fail(f"EOF while waiting for {what}")

    def next_line(self, data):
        """Sends one raw line and returns the next line that arrives, as bytes (only with
        nothing else in flight)."""
        seen = len(self.raw_lines)
        self.send_raw(data)
        deadline = time.monotonic() + DEADLINE_S
        while len(self.raw_lines) == seen:
            if not self._read_some(deadline):
                fail(f"EOF before an answer to {data[:80]!r}")
        return self.raw_lines[seen]

    def response(self, rid):
        return self.wait_for(lambda m: m.get("id") == rid and ("result" in m or "error" in m),
                             f"the response to {rid!r}")

    def request(self, method, params=None, rid=None):
        if rid is None:
            self.next_id += 1
            rid = self.next_id
        message = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return rid

    def call(self, method, params=None):
        response = self.response(self.request(method, params))
        check("result" in response, f"{method} failed: {response}")
        return response["result"]

    def notify(self, method, params=None):
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def initialize(self, version="2025-11-25"):
        result = self.call("initialize", {"protocolVersion": version, "capabilities": {},
                                          "clientInfo": {"name": "mcp-e2e", "version": "0"}})
        self.notify("notifications/initialized")
        return result

    def start_tool(self, name, arguments=None, progress_token=None, rid=None):
        params = {"name": name, "arguments": arguments or {}}
        if progress_token is not None:
            params["_meta"] = {"progressToken": progress_token}
        return self.request("tools/call", params, rid)

    def tool_result(self, rid):
        """(text, isError) of a tools/call's result: its text items joined (a send's result is
        two, the output's and the status lines')."""
        items, is_error = self.tool_items(rid)
        return "".join(items), is_error

    def tool_items(self, rid):
        """([text of each content item], isError) of a tools/call's result."""
        response = self.response(rid)
        check("result" in response, f"tools/call {rid!r} got a protocol error: {response}")
        result = response["result"]
        content = result.get("content")
        check(isinstance(content, list) and len(content) in (1, 2) and
              all(item.get("type") == "text" for item in content), f"content: {result}")
        return [item["text"] for item in content], result.get("isError")

    def tool_with_progress(self, name, arguments, token):
        """Calls a tool with a progress token; its result text and error flag, and the
        progress messages that came before the result (those after it, a failure)."""
        rid = self.start_tool(name, arguments, progress_token=token)
        text, is_error = self.tool_result(rid)
        index = next(i for i, m in enumerate(self.messages) if m.get("id") == rid)

        def ours(m):
            return m.get("method") == "notifications/progress" and m["params"]["progressToken"] == token
        check(not any(ours(m) for m in self.messages[index:]), "progress after the result")
        return text, is_error, [m["params"]["message"] for m in self.messages[:index] if ours(m)]

    def tool(self, name, arguments=None):
        """The text of a successful call."""
        text, is_error = self.tool_result(self.start_tool(name, arguments))
        check(is_error is False, f"{name} {arguments}: {text}")
        return text

    def tool_error(self, name, arguments, code):
        text, is_error = self.tool_result(self.start_tool(name, arguments))
        check(is_error is True and text.startswith(f"error: {code}"), f"{name} {arguments}: expected {code}: {text}")
        return text

    def close_stdin_and_wait(self):
        self.proc.stdin.close()
        while self._read_some(time.monotonic() + DEADLINE_S):
            pass
        try:
            return self.proc.wait(timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            fail("the server did not exit after EOF")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for pid in session_members(self.proc.pid):
            try:
                os.kill(pid, 9)
            except (ProcessLookupError, PermissionError):
                pass
