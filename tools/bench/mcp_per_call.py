"""What dshpty-mcp costs per call beside a dshpty-repl --json request: the same sequential
round trips through each face of the one engine, on one shell session each. Two figures per
face: a send of `true` (the whole path: the shell runs it and its prompt comes back) and a
session list (the face's own cost: parse, engine, render, write; no shell involved).
Prints one line per figure: median and mean microseconds per round trip.

    mcp_per_call.py PATH/TO/dshpty-mcp PATH/TO/dshpty-repl [ROUNDS]
"""

import json
import statistics
import subprocess
import sys
import time


class Face:
    def __init__(self, argv, request, ok):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.request, self.ok = request, ok
        self.next_id = 0

    def call(self, *args):
        self.next_id += 1
        line = json.dumps(self.request(self.next_id, *args)) + "\n"
        self.proc.stdin.write(line.encode())
        while True:  # sequential: the next line with our id is the answer (no notifications asked)
            reply = self.proc.stdout.readline()
            if not reply:
                raise SystemExit(f"{self.proc.args[0]} ended")
            message = json.loads(reply)
            if message.get("id") == self.next_id:
                if not self.ok(message):
                    raise SystemExit(f"failed: {message}")
                return message

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def mcp_face(path):
    def request(rid, op, args):
        if op == "initialize":
            return {"jsonrpc": "2.0", "id": rid, "method": "initialize",
                    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                               "clientInfo": {"name": "bench", "version": "0"}}}
        return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": op, "arguments": args}}

    face = Face([path], request, lambda m: "result" in m and not m["result"].get("isError", False))
    face.call("initialize", None)
    face.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    face.call("terminal_open", {})
    return face, lambda: face.call("terminal_send", {"session": "pty-1", "text": "true"}), \
        lambda: face.call("terminal_list", {})


def json_face(path):
    def request(rid, op, fields):
        return {"id": rid, "op": op, **fields}

    face = Face([path, "--json"], request, lambda m: m.get("ok") is True)
    face.call("open", {"type": "shell"})
    return face, lambda: face.call("send", {"sessionId": "pty-1", "text": "true"}), lambda: face.call("list", {})


def per_call(fn, rounds):
    for _ in range(min(10, rounds)):  # warm-up
        fn()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e6)
    return statistics.median(samples), statistics.fmean(samples)


def main():
    mcp_path, repl_path = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    for name, make in [("dshpty-repl --json", lambda: json_face(repl_path)), ("dshpty-mcp", lambda: mcp_face(mcp_path))]:
        face, send, listing = make()
        try:
            for what, fn in [("send `true`", send), ("list", listing)]:
                median, mean = per_call(fn, rounds)
                print(f"{name:20} {what:12} {rounds} round trips: median {median:8.1f} us, mean {mean:8.1f} us",
                      flush=True)
        finally:
            face.close()


if __name__ == "__main__":
    main()
