"""DshptyError: every failure the client reports, with a stable ``code``."""

from typing import TYPE_CHECKING, List, Literal, Mapping, Optional, cast

if TYPE_CHECKING:
    from ._types import SendResult

#: The repl's codes and the client's own: a closed set, so a misspelt code is a type error
#: (a code a newer repl adds still arrives as sent).
ErrorCode = Literal[
    "DUPLICATE_BACKEND", "DUPLICATE_NAME", "FOREIGN_SESSION", "NO_BACKEND", "NO_SESSION", "OWNER_NOT_LIVE",
    "SEND_ACTIVE", "SERVICE_DISPOSING", "SESSION_CLOSING", "SESSION_EXITED", "INVALID_ARGUMENT", "BACKEND_FAILED",
    "BACKEND_CLEANUP_FAILED", "CLEANUP_FAILED", "ABORTED",
    "REPL_NOT_FOUND", "REPL_EXITED", "REPL_TIMEOUT", "SERVICE_NOT_STARTED",
]


class DshptyError(Exception):
    """A failure with a stable ``code``: the repl's own codes (``NO_SESSION``,
    ``SEND_ACTIVE``, ... as docs/contract.md lists them) passed through unchanged, or one the
    client raises itself:

    - ``REPL_NOT_FOUND``: the dshpty-repl child could not be started;
    - ``REPL_EXITED``: the child ended before answering (the message says how);
    - ``REPL_TIMEOUT``: the child did not answer within ``request_timeout`` (stopped, wedged);
    - ``SERVICE_NOT_STARTED``: an ``AsyncService`` used before ``await start()``;
    - ``SERVICE_DISPOSING``: the service is closed or closing;
    - ``OWNER_NOT_LIVE``: the owner was disposed;
    - ``INVALID_ARGUMENT``: caught before reaching the repl (a second live owner of a name);
    - ``ABORTED``: the send was cancelled (``result`` then holds its answer, if it came).
    """

    def __init__(self, code: ErrorCode, message: str, errors: Optional[List["DshptyError"]] = None,
                 result: "Optional[SendResult]" = None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.errors = list(errors or [])
        self.result = result

    @classmethod
    def from_wire(cls, wire: Mapping[str, object]) -> "DshptyError":
        parts = wire.get("errors")
        children = [cls.from_wire(child) for child in parts if isinstance(child, Mapping)] if isinstance(parts, list) else []
        return cls(cast(ErrorCode, str(wire.get("code", "BACKEND_FAILED"))), str(wire.get("message", "")), children)
