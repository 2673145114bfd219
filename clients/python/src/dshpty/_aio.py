"""The asyncio client: AsyncService and AsyncOwner, the blocking client's methods as
coroutines over one dshpty-repl --json child read by a task on the running loop."""

import asyncio
import json
import os
from typing import Any, AsyncIterator, Dict, Generator, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union

from ._connection import STDERR_TAIL_BYTES, describe_end, encode, timed_out
from ._errors import DshptyError
from ._locate import locate_repl
from ._owners import OwnerRegistry, OwnerToken
from ._requests import (DEFAULT_REQUEST_TIMEOUT, check_hello, given, open_fields, read_fields, repl_send_timeout,
                        send_fields)
from ._service import FLOWING, QUIET_MAX
from ._types import (AbsolutePath, Limits, NetworkMode, OutputDelta, RcMode, ReadPage, SandboxMode, Screen, Session,
                     SendResult, ShellName, SignalName, SignalResult, SpawnResult, TerminalKind)

T = TypeVar("T")

# Answers are single lines; a capped viewport escaped as JSON stays far below this.
LINE_LIMIT = 64 * 1024 * 1024


class AsyncConnection:
    def __init__(self, proc: asyncio.subprocess.Process, request_timeout: float):
        self._proc = proc
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None  # all pipes
        self._stdin, self._stdout, self._stderr = proc.stdin, proc.stdout, proc.stderr
        self.request_timeout = request_timeout
        self._pending: Dict[int, "asyncio.Future[Any]"] = {}
        self._next_id = 1
        self.ended: Optional[DshptyError] = None
        self._stderr_tail = b""
        # Python before 3.10 refuses two tasks draining one StreamWriter at once.
        self._drain_lock = asyncio.Lock()
        self._stderr_task = asyncio.ensure_future(self._read_stderr())
        self._reader = asyncio.ensure_future(self._read_stdout())

    @classmethod
    async def start(cls, path: str, args: Sequence[str], env: Mapping[str, str],
                    request_timeout: float) -> "AsyncConnection":
        # A session of its own, as the blocking client's (_connection.py says why).
        try:
            proc = await asyncio.create_subprocess_exec(path, "--json", *args, stdin=asyncio.subprocess.PIPE,
                                                        stdout=asyncio.subprocess.PIPE,
                                                        stderr=asyncio.subprocess.PIPE, env=dict(env),
                                                        limit=LINE_LIMIT, start_new_session=True)
        except OSError as error:
            raise DshptyError("REPL_NOT_FOUND", f"cannot run {path}: {error}") from None
        return cls(proc, request_timeout)

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    @property
    def returncode(self) -> Optional[int]:
        return self._proc.returncode if self._reader.done() else None

    def request(self, op: str, fields: Mapping[str, Any]) -> Tuple[int, "asyncio.Future[Any]"]:
        """Writes one request; its future settles exactly once (the child's end fails it)."""
        future: "asyncio.Future[Any]" = asyncio.get_running_loop().create_future()
        # Every answer is handled here, so a request nobody awaits (a cancel sent on the way
        # out, a send left behind) never logs "exception was never retrieved"; a caller who
        # awaits it still gets its error.
        future.add_done_callback(_retrieved)
        request_id = self._next_id
        self._next_id += 1
        if self.ended is not None:
            future.set_exception(self.ended)
            return request_id, future
        self._pending[request_id] = future
        try:
            self._stdin.write(encode(request_id, op, fields))
        except (BrokenPipeError, ConnectionResetError, RuntimeError):
            pass  # the child is ending: the reader fails this request when it has
        return request_id, future

    async def call(self, op: str, fields: Mapping[str, Any]) -> Any:
        request_id, future = self.request(op, fields)
        return await self.wait(request_id, future, op, self.request_timeout, drain=True)

    async def wait(self, request_id: int, future: "asyncio.Future[T]", op: str, seconds: float,
                   drain: bool = False) -> T:
        """The answer, or REPL_TIMEOUT after `seconds` (the request is then forgotten)."""
        try:
            return await asyncio.wait_for(self._drained(future, drain), max(seconds, 0.0))
        except asyncio.TimeoutError:
            self._pending.pop(request_id, None)
            if future.done() and not future.cancelled():
                return future.result()
            raise timed_out(self.pid, op, seconds) from None

    async def _drained(self, future: "asyncio.Future[T]", drain: bool) -> T:
        if drain:
            try:
                async with self._drain_lock:
                    await self._stdin.drain()
            except (BrokenPipeError, ConnectionResetError):
                pass
        # Shielded: a deadline or a caller's cancel leaves the answer for whoever else waits.
        return await asyncio.shield(future)

    def kill(self) -> None:
        """SIGKILL to the child alone (its sessions' helpers end their trees once it is gone)."""
        if not self._reader.done():
            try:
                self._proc.kill()
            except ProcessLookupError:
                pass

    def end_input(self) -> None:
        if not self._stdin.is_closing():
            self._stdin.close()

    async def wait_exit(self, timeout: Optional[float] = None) -> bool:
        """True once the child is gone and read to the end; False when `timeout` passed first."""
        try:
            await asyncio.wait_for(asyncio.shield(self._reader), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    async def _read_stderr(self) -> None:
        while True:
            chunk = await self._stderr.read(4096)
            if not chunk:
                return
            self._stderr_tail = (self._stderr_tail + chunk)[-STDERR_TAIL_BYTES:]

    async def _read_stdout(self) -> None:
        while True:
            line = await self._stdout.readline()
            if not line:
                break
            try:
                answer = json.loads(line)
            except ValueError:
                continue
            request_id = answer.get("id") if isinstance(answer, dict) else None
            future = self._pending.pop(request_id, None) if isinstance(request_id, int) else None
            if future is None or future.done():
                continue
            if answer.get("ok"):
                future.set_result(answer.get("result") or {})
            else:
                future.set_exception(DshptyError.from_wire(answer.get("error") or {}))
        returncode = await self._proc.wait()
        await self._stderr_task
        self.ended = describe_end(returncode, self._stderr_tail)
        left = list(self._pending.values())
        self._pending.clear()
        self.end_input()
        for future in left:
            if not future.done():
                future.set_exception(self.ended)


class AsyncSend:
    """A live send: ``await send`` (or ``await send.result()``) for its result; ``async for
    chunk in send`` streams what it prints (new text as it comes; the loop ends with the
    last bytes, then raises the send's error if it failed); ``read_output()`` and
    ``cancel()`` as the blocking Send's. Cancelling the task that awaits it cancels the send
    too (a real SIGINT), once the repl has answered it; the task gets its CancelledError, and
    a later ``await send`` raises ``ABORTED`` carrying the send's result."""

    def __init__(self, calls: "_AsyncCalls", label: str, send_id: int, future: "asyncio.Future[Any]",
                 deadline: float):
        self._calls, self._label, self.send_id, self._future = calls, label, send_id, future
        self._answer_by = asyncio.get_running_loop().time() + deadline
        self._cancelled = False
        # The repl's answer to the first cancel (see Send).
        self._cancel_reply: "Optional[Tuple[int, asyncio.Future[Any]]]" = None

    def __await__(self) -> Generator[Any, None, SendResult]:
        return self.result().__await__()

    async def result(self) -> SendResult:
        connection = self._calls._connection
        left = self._answer_by - asyncio.get_running_loop().time()
        try:
            wire = await connection.wait(self.send_id, self._future, "send", left)
        except asyncio.CancelledError:
            # The caller gave up: interrupt the send, and let it answer (within the request
            # deadline) before unwinding so the session takes the next send.
            if not self._future.done():
                self._cancelled = True
                connection.request("cancel", {"owner": self._label, "sendId": self.send_id})
                try:
                    await connection.wait(self.send_id, self._future, "send", connection.request_timeout)
                except Exception:
                    pass
            raise
        except DshptyError as error:
            if self._cancelled and connection.ended is None and error.code != "REPL_TIMEOUT":
                raise DshptyError("ABORTED", "send cancelled") from error
            raise
        result = SendResult.from_wire(wire)
        if self._cancelled and await self._cancel_took():
            raise DshptyError("ABORTED", "send cancelled", result=result)
        return result

    async def _cancel_took(self) -> bool:
        if self._cancel_reply is None:
            return True
        connection = self._calls._connection
        try:
            return bool((await connection.wait(*self._cancel_reply, "cancel", connection.request_timeout))["cancelled"])
        except DshptyError:
            return True

    def done(self) -> bool:
        return self._future.done()

    async def read_output(self) -> OutputDelta:
        return OutputDelta.from_wire(await self._calls._request("output", {"owner": self._label, "sendId": self.send_id}))

    async def __aiter__(self) -> AsyncIterator[str]:
        quiet = FLOWING
        while True:
            last = self._future.done()
            try:
                delta = (await self.read_output()).delta
            except DshptyError:
                # A send the repl refused has no output to read: its own error says why.
                if self._future.done():
                    await self.result()
                raise
            if delta:
                yield delta
            if last:
                break
            quiet = FLOWING if delta else min(quiet * 2, QUIET_MAX)
            await asyncio.wait([self._future], timeout=quiet)
        await self.result()

    async def cancel(self) -> bool:
        if self._future.done():
            return False
        self._cancelled = True
        connection = self._calls._connection
        reply = connection.request("cancel", {"owner": self._label, "sendId": self.send_id})
        if self._cancel_reply is None:
            self._cancel_reply = reply
        return bool((await connection.wait(*reply, "cancel", connection.request_timeout, drain=True))["cancelled"])


class _AsyncCalls:
    _connection: AsyncConnection
    _owners: OwnerRegistry
    _token: OwnerToken
    _send_timeout: float  # the repl's default send deadline, seconds

    @property
    def owner_name(self) -> str:
        return self._token.name

    def _service_closing(self) -> bool:
        raise NotImplementedError

    def _label(self) -> str:
        if self._service_closing():
            raise DshptyError("SERVICE_DISPOSING", "the dshpty service is closed")
        return OwnerRegistry.label(self._token)

    async def _request(self, op: str, fields: Mapping[str, Any]) -> Any:
        if self._service_closing():
            raise DshptyError("SERVICE_DISPOSING", "the dshpty service is closed")
        return await self._connection.call(op, fields)

    async def _call(self, op: str, fields: Mapping[str, Any]) -> Any:
        return await self._request(op, {"owner": self._label(), **fields})

    async def spawn(self, type: str = "shell", name: Optional[str] = None, cwd: Optional[str] = None,
                    shell: Union[ShellName, AbsolutePath, None] = None, rc: Optional[RcMode] = None,
                    history: Optional[str] = None, terminal: Optional[TerminalKind] = None,
                    sandbox: Optional[SandboxMode] = None, network: Union[NetworkMode, bool, None] = None,
                    linger: Optional[int] = None, limits: Optional[Limits] = None,
                    record: Optional[bool] = None) -> SpawnResult:
        fields = open_fields(type, name, cwd, shell, rc, history, terminal, sandbox, network, linger, limits,
                             record)
        return SpawnResult.from_wire(await self._call("open", fields))

    async def start_send(self, session_id: str, text: Optional[str] = None, keys: Optional[Sequence[str]] = None,
                         submit: Optional[bool] = None, timeout_ms: Optional[int] = None,
                         idle_ms: Optional[int] = None,
                         until: Optional[Dict[str, Any]] = None) -> AsyncSend:
        label = self._label()
        send_id, future = self._connection.request(
            "send", {"owner": label, **send_fields(session_id, text, keys, submit, timeout_ms, idle_ms, until)})
        # The send answers by its own timeout; the request deadline starts after that.
        answer_by = (timeout_ms / 1000 if timeout_ms is not None else self._send_timeout) + self._connection.request_timeout
        return AsyncSend(self, label, send_id, future, answer_by)

    async def send(self, session_id: str, text: Optional[str] = None, keys: Optional[Sequence[str]] = None,
                   submit: Optional[bool] = None, timeout_ms: Optional[int] = None,
                   idle_ms: Optional[int] = None,
                   until: Optional[Dict[str, Any]] = None) -> SendResult:
        return await (await self.start_send(session_id, text, keys, submit, timeout_ms, idle_ms, until))

    async def read(self, session_id: str, offset: Optional[int] = None, count: Optional[int] = None) -> ReadPage:
        return ReadPage.from_wire(await self._call("read", read_fields(session_id, offset, count)))

    async def screen(self, session_id: str) -> Screen:
        return Screen.from_wire((await self._call("read", {"sessionId": session_id, "screen": True}))["screen"])

    async def signal(self, session_id: str, name: SignalName) -> SignalResult:
        return SignalResult.from_wire(await self._call("signal", {"sessionId": session_id, "signal": name}))

    async def resize(self, session_id: str, rows: int, cols: int) -> None:
        await self._call("resize", {"sessionId": session_id, "rows": rows, "cols": cols})

    async def kill(self, session_id: str) -> bool:
        return bool((await self._call("close", {"sessionId": session_id}))["outcome"] == "closed")

    async def list(self) -> List[Session]:
        return [Session.from_wire(s) for s in (await self._call("list", {}))["sessions"]]

    async def attach(self, name: Optional[str] = None) -> List[Session]:
        return [Session.from_wire(s) for s in (await self._call("attach", given(name=name)))["sessions"]]

    async def has_owner_activity(self) -> bool:
        return bool((await self._call("activity", {}))["active"])

    async def dispose_owner(self) -> None:
        if self._service_closing():
            raise DshptyError("SERVICE_DISPOSING", "the dshpty service is closed")
        label = self._owners.begin_dispose(self._token)
        try:
            await self._connection.call("disposeOwner", {"owner": label})
        finally:
            self._owners.release(self._token)


class AsyncOwner(_AsyncCalls):
    """Another owner on an AsyncService's child; made by ``AsyncService.owner(name)``."""

    def __init__(self, service: "AsyncService", token: OwnerToken):
        self._service = service
        self._connection = service._connection
        self._owners = service._owners
        self._token = token
        self._send_timeout = service._send_timeout

    def _service_closing(self) -> bool:
        return self._service._closing


class AsyncService(_AsyncCalls):
    """Service's asyncio twin: ``async with AsyncService(...) as service`` (or ``await
    service.start()`` then ``await service.close()``); the same arguments and methods."""

    def __init__(self, repl: Optional[str] = None, owner: Optional[str] = None, *,
                 args: Sequence[str] = (), env: Optional[Mapping[str, str]] = None,
                 request_timeout: float = DEFAULT_REQUEST_TIMEOUT):
        if not request_timeout > 0:
            raise DshptyError("INVALID_ARGUMENT", f"request_timeout must be positive seconds, not {request_timeout}")
        self._request_timeout = request_timeout
        self._send_timeout = repl_send_timeout(args)
        self.hello: Mapping[str, Any] = {}
        self._environment = dict(os.environ if env is None else env)
        self._path = locate_repl(repl, self._environment)
        self._args = list(args)
        self._owners = OwnerRegistry()
        self._token = self._owners.mint("default" if owner is None else owner)
        self._closing = False
        self._closed: Optional["asyncio.Future[None]"] = None
        self._connection_or_none: Optional[AsyncConnection] = None

    @property
    def _connection(self) -> AsyncConnection:  # type: ignore[override]
        if self._connection_or_none is None:
            raise DshptyError("SERVICE_NOT_STARTED", "the dshpty service is not started (await start())")
        return self._connection_or_none

    def _service_closing(self) -> bool:
        return self._closing

    async def start(self) -> "AsyncService":
        if self._connection_or_none is None:
            connection = await AsyncConnection.start(self._path, self._args, self._environment, self._request_timeout)
            try:
                self.hello = await self._hello(connection)
            except BaseException:
                connection.kill()
                await connection.wait_exit()
                raise
            self._connection_or_none = connection
        return self

    async def _hello(self, connection: AsyncConnection) -> Mapping[str, Any]:
        try:
            answer = await connection.call("hello", {})
        except DshptyError as error:
            return check_hello(self._path, lambda: _raise(error))
        return check_hello(self._path, lambda: answer)

    @property
    def pid(self) -> int:
        return self._connection.pid

    @property
    def pending_count(self) -> int:
        return self._connection.pending_count

    @property
    def returncode(self) -> Optional[int]:
        return self._connection.returncode

    def owner(self, name: str) -> AsyncOwner:
        if self._closing:
            raise DshptyError("SERVICE_DISPOSING", "the dshpty service is closed")
        return AsyncOwner(self, self._owners.mint(name))

    async def close(self, force: bool = False) -> None:
        """Ends the child: every session's tree is gone on return. Idempotent. A child that
        does not end within ``request_timeout`` raises ``REPL_TIMEOUT``; with `force` it is
        then killed (SIGKILL) and this returns once it is gone."""
        if self._closed is None:
            self._closing = True
            self._closed = asyncio.ensure_future(self._shutdown())
            self._closed.add_done_callback(_retrieved)
        if not force:
            await asyncio.shield(self._closed)
            return
        await asyncio.wait([self._closed])
        connection = self._connection_or_none
        if connection is not None and not await connection.wait_exit(0):
            connection.kill()
            await connection.wait_exit()

    async def _shutdown(self) -> None:
        connection = self._connection_or_none
        if connection is None:
            return
        failure: Optional[DshptyError] = None
        if connection.ended is None:
            try:
                await connection.call("shutdown", {})
            except DshptyError as error:
                if connection.ended is None:
                    failure = error
        connection.end_input()
        if failure is not None:
            raise failure
        if not await connection.wait_exit(connection.request_timeout):
            raise timed_out(connection.pid, "shutdown", connection.request_timeout)

    async def __aenter__(self) -> "AsyncService":
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


def _raise(error: BaseException) -> Any:
    raise error


def _retrieved(future: "asyncio.Future[Any]") -> None:
    if not future.cancelled():
        future.exception()
