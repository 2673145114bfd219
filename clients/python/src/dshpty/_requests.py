"""Keyword arguments into request fields. Only what the caller gave is sent: a repl that
predates a field refuses it with its own INVALID_ARGUMENT (a DshptyError) rather than being
sent a default it does not know, and a newer one applies its own defaults."""

from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Union

from ._errors import DshptyError

#: Seconds any request may wait for the child's answer (a send: its own timeout more).
DEFAULT_REQUEST_TIMEOUT = 60.0


def repl_send_timeout(args: Sequence[str]) -> float:
    """The repl's default send deadline in seconds: its ``--timeout-ms`` among `args`, else 30."""
    value: Optional[str] = None
    for i, arg in enumerate(args):
        if arg == "--timeout-ms" and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith("--timeout-ms="):
            value = arg.split("=", 1)[1]
    try:
        return int(value) / 1000 if value is not None and int(value) > 0 else 30.0
    except ValueError:
        return 30.0


def check_hello(path: str, ask: Callable[[], Any]) -> Mapping[str, Any]:
    """The child's ``hello`` answer ({name, version, protocol}), or why it is no repl:
    REPL_EXITED (it ended: bad arguments, its message says), REPL_TIMEOUT (no answer), or
    REPL_NOT_FOUND (it answered as no dshpty-repl does)."""
    try:
        hello = ask()
    except DshptyError as error:
        if error.code in ("REPL_EXITED", "REPL_TIMEOUT"):
            raise
        raise DshptyError("REPL_NOT_FOUND", f'{path} does not answer "hello" (not a dshpty-repl, or an older '
                                            f"one): {error.message}") from None
    if not isinstance(hello, dict) or not isinstance(hello.get("protocol"), int):
        raise DshptyError("REPL_NOT_FOUND", f"{path} is not a dshpty-repl (its hello: {hello!r})")
    return hello


def given(**fields: Any) -> Dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None}


def open_fields(type: str, name: Optional[str], cwd: Optional[str], shell: Optional[str],
                rc: Optional[str], history: Optional[str], terminal: Optional[str],
                sandbox: Optional[str], network: Union[str, bool, None],
                linger: Optional[int], limits: Optional[Mapping[str, Any]] = None,
                record: Optional[bool] = None) -> Dict[str, Any]:
    if isinstance(network, bool):
        network = "on" if network else "off"
    return given(type=type, name=name, cwd=cwd, shell=shell, rc=rc, history=history,
                 terminal=terminal, sandbox=sandbox, network=network, linger=linger,
                 limits=dict(limits) if isinstance(limits, Mapping) else limits, record=record)


def send_fields(session_id: str, text: Optional[str], keys: Optional[Sequence[str]],
                submit: Optional[bool], timeout_ms: Optional[int],
                idle_ms: Optional[int], until: Optional[Dict[str, Any]] = None,
                background: Optional[bool] = None) -> Dict[str, Any]:
    return given(sessionId=session_id, text=text, keys=list(keys) if keys is not None else None,
                 submit=submit, timeoutMs=timeout_ms, idleMs=idle_ms, until=until,
                 background=background)


def read_fields(session_id: str, offset: Optional[int], count: Optional[int]) -> Dict[str, Any]:
    return given(sessionId=session_id, offset=offset, count=count)
