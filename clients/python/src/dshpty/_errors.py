"""DshptyError: every failure the client reports, with a stable ``code``."""

from typing import Any, List, Mapping, Optional


class DshptyError(Exception):
    """A failure with a stable ``code``: the repl's own codes (``NO_SESSION``,
    ``SEND_ACTIVE``, ... as docs/contract.md lists them) passed through unchanged, or one the
    client raises itself:

    - ``REPL_NOT_FOUND``: the dshpty-repl child could not be started;
    - ``REPL_EXITED``: the child ended before answering (the message says how);
    - ``SERVICE_DISPOSING``: the service is closed or closing;
    - ``OWNER_NOT_LIVE``: the owner was disposed;
    - ``INVALID_ARGUMENT``: caught before reaching the repl (a second live owner of a name);
    - ``ABORTED``: the send was cancelled (``result`` then holds its answer, if it came).
    """

    def __init__(self, code: str, message: str, errors: Optional[List["DshptyError"]] = None,
                 result: Any = None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.errors = list(errors or [])
        self.result = result

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> "DshptyError":
        children = [cls.from_wire(child) for child in wire.get("errors") or []]
        return cls(str(wire.get("code", "BACKEND_FAILED")), str(wire.get("message", "")), children)
