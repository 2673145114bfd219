"""The results, as dataclasses with snake_case fields. Each keeps the fields a newer repl
sends that this version does not name (``evidence``, ``omittedLines``, ...) in ``extra``."""

import re
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Literal, Mapping, Optional, Type, TypedDict, TypeVar, Union, cast

T = TypeVar("T")

# The closed sets, as the JSON face names them (docs/tool-protocol.md).
WaitReason = Literal["stdin_read", "inferred_idle", "timeout", "session_exit", "matched"]
StatusKind = Literal["running", "exited", "lost", "reconnecting"]
Evidence = Literal["prompt_marks", "stdin_probe", "relay", "none"]
LineState = Literal["continuation", "kept", "queued", "refused", "swallowed", "relayed"]
SignalName = Literal["SIGINT", "SIGTERM", "SIGKILL", "SIGTSTP", "SIGHUP", "INT", "TERM", "KILL", "TSTP", "HUP"]
ShellName = Literal["bash", "zsh", "fish"]
RcMode = Literal["none", "user"]
TerminalKind = Literal["dumb", "xterm"]
SandboxMode = Literal["none", "read-only", "workspace-write"]
NetworkMode = Literal["on", "off"]
#: an absolute path (a shell's or a history file's); not checked by the type
AbsolutePath = str
#: per-session limits, ``{"pids": N, "memory": BYTES, "cpu": FRACTION}`` (each optional;
#: at most the operator's)
Limits = Mapping[str, Union[int, float]]
#: the signals a job's stop sends, in order
StopSignal = Literal["SIGINT", "SIGTERM", "SIGKILL"]


class Until(TypedDict, total=False):
    """A send's condition: a new output line matching ``output`` (an ECMAScript regex, the
    echo excluded) or a process of the session listening on TCP ``port``; either settles it."""
    output: str
    port: int


class Match(TypedDict, total=False):
    """What held: ``{"output": line}`` or ``{"port": n, "pid": p, "address": a}``."""
    output: str
    port: int
    pid: int
    address: str


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _decode(cls: Type[T], wire: Mapping[str, Any], **converted: Any) -> T:
    """Fills `cls` from the wire's camelCase fields; unnamed ones go to `extra`."""
    names = {f.name for f in fields(cast(Any, cls))}
    values: Dict[str, Any] = {}
    extra: Dict[str, Any] = {}
    for key, value in wire.items():
        snake = _snake(key)
        if snake in names and snake != "extra":
            values[snake] = value
        else:
            extra[key] = value
    values.update(converted)
    if "extra" in names:
        values["extra"] = extra
    return cls(**values)


@dataclass
class SessionStatus:
    """``kind``: ``running``, ``exited``, ``lost`` or ``reconnecting``."""
    kind: StatusKind
    exit_code: Optional[int] = None
    signal: Optional[str] = None
    reason: Optional[str] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> "SessionStatus":
        return _decode(cls, wire)


@dataclass
class Session:
    """A session as ``list()`` and ``attach()`` show it."""
    session_id: str
    type: str
    status: SessionStatus
    name: Optional[str] = None
    pid: Optional[int] = None
    #: a limit the session reached: ``{"kind": "pids"|"memory", "pid"?: int, "command"?: str}``
    limit_hit: Optional[Dict[str, Any]] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> "Session":
        return _decode(cls, wire, status=SessionStatus.from_wire(wire["status"]))


@dataclass
class SpawnResult:
    """What ``spawn`` returns: the session and what it printed while starting."""
    session_id: str
    type: str
    status: SessionStatus
    motd: str
    name: Optional[str] = None
    pid: Optional[int] = None
    truncated: bool = False
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> "SpawnResult":
        return _decode(cls, wire, status=SessionStatus.from_wire(wire["status"]))


@dataclass
class Cursor:
    row: int
    col: int
    visible: bool


@dataclass
class Screen:
    """The rendered screen; the cursor is 0-based."""
    rows: int
    cols: int
    lines: List[str]
    cursor: Cursor
    alternate: bool
    title: str
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> "Screen":
        return _decode(cls, wire, cursor=Cursor(**{k: wire["cursor"][k] for k in ("row", "col", "visible")}))


