"""Keyword arguments into request fields. Only what the caller gave is sent: a repl that
predates a field refuses it with its own INVALID_ARGUMENT (a DshptyError) rather than being
sent a default it does not know, and a newer one applies its own defaults."""

from typing import Any, Dict, Optional, Sequence, Union


def given(**fields: Any) -> Dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None}


def open_fields(type: str, name: Optional[str], cwd: Optional[str], shell: Optional[str],
                rc: Optional[str], history: Optional[str], terminal: Optional[str],
                sandbox: Optional[str], network: Union[str, bool, None],
                linger: Optional[int]) -> Dict[str, Any]:
    if isinstance(network, bool):
        network = "on" if network else "off"
    return given(type=type, name=name, cwd=cwd, shell=shell, rc=rc, history=history,
                 terminal=terminal, sandbox=sandbox, network=network, linger=linger)


def send_fields(session_id: str, text: Optional[str], keys: Optional[Sequence[str]],
                submit: Optional[bool], timeout_ms: Optional[int],
                idle_ms: Optional[int]) -> Dict[str, Any]:
    return given(sessionId=session_id, text=text, keys=list(keys) if keys is not None else None,
                 submit=submit, timeoutMs=timeout_ms, idleMs=idle_ms)


def read_fields(session_id: str, offset: Optional[int], count: Optional[int]) -> Dict[str, Any]:
    return given(sessionId=session_id, offset=offset, count=count)
