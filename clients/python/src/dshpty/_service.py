"""The blocking client: Service (one dshpty-repl --json child, acting for its own owner) and
Owner (another owner on the same child). Every method is one request; the repl enforces
ownership, one live send per session and the rest of docs/contract.md."""

import os
import threading
from concurrent import futures
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from ._connection import Connection
from ._errors import DshptyError
from ._locate import locate_repl
from ._owners import OwnerRegistry, OwnerToken
from ._requests import given, open_fields, read_fields, send_fields
from ._types import OutputDelta, ReadPage, Screen, Session, SendResult, SignalResult, SpawnResult


class Send:
    """A live send. ``result()`` waits for its answer; ``read_output()`` polls what it has
    printed so far; ``cancel()`` interrupts it with a real SIGINT."""

    def __init__(self, calls: "_Calls", label: str, send_id: int, future: Any):
        self._calls, self._label, self.send_id, self._future = calls, label, send_id, future
        self._cancelled = False

    def result(self, timeout: Optional[float] = None) -> SendResult:
        """The send's result. Raises TimeoutError when `timeout` seconds pass first (the send
        goes on), DshptyError ``ABORTED`` when it was cancelled (raised once the repl has
        answered it, so the next send is never SEND_ACTIVE; the answer is the error's
        ``result``), or the repl's error. A KeyboardInterrupt while waiting cancels the send,
        waits for its answer, and goes on up."""
        try:
            wire = self._future.result(timeout)
        except KeyboardInterrupt:
            # The host's Ctrl-C (the repl, in a session of its own, does not get it): interrupt
            # the send as the repl's text mode does, and let it answer before unwinding so the
            # session takes the next send.
            self._interrupt()
            raise
        except futures.TimeoutError:
            # Before Python 3.11 that is not the built-in TimeoutError.
            raise TimeoutError(f"the send is still running after {timeout} s") from None
        except DshptyError as error:
            if self._cancelled and self._calls._connection.ended is None:
                raise DshptyError("ABORTED", "send cancelled") from error
            raise
        result = SendResult.from_wire(wire)
        if self._cancelled:
            raise DshptyError("ABORTED", "send cancelled", result=result)
        return result

    def done(self) -> bool:
        return self._future.done()

    def _interrupt(self) -> None:
        if self._future.done():
            return
        self._cancelled = True
        self._calls._connection.request("cancel", {"owner": self._label, "sendId": self.send_id})
        futures.wait([self._future])

    def read_output(self) -> OutputDelta:
        """What the send printed since the previous call (consuming)."""
        return OutputDelta.from_wire(self._calls._request("output", {"owner": self._label, "sendId": self.send_id}))

    def cancel(self) -> bool:
        """SIGINT to the session's foreground group; False once the send had been answered."""
        if self._future.done():
            return False
        self._cancelled = True
        return bool(self._calls._connection.call("cancel", {"owner": self._label, "sendId": self.send_id})["cancelled"])


class _Calls:
    """The methods of an owner, shared by Service (its own owner) and Owner."""

    _connection: Connection
    _owners: OwnerRegistry
    _token: OwnerToken
    _closing: bool

    @property
    def owner_name(self) -> str:
        return self._token.name

    def _request(self, op: str, fields: Mapping[str, Any]) -> Any:
        if self._service_closing():
            raise DshptyError("SERVICE_DISPOSING", "the dshpty service is closed")
        return self._connection.call(op, fields)

    def _call(self, op: str, fields: Mapping[str, Any]) -> Any:
        return self._request(op, {"owner": self._label(), **fields})

    def _label(self) -> str:
        if self._service_closing():
            raise DshptyError("SERVICE_DISPOSING", "the dshpty service is closed")
        return OwnerRegistry.label(self._token)

    def _service_closing(self) -> bool:
        raise NotImplementedError

    def spawn(self, type: str = "shell", name: Optional[str] = None, cwd: Optional[str] = None,
              shell: Optional[str] = None, rc: Optional[str] = None, history: Optional[str] = None,
              terminal: Optional[str] = None, sandbox: Optional[str] = None,
              network: Union[str, bool, None] = None, linger: Optional[int] = None) -> SpawnResult:
        """Opens a session. Only the arguments given are sent (see docs/clients.md)."""
        fields = open_fields(type, name, cwd, shell, rc, history, terminal, sandbox, network, linger)
        return SpawnResult.from_wire(self._call("open", fields))

    def start_send(self, session_id: str, text: Optional[str] = None, keys: Optional[Sequence[str]] = None,
                   submit: Optional[bool] = None, timeout_ms: Optional[int] = None,
                   idle_ms: Optional[int] = None) -> Send:
        """Starts a send and returns at once."""
        label = self._label()
        send_id, future = self._connection.request(
            "send", {"owner": label, **send_fields(session_id, text, keys, submit, timeout_ms, idle_ms)})
        return Send(self, label, send_id, future)

    def send(self, session_id: str, text: Optional[str] = None, **options: Any) -> SendResult:
        """``start_send(...).result()``."""
        return self.start_send(session_id, text, **options).result()

    def read(self, session_id: str, offset: Optional[int] = None, count: Optional[int] = None) -> ReadPage:
        return ReadPage.from_wire(self._call("read", read_fields(session_id, offset, count)))

    def screen(self, session_id: str) -> Screen:
        return Screen.from_wire(self._call("read", {"sessionId": session_id, "screen": True})["screen"])

    def signal(self, session_id: str, name: str) -> SignalResult:
        """`name`: SIGINT SIGTERM SIGKILL SIGTSTP SIGHUP (or without SIG, any case)."""
        return SignalResult.from_wire(self._call("signal", {"sessionId": session_id, "signal": name}))

    def resize(self, session_id: str, rows: int, cols: int) -> None:
        self._call("resize", {"sessionId": session_id, "rows": rows, "cols": cols})

    def kill(self, session_id: str) -> bool:
        """Returns once the session's process tree is gone: True, or False when another close
        of it was already under way."""
        return self._call("close", {"sessionId": session_id})["outcome"] == "closed"

    def list(self) -> List[Session]:
        return [Session.from_wire(s) for s in self._call("list", {})["sessions"]]

    def attach(self, name: Optional[str] = None) -> List[Session]:
        """Reattaches to this owner's sessions that outlived an earlier host (a repl with
        ``attach``)."""
        return [Session.from_wire(s) for s in self._call("attach", given(name=name))["sessions"]]

    def has_owner_activity(self) -> bool:
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

    def _service_closing(self) -> bool:
        return self._service._closing


class Service(_Calls):
    """One dshpty-repl --json child, acting for the owner named `owner` (default
    ``"default"``). `repl`: the program (default $DSHPTY_REPL, then ``dshpty-repl`` on the
    PATH); `args`: more of its options; `env`: its environment. A context manager: leaving
    it closes every session."""

    def __init__(self, repl: Optional[str] = None, owner: Optional[str] = None, *,
                 args: Sequence[str] = (), env: Optional[Mapping[str, str]] = None):
        environment = dict(os.environ if env is None else env)
        # Every check before the child starts, so a refusal leaves no process behind.
        self._owners = OwnerRegistry()
        self._token = self._owners.mint("default" if owner is None else owner)
        self._connection = Connection(locate_repl(repl, environment), list(args), environment)
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

    def close(self) -> None:
        """Ends the child: every session's tree is gone on return. Requests already made are
        answered first; later ones fail with SERVICE_DISPOSING. Idempotent."""
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
                self._connection.wait_exit()
                self._closed = True
        if self._close_error is not None:
            raise self._close_error

    def __enter__(self) -> "Service":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
