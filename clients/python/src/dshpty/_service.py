"""The blocking client: Service (one dshpty-repl --json child, acting for its own owner) and
Owner (another owner on the same child). Every method is one request; the repl enforces
ownership, one live send per session and the rest of docs/contract.md."""

import math
import os
import threading
import time
from concurrent import futures
from typing import Any, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from ._connection import Connection, timed_out
from ._errors import DshptyError
from ._locate import locate_repl
from ._owners import OwnerRegistry, OwnerToken
from ._requests import (DEFAULT_REQUEST_TIMEOUT, answer_deadline, check_hello, given, open_fields, output_fields,
                        read_fields, repl_send_timeout, send_fields)
from ._types import (AbsolutePath, JobOutput, JobStarted, Limits, NetworkMode, OutputDelta, RcMode, ReadPage,
                     SandboxMode, Screen, Session, SendResult, ShellName, SignalName, SignalResult, SpawnResult,
                     StopResult, TerminalKind, Until)

#: How long one read of a streamed send (or a job's end) waits for more output; the repl
#: answers sooner when some comes or the send ends.
FOLLOW_WAIT_MS = 30000


class Send:
    """A live send. ``result()`` waits for its result; ``for chunk in send`` streams what it
    prints (new text as it comes, read by offset with a wait; the loop ends with the last
    bytes, then raises the send's error if it failed; ``dropped_bytes`` counts what the
    retained window lost before the loop read it); ``output(offset, wait_ms)`` reads by
    offset; ``read_output()`` polls the one consuming cursor; ``stop()`` ends its job;
    ``cancel()`` interrupts it with a real SIGINT. A background send (a job):
    ``started()`` is its answer, ``result()`` its end."""

    def __init__(self, calls: "_Calls", label: str, send_id: int, future: "futures.Future[Any]", deadline: float,
                 background: bool = False):
        self._calls, self._label, self.send_id, self._future = calls, label, send_id, future
        self._deadline = deadline  # seconds from now the repl has to answer it
        self._started = time.monotonic()
        self._cancelled = False
        # The repl's answer to the first cancel: {"cancelled": false} when the send had
        # settled before it came (then the result stands).
        self._cancel_reply: "Optional[Tuple[int, futures.Future[Any]]]" = None
        #: a job: answered at once (or when its ``until`` held), ended later
        self.background = background
        #: bytes the loops over this send skipped, too slow for the retained window
        self.dropped_bytes = 0
        self._known_end = 0  # the newest offset any read of this send saw
        self._job_end: Optional[Mapping[str, Any]] = None  # a job's result (or {"error"}), once known

    def result(self, timeout: Optional[float] = None) -> SendResult:
        """The send's result (a job's: once it ended). Raises TimeoutError when `timeout`
        seconds pass first (the send goes on), DshptyError ``ABORTED`` when it was cancelled
        (raised once the repl has answered it, so the next send is never SEND_ACTIVE; the
        answer is the error's ``result``), ``REPL_TIMEOUT`` when the repl has not answered
        within the send's own timeout plus ``request_timeout``, or the repl's error. A
        KeyboardInterrupt while a foreground send's result is awaited cancels the send,
        waits for its answer, and goes on up."""
        wire = self._job_result(timeout) if self.background else self._answer(timeout)
        result = SendResult.from_wire(wire)
        if self._cancelled and self._cancel_took():
            raise DshptyError("ABORTED", "send cancelled", result=result)
        return result

    def started(self, timeout: Optional[float] = None) -> JobStarted:
        """A job's answer: ``(job, session_id)`` at once; with ``until`` once it held, its
        timeout ran out, or the job ended first (``done``, ``result``)."""
        if not self.background:
            raise DshptyError("INVALID_ARGUMENT", "only a background send has a start (start_send(background=True))")
        wire = self._answer(timeout)
        if wire.get("done") and "result" in wire:
            self._job_end = wire["result"]
        return JobStarted.from_wire(wire)

    def _answer(self, timeout: Optional[float]) -> Any:
        """The send request's own answer (a job's: its start)."""
        connection = self._calls._connection
        left = self._deadline - (time.monotonic() - self._started)
        try:
            if timeout is not None and timeout < left:
                return self._future.result(timeout)
            if math.isinf(left):
                return self._future.result()
            return connection.wait(self.send_id, self._future, "send", max(left, 0.0))
        except KeyboardInterrupt:
            # The host's Ctrl-C (the repl, in a session of its own, does not get it): interrupt
            # the send as the repl's text mode does, and let it answer before unwinding so the
            # session takes the next send.
            if not self.background:
                self._interrupt()
            raise
        except futures.TimeoutError:
            # Before Python 3.11 that is not the built-in TimeoutError.
            raise TimeoutError(f"the send is still running after {timeout} s") from None
        except DshptyError as error:
            if self._cancelled and connection.ended is None and error.code != "REPL_TIMEOUT":
                raise DshptyError("ABORTED", "send cancelled") from error
            raise

    def _job_result(self, timeout: Optional[float]) -> Mapping[str, Any]:
        """A job's result: from its start when it ended first, else from the `output` reply
        that says it ended (long waits from the newest offset seen)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        self.started(timeout)
        while self._job_end is None:
            wait_ms = FOLLOW_WAIT_MS
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"the job is still running after {timeout} s")
                wait_ms = max(1, min(wait_ms, int(left * 1000)))
            out = self.output(offset=self._known_end, wait_ms=wait_ms)
            if out.done and self._job_end is None:
                raise DshptyError("BACKEND_FAILED", f"job {self.send_id} ended but the repl no longer keeps its result")
        error = self._job_end.get("error")
        if isinstance(error, Mapping):
            raise DshptyError.from_wire(error)
        return self._job_end

    def _cancel_took(self) -> bool:
        if self._cancel_reply is None:
            return True
        try:
            return bool(self._calls._connection.wait(*self._cancel_reply, "cancel")["cancelled"])
        except DshptyError:
            return True

    def done(self) -> bool:
        """The send has its answer (a job: it is known to have ended)."""
        return self._job_end is not None if self.background else self._future.done()

    def _interrupt(self) -> None:
        if self._future.done():
            return
        self._cancelled = True
        self._calls._connection.request("cancel", {"owner": self._label, "sendId": self.send_id})
        futures.wait([self._future], timeout=self._calls._connection.request_timeout)

    def read_output(self) -> OutputDelta:
        """What the send printed since the previous call (consuming)."""
        return OutputDelta.from_wire(self._calls._request("output", {"owner": self._label, "sendId": self.send_id}))

    def output(self, offset: Optional[int] = None, wait_ms: Optional[int] = None) -> JobOutput:
        """The output from byte `offset` (None: the consuming cursor), waiting up to `wait_ms`
        for more when there is none yet."""
        wire = self._calls._request("output", output_fields(self._label, self.send_id, offset, wait_ms),
                                    (wait_ms or 0) / 1000)
        out = JobOutput.from_wire(wire)
        self._known_end = max(self._known_end, out.next_offset)
        if out.done and "result" in wire:
            self._job_end = wire["result"]
        return out

    def stop(self) -> StopResult:
        """Ends the send's job (SIGINT, SIGTERM, SIGKILL to its processes, never the shell);
        returns once they are gone and the shell is at its prompt, or says which remain."""
        return StopResult.from_wire(self._calls._request("stop", {"owner": self._label, "sendId": self.send_id}))

    def __iter__(self) -> Iterator[str]:
        offset = 0
        while True:
            try:
                out = self.output(offset=offset, wait_ms=FOLLOW_WAIT_MS)
            except DshptyError:
                # A send the repl refused has no output to read: its own error says why.
                if self._future.done():
                    self._answer(0)
                raise
            self.dropped_bytes += out.dropped_bytes
            moved = out.next_offset != offset
            offset = out.next_offset
            if out.delta:
                yield out.delta
            if out.done and not moved:
                break
        self.result()

    def cancel(self) -> bool:
        """SIGINT to the session's foreground group; False once the send had been answered, or
        when a relay in front (ssh, script) had its text: nothing was done, and the send's
        result comes as usual (``line_state`` ``relayed``)."""
        if self.done():
            return False
        self._cancelled = True
        reply = self._calls._connection.request("cancel", {"owner": self._label, "sendId": self.send_id})
        if self._cancel_reply is None:
            self._cancel_reply = reply
        return bool(self._calls._connection.wait(*reply, "cancel")["cancelled"])


class _Calls:
    """The methods of an owner, shared by Service (its own owner) and Owner."""

    _connection: Connection
    _owners: OwnerRegistry
    _token: OwnerToken
    _closing: bool
    _send_timeout: float  # the repl's default send deadline, seconds

    @property
    def owner_name(self) -> str:
        return self._token.name

    def _request(self, op: str, fields: Mapping[str, Any], wait: float = 0.0) -> Any:
        """One request; its deadline is the request deadline plus `wait` seconds."""
        if self._service_closing():
            raise DshptyError("SERVICE_DISPOSING", "the dshpty service is closed")
        request_id, future = self._connection.request(op, fields)
        return self._connection.wait(request_id, future, op, self._connection.request_timeout + wait)

    def _call(self, op: str, fields: Mapping[str, Any]) -> Any:
        return self._request(op, {"owner": self._label(), **fields})

    def _label(self) -> str:
        if self._service_closing():
            raise DshptyError("SERVICE_DISPOSING", "the dshpty service is closed")
        return OwnerRegistry.label(self._token)

    def _service_closing(self) -> bool:
        raise NotImplementedError

    def spawn(self, type: str = "shell", name: Optional[str] = None, cwd: Optional[str] = None,
              shell: Union[ShellName, AbsolutePath, None] = None, rc: Optional[RcMode] = None,
              history: Optional[str] = None, terminal: Optional[TerminalKind] = None,
              sandbox: Optional[SandboxMode] = None, network: Union[NetworkMode, bool, None] = None,
              linger: Optional[int] = None, limits: Optional[Limits] = None,
              record: Optional[bool] = None) -> SpawnResult:
        """Opens a session. Only the arguments given are sent (see docs/clients.md)."""
        fields = open_fields(type, name, cwd, shell, rc, history, terminal, sandbox, network, linger, limits,
                             record)
        return SpawnResult.from_wire(self._call("open", fields))

    def start_send(self, session_id: str, text: Optional[str] = None, keys: Optional[Sequence[str]] = None,
                   submit: Optional[bool] = None, timeout_ms: Optional[int] = None,
                   idle_ms: Optional[int] = None, until: Optional[Until] = None,
                   background: Optional[bool] = None) -> Send:
        """Starts a send and returns at once. `until`: also settle once a new output line
        matches ``{"output": REGEX}`` or a process listens on ``{"port": N}``; `background`:
        a job (``started()`` answers at once, or once `until` held; ``result()`` its end)."""
        label = self._label()
        send_id, future = self._connection.request(
            "send", {"owner": label, **send_fields(session_id, text, keys, submit, timeout_ms, idle_ms, until,
                                                   background)})
        answer_by = answer_deadline(timeout_ms, background, until, self._send_timeout, self._connection.request_timeout)
        return Send(self, label, send_id, future, answer_by, background=bool(background))

    def send(self, session_id: str, text: Optional[str] = None, keys: Optional[Sequence[str]] = None,
             submit: Optional[bool] = None, timeout_ms: Optional[int] = None,
             idle_ms: Optional[int] = None, until: Optional[Until] = None,
             background: Optional[bool] = None) -> SendResult:
        """``start_send(...).result()`` (a job's: once it ended)."""
        return self.start_send(session_id, text, keys, submit, timeout_ms, idle_ms, until, background).result()

    def read(self, session_id: str, offset: Optional[int] = None, count: Optional[int] = None) -> ReadPage:
        return ReadPage.from_wire(self._call("read", read_fields(session_id, offset, count)))

    def screen(self, session_id: str) -> Screen:
        return Screen.from_wire(self._call("read", {"sessionId": session_id, "screen": True})["screen"])

    def signal(self, session_id: str, name: SignalName) -> SignalResult:
        """`name`: SIGINT SIGTERM SIGKILL SIGTSTP SIGHUP (or without SIG, any case)."""
        return SignalResult.from_wire(self._call("signal", {"sessionId": session_id, "signal": name}))

    def resize(self, session_id: str, rows: int, cols: int) -> None:
        self._call("resize", {"sessionId": session_id, "rows": rows, "cols": cols})

    def kill(self, session_id: str) -> bool:
        """Returns once the session's process tree is gone: True, or False when another close
        of it was already under way."""
        return bool(self._call("close", {"sessionId": session_id})["outcome"] == "closed")

    def list(self) -> List[Session]:
        return [Session.from_wire(s) for s in self._call("list", {})["sessions"]]

    def attach(self, name: Optional[str] = None) -> List[Session]:
        """Reattaches to this owner's sessions that outlived an earlier host (a repl with
        ``attach``)."""
        return [Session.from_wire(s) for s in self._call("attach", given(name=name))["sessions"]]

    def has_owner_activity(self) -> bool:
        """True while this owner has any session at all, idle ones included, or a send
        running; False once it has none."""
        return bool(self._call("activity", {})["active"])

    def dispose_owner(self) -> None:
        """Closes this owner's sessions (their trees gone on return); its calls then fail with
        OWNER_NOT_LIVE, and its name can be given to ``Service.owner`` again."""
        if self._service_closing():
            raise DshptyError("SERVICE_DISPOSING", "the dshpty service is closed")
        label = self._owners.begin_dispose(self._token)
        try:
            self._connection.call("disposeOwner", {"owner": label})
        finally:
            self._owners.release(self._token)


class Owner(_Calls):
    """Another owner on a Service's child; made by ``Service.owner(name)``."""

    def __init__(self, service: "Service", token: OwnerToken):
        self._service = service
        self._connection = service._connection
        self._owners = service._owners
        self._token = token
        self._send_timeout = service._send_timeout

    def _service_closing(self) -> bool:
        return self._service._closing


class Service(_Calls):
    """One dshpty-repl --json child, acting for the owner named `owner` (default
    ``"default"``). `repl`: the program (default $DSHPTY_REPL, then ``dshpty-repl`` on the
    PATH); `args`: more of its options; `env`: its environment; `request_timeout`: seconds
    any request may wait for its answer before it fails with ``REPL_TIMEOUT`` (a send: its
    own timeout more). Returns once the child has answered ``hello``. A context manager:
    leaving it closes every session."""

    def __init__(self, repl: Optional[str] = None, owner: Optional[str] = None, *,
                 args: Sequence[str] = (), env: Optional[Mapping[str, str]] = None,
                 request_timeout: float = DEFAULT_REQUEST_TIMEOUT):
        environment = dict(os.environ if env is None else env)
        if not request_timeout > 0:
            raise DshptyError("INVALID_ARGUMENT", f"request_timeout must be positive seconds, not {request_timeout}")
        # Every check before the child starts, so a refusal leaves no process behind.
        self._owners = OwnerRegistry()
        self._token = self._owners.mint("default" if owner is None else owner)
        self._send_timeout = repl_send_timeout(args)
        path = locate_repl(repl, environment)
        self._connection = Connection(path, list(args), environment, request_timeout)
        try:
            self.hello = check_hello(path, lambda: self._connection.call("hello", {}))
        except BaseException:
            self._connection.kill()
            self._connection.wait_exit()
            raise
        self._closing = False
        self._close_lock = threading.Lock()
        self._close_error: Optional[BaseException] = None
        self._closed = False

    def _service_closing(self) -> bool:
        return self._closing

    @property
    def pid(self) -> int:
        """The repl child's pid."""
        return self._connection.pid

    @property
    def pending_count(self) -> int:
        """Requests awaiting their answer."""
        return self._connection.pending_count

    @property
    def returncode(self) -> Optional[int]:
        """The child's exit status once it is gone (negative: the signal), else None."""
        return self._connection.returncode

    def owner(self, name: str) -> Owner:
        """Another owner on this child. Raises DshptyError INVALID_ARGUMENT while an owner of
        this name is live."""
        if self._closing:
            raise DshptyError("SERVICE_DISPOSING", "the dshpty service is closed")
        return Owner(self, self._owners.mint(name))

    def close(self, force: bool = False) -> None:
        """Ends the child: every session's tree is gone on return. Requests already made are
        answered first; later ones fail with SERVICE_DISPOSING. Idempotent. A child that
        does not end within ``request_timeout`` raises ``REPL_TIMEOUT``; with `force` it is
        then killed (SIGKILL) and this returns once it is gone."""
        with self._close_lock:
            if not self._closed:
                self._closing = True
                try:
                    if self._connection.ended is None:
                        self._connection.call("shutdown", {})
                except DshptyError as error:
                    # A child that died meanwhile took its sessions with it.
                    if self._connection.ended is None:
                        self._close_error = error
                self._connection.end_input()
                if self._close_error is None and not self._connection.wait_exit(self._connection.request_timeout):
                    self._close_error = timed_out(self.pid, "shutdown", self._connection.request_timeout)
                if self._close_error is None or force:
                    self._closed = True
            if force and not self._connection.wait_exit(0):
                self._connection.kill()
                self._connection.wait_exit()
                self._closed = True
                return
        if self._close_error is not None and not force:
            raise self._close_error

    def __enter__(self) -> "Service":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