@dataclass
class SendResult:
    """``wait_reason``: ``stdin_read``, ``inferred_idle``, ``timeout``, ``session_exit`` or ``matched``.
    ``exit_code`` and ``cwd`` are set when the send ended at the shell's own prompt;
    ``screen`` when it ended on the alternate screen."""
    viewport: str
    wait_reason: WaitReason
    session_status: SessionStatus
    truncated: bool
    exit_code: Optional[int]
    cwd: Optional[str]
    input_hidden: bool
    #: what settled it: ``prompt_marks``, ``stdin_probe``, ``relay`` or ``none``
    evidence: Evidence = "none"
    screen: Optional[Screen] = None
    #: with ``truncated``: what the cut left out
    omitted_lines: Optional[int] = None
    omitted_bytes: Optional[int] = None
    #: a cancel took the text back from the input queue before the shell read it (no signal)
    taken_back_bytes: int = 0
    #: the shell did not run the line: ``continuation``, ``kept``, ``queued``, ``refused`` or ``swallowed``;
    #: ``relayed``: a relay in front (ssh, script) read it, whether its far side ran it is not known
    line_state: Optional[LineState] = None
    #: for ``queued``: ``{"pid": int, "command": str}`` of the command it waits behind (for
    #: ``swallowed`` and ``relayed``: the one that read it)
    queued_behind: Optional[Dict[str, Any]] = None
    #: a limit the session reached (as ``Session.limit_hit``)
    limit_hit: Optional[Dict[str, Any]] = None
    #: with ``matched``: ``{"output": line}`` or ``{"port": n, "pid": p, "address": a}``
    match: Optional[Match] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> "SendResult":
        screen = Screen.from_wire(wire["screen"]) if wire.get("screen") else None
        return _decode(cls, wire, session_status=SessionStatus.from_wire(wire["sessionStatus"]), screen=screen)


@dataclass
class OutputDelta:
    delta: str
    truncated: bool

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> "OutputDelta":
        return cls(delta=wire["delta"], truncated=wire["truncated"])


@dataclass
class ReadPage:
    """Lines numbered from 1, oldest retained first."""
    text: str
    total_lines: int
    line_begin: int
    line_end: int
    truncated: bool
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> "ReadPage":
        return _decode(cls, wire)


@dataclass
class SignalResult:
    delivered: bool
    target_pgid: int

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> "SignalResult":
        return cls(delivered=wire["delivered"], target_pgid=wire["targetPgid"])


J = TypeVar("J", "JobStarted", "JobOutput")


def _with_job_result(cls: Type[J], wire: Mapping[str, Any]) -> J:
    """Decodes a reply that may carry a job's ``result``; a failed job's ``{"error": ...}``
    goes to ``extra["result"]`` (``result`` stays None)."""
    result = wire.get("result")
    failed = isinstance(result, Mapping) and "error" in result
    decoded = SendResult.from_wire(result) if isinstance(result, Mapping) and not failed else None
    out = _decode(cls, wire, result=decoded)
    if failed:
        out.extra["result"] = result
    return out


@dataclass
class JobStarted:
    """A background send's answer: at once ``(job, session_id)``; with ``until`` once it held
    (``wait_reason="matched"``, ``match``), its ``timeout_ms`` ran out (``"timeout"``, the job
    runs on), or the job ended first (``done=True``, ``result``)."""
    job: int
    session_id: str
    wait_reason: Optional[WaitReason] = None
    match: Optional[Match] = None
    done: Optional[bool] = None
    result: Optional[SendResult] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> "JobStarted":
        return _with_job_result(cls, wire)


@dataclass
class JobOutput:
    """A send's output from an offset: ``delta`` up to ``next_offset`` (bytes);
    ``dropped_bytes`` the retained window (1 MiB) no longer had past the offset
    (``truncated`` = ``dropped_bytes > 0``); ``done`` once the send had ended; ``result``
    with ``done`` for a background job."""
    delta: str
    truncated: bool
    next_offset: int
    dropped_bytes: int
    done: bool
    result: Optional[SendResult] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> "JobOutput":
        return _with_job_result(cls, wire)


@dataclass
class StopRemaining:
    """A process a stop could not end, and why."""
    pid: int
    command: str
    why: str


@dataclass
class StopResult:
    """``stopped`` once every process of the job is gone and the shell is at its prompt;
    ``signals`` sent in order; else ``remaining`` says which are left."""
    stopped: bool
    signals: List[StopSignal]
    remaining: List[StopRemaining]
    taken_back_bytes: Optional[int] = None  # the job's command had not started: its text was taken back
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> "StopResult":
        remaining = [StopRemaining(pid=r["pid"], command=r["command"], why=r["why"]) for r in wire.get("remaining", [])]
        return _decode(cls, wire, remaining=remaining)
