"""What each client package costs per call beside a hand-written dshpty-repl --json client:
the same sequential round trips (mcp_per_call.py's method), each face on its own repl and one
shell session. Two figures per face: a send of `true` (the whole path: the shell runs it and
its prompt comes back) and a session list (the client's own cost: encode, match the answer,
decode; no shell involved). Faces: raw JSON Lines (a minimal buffered client), the Python
client's Service and AsyncService (from clients/python/src), and the TypeScript client's
DshptyService (compiled with tsc from the build tree's toolchain into a temporary directory;
skipped with the reason when node or the toolchain is missing). Prints one line per figure
(median and mean microseconds per round trip), then each client's median overhead over raw.

    client_per_call.py PATH/TO/dshpty-repl CLIENTS_DIR TOOLCHAIN_DIR [ROUNDS]
"""

import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcp_per_call import per_call  # noqa: E402  (the timing loop)


class RawFace:
    """The least a client can do: write a line, read lines until ours. Buffered, unlike
    mcp_per_call.py's face (which reads its unbuffered pipe a byte at a time), so the
    difference to the clients is theirs, not a slow baseline's."""

    def __init__(self, repl):
        self.proc = subprocess.Popen([repl, "--json"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.next_id = 0

    def call(self, op, **fields):
        self.next_id += 1
        self.proc.stdin.write((json.dumps({"id": self.next_id, "op": op, **fields}) + "\n").encode())
        self.proc.stdin.flush()
        while True:
            message = json.loads(self.proc.stdout.readline())
            if message.get("id") == self.next_id:
                if not message.get("ok"):
                    raise SystemExit(f"failed: {message}")
                return message["result"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def report(name, what, rounds, median, mean, figures):
    figures[(name, what)] = median
    print(f"{name:28} {what:12} {rounds} round trips: median {median:8.1f} us, mean {mean:8.1f} us", flush=True)


def raw_face(repl, rounds, figures):
    face = RawFace(repl)
    try:
        sid = face.call("open", type="shell")["sessionId"]
        for what, fn in [("send `true`", lambda: face.call("send", sessionId=sid, text="true")),
                         ("list", lambda: face.call("list"))]:
            report("raw JSON Lines", what, rounds, *per_call(fn, rounds), figures)
    finally:
        face.close()


def python_service(repl, rounds, figures):
    import dshpty
    with dshpty.Service(repl=repl) as service:
        sid = service.spawn(type="shell").session_id
        for what, fn in [("send `true`", lambda: service.start_send(sid, text="true").result()),
                         ("list", service.list)]:
            report("python Service", what, rounds, *per_call(fn, rounds), figures)


async def python_async_rounds(repl, rounds):
    import dshpty
    out = []
    async with dshpty.AsyncService(repl=repl) as service:
        sid = (await service.spawn(type="shell")).session_id

        async def send():
            await (await service.start_send(sid, text="true"))

        for what, fn in [("send `true`", send), ("list", service.list)]:
            for _ in range(min(10, rounds)):
                await fn()
            samples = []
            for _ in range(rounds):
                start = time.perf_counter()
                await fn()
                samples.append((time.perf_counter() - start) * 1e6)
            out.append((what, statistics.median(samples), statistics.fmean(samples)))
    return out


def python_async(repl, rounds, figures):
    for what, median, mean in asyncio.run(python_async_rounds(repl, rounds)):
        report("python AsyncService", what, rounds, median, mean, figures)


TS_BENCH = r"""
import { DshptyService } from './dist/esm/index.js';
const rounds = Number(process.argv[2]);
const service = await DshptyService.start({ repl: process.argv[3] });
const owner = service.mintOwner('bench');
const { sessionId } = await service.spawn(owner, { type: 'shell' });
const faces = [['send `true`', () => service.startSend(owner, sessionId, { text: 'true' }).done],
               ['list', () => service.list(owner)]];
for (const [what, fn] of faces) {
  for (let i = 0; i < Math.min(10, rounds); i++) await fn();
  const samples = [];
  for (let i = 0; i < rounds; i++) {
    const start = process.hrtime.bigint();
    await fn();
    samples.push(Number(process.hrtime.bigint() - start) / 1000);
  }
  samples.sort((a, b) => a - b);
  const mid = samples.length >> 1;
  const median = samples.length % 2 ? samples[mid] : (samples[mid - 1] + samples[mid]) / 2;
  const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
  console.log(JSON.stringify({ what, median, mean }));
}
await service.dispose();
"""


def typescript(repl, clients, toolchain, rounds, figures):
    tsc = os.path.join(toolchain, "node_modules", "typescript", "bin", "tsc")
    if not shutil.which("node") or not os.path.exists(tsc):
        print(f"typescript DshptyService: skipped (node or {tsc} missing; tools/dev bench installs them)")
        return
    with tempfile.TemporaryDirectory(prefix="dshpty-client-bench-") as tmp:
        package = os.path.join(tmp, "package")
        shutil.copytree(os.path.join(clients, "typescript"), package,
                        ignore=shutil.ignore_patterns("node_modules", "dist", "test"))
        os.symlink(os.path.join(toolchain, "node_modules"), os.path.join(package, "node_modules"))
        subprocess.run(["node", tsc, "-p", package], check=True)
        with open(os.path.join(package, "bench.mjs"), "w") as f:
            f.write(TS_BENCH)
        done = subprocess.run(["node", "bench.mjs", str(rounds), repl], cwd=package, check=True,
                              stdout=subprocess.PIPE, text=True)
        for line in done.stdout.splitlines():
            figure = json.loads(line)
            report("typescript DshptyService", figure["what"], rounds, figure["median"], figure["mean"], figures)


def main():
    repl, clients, toolchain = (os.path.abspath(arg) for arg in sys.argv[1:4])
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 200
    sys.path.insert(0, os.path.join(clients, "python", "src"))
    figures = {}
    raw_face(repl, rounds, figures)
    python_service(repl, rounds, figures)
    python_async(repl, rounds, figures)
    typescript(repl, clients, toolchain, rounds, figures)
    for name in ("python Service", "python AsyncService", "typescript DshptyService"):
        for what in ("send `true`", "list"):
            if (name, what) in figures:
                extra = figures[(name, what)] - figures[("raw JSON Lines", what)]
                print(f"overhead of {name:24} over raw JSON Lines, {what:12}: median {extra:+8.1f} us", flush=True)


if __name__ == "__main__":
    main()
