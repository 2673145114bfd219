"""One dshpty-repl --json child and the JSON Lines between us, for the blocking client: a
reader thread matches each answer to its request by id (answers come out of order: a send
stays open while other requests are answered), and the child's end fails whatever still
waits."""

import json
import subprocess
import threading
from concurrent import futures
from concurrent.futures import Future
from typing import IO, Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ._errors import DshptyError

STDERR_TAIL_BYTES = 4096


def describe_end(returncode: int, stderr_tail: bytes) -> DshptyError:
    if returncode < 0:
        import signal
        try:
            how = f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            how = f"was killed by signal {-returncode}"
    else:
        how = f"exited with status {returncode}"
    stderr = stderr_tail.decode("utf-8", "replace").strip()
    return DshptyError("REPL_EXITED", f"dshpty-repl {how}" + (f": {stderr}" if stderr else ""))


def encode(request_id: int, op: str, fields: Mapping[str, Any]) -> bytes:
    return (json.dumps({"id": request_id, "op": op, **fields}, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass")


def timed_out(pid: int, op: str, seconds: float) -> DshptyError:
    return DshptyError("REPL_TIMEOUT", f'dshpty-repl {pid} did not answer "{op}" within {seconds:g} s '
                                       "(stopped or wedged?); close(force=True) ends it")


def settle(future: "Future[Any]", answer: Mapping[str, Any]) -> None:
    if answer.get("ok"):
        future.set_result(answer.get("result") or {})
    else:
        future.set_exception(DshptyError.from_wire(answer.get("error") or {"code": "BACKEND_FAILED", "message": "malformed answer"}))


def _pipe(stream: Optional[IO[bytes]]) -> IO[bytes]:
    assert stream is not None  # every stdio stream is a pipe (Popen below)
    return stream


class Connection:
    def __init__(self, path: str, args: Sequence[str], env: Optional[Mapping[str, str]], request_timeout: float):
        try:
            # A session of its own: a Ctrl-C at the host's terminal signals the host's process
            # group, and the repl takes SIGINT as a shutdown of every session. The host's end
            # still ends it (EOF on its stdin is a shutdown).
            self._proc = subprocess.Popen([path, "--json", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, env=env, close_fds=True, start_new_session=True)
        except OSError as error:
            raise DshptyError("REPL_NOT_FOUND", f"cannot run {path}: {error}") from None
        self._stdin, self._stdout, self._stderr = _pipe(self._proc.stdin), _pipe(self._proc.stdout), _pipe(self._proc.stderr)
        self.request_timeout = request_timeout
        self._lock = threading.Lock()  # the table of requests awaiting answers
        self._write_lock = threading.Lock()  # whole lines to the child's stdin
        self._pending: Dict[int, "Future[Any]"] = {}
        self._next_id = 1
        self._ended: Optional[DshptyError] = None
        self._stderr_tail = b""
        self._exited = threading.Event()
        self._stderr_reader = threading.Thread(target=self._read_stderr, name="dshpty-stderr", daemon=True)
        self._stdout_reader = threading.Thread(target=self._read_stdout, name="dshpty-stdout", daemon=True)
        self._stderr_reader.start()
        self._stdout_reader.start()

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def pending_count(self) -> int:
        with self._lock:
            return len(self._pending)

    @property
    def ended(self) -> Optional[DshptyError]:
        return self._ended

    @property
    def returncode(self) -> Optional[int]:
        return self._proc.returncode if self._exited.is_set() else None

    def request(self, op: str, fields: Mapping[str, Any]) -> Tuple[int, "Future[Any]"]:
        """Writes one request; its future settles exactly once (the child's end fails it)."""
        future: "Future[Any]" = Future()
        with self._lock:
            request_id = self._next_id
            self._next_id += 1
            if self._ended is not None:
                future.set_exception(self._ended)
                return request_id, future
            self._pending[request_id] = future
        # Not under the table's lock: a repl whose stdout is full stops reading requests
        # until the reader thread, which needs that lock, drains it.
        with self._write_lock:
            try:
                self._stdin.write(encode(request_id, op, fields))
                self._stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass  # the child is ending: the reader fails this request when it has
        return request_id, future

    def wait(self, request_id: int, future: "Future[Any]", op: str, seconds: Optional[float] = None) -> Any:
        """The answer, or REPL_TIMEOUT after `seconds` (default the request deadline); the
        request is then forgotten, so a late answer is dropped."""
        seconds = self.request_timeout if seconds is None else seconds
        try:
            return future.result(seconds)
        except futures.TimeoutError:
            with self._lock:
                self._pending.pop(request_id, None)
            if future.done():
                return future.result()
            raise timed_out(self.pid, op, seconds) from None

    def call(self, op: str, fields: Mapping[str, Any]) -> Any:
        request_id, future = self.request(op, fields)
        return self.wait(request_id, future, op)

    def kill(self) -> None:
        """SIGKILL to the child alone: its sessions' helpers end their trees once their host
        is gone (a stopped child cannot be asked)."""
        if not self._exited.is_set():
            try:
                self._proc.kill()
            except OSError:
                pass

    def end_input(self) -> None:
        with self._write_lock:
            try:
                self._stdin.close()
            except (BrokenPipeError, OSError):
                pass

    def wait_exit(self, timeout: Optional[float] = None) -> bool:
        """True once the child is gone and read to the end; False when `timeout` passed first."""
        if not self._exited.wait(timeout):
            return False
        self._stdout_reader.join()
        self._stderr_reader.join()
        return True

    def _read_stderr(self) -> None:
        while True:
            chunk = self._stderr.read1(4096)  # type: ignore[attr-defined]  # a BufferedReader
            if not chunk:
                break
            self._stderr_tail = (self._stderr_tail + chunk)[-STDERR_TAIL_BYTES:]
        self._stderr.close()

    def _read_stdout(self) -> None:
        for line in self._stdout:
            try:
                answer = json.loads(line)
            except ValueError:
                continue  # the repl writes only JSON lines; nothing to match this to
            request_id = answer.get("id") if isinstance(answer, dict) else None
            if not isinstance(request_id, int):
                continue
            with self._lock:
                future = self._pending.pop(request_id, None)
            if future is not None:
                settle(future, answer)
        self._stdout.close()
        self._proc.wait()
        self._stderr_reader.join()
        with self._lock:
            self._ended = describe_end(self._proc.returncode, self._stderr_tail)
            left: List["Future[Any]"] = list(self._pending.values())
            self._pending.clear()
        self.end_input()
        for future in left:
            future.set_exception(self._ended)
        self._exited.set()
