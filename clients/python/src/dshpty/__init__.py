"""dshpty: owner-scoped persistent PTY sessions for agent hosts, through one
``dshpty-repl --json`` child. ``Service`` blocks; ``AsyncService`` is its asyncio twin.

    with dshpty.Service() as service:
        session = service.spawn(type="shell", name="main")
        print(service.start_send(session.session_id, text="ls").result().viewport)
"""

from ._aio import AsyncOwner, AsyncSend, AsyncService
from ._errors import DshptyError
from ._service import Owner, Send, Service
from ._types import (Cursor, JobOutput, JobStarted, Match, OutputDelta, ReadPage, Screen, SendResult, Session,
                     SessionStatus, SignalResult, SpawnResult, StopRemaining, StopResult, Until)

__version__ = "0.1.0"

__all__ = [
    "AsyncOwner", "AsyncSend", "AsyncService", "Cursor", "DshptyError", "JobOutput", "JobStarted", "Match",
    "OutputDelta", "Owner", "ReadPage", "Screen", "Send", "SendResult", "Service", "Session", "SessionStatus",
    "SignalResult", "SpawnResult", "StopRemaining", "StopResult", "Until",
]
