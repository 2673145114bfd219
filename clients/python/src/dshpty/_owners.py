"""Owners in a client: an owner's label is its name, so the same name reaches the same repl
owner across restarts of the host. Two live owners of one name would silently share
sessions, so a second one is refused here; a disposed owner's calls fail here with
OWNER_NOT_LIVE instead of reaching the repl, where its label would name a fresh owner."""

import threading
from typing import Dict

from ._errors import DshptyError

LIVE, DISPOSING, DISPOSED = "live", "disposing", "disposed"


class OwnerToken:
    def __init__(self, name: str):
        self.name = name
        self.state = LIVE


class OwnerRegistry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_name: Dict[str, OwnerToken] = {}

    def mint(self, name: str) -> OwnerToken:
        if not isinstance(name, str) or not name:
            raise DshptyError("INVALID_ARGUMENT", "an owner name must be a non-empty string")
        with self._lock:
            existing = self._by_name.get(name)
            if existing is not None:
                what = "is already live" if existing.state == LIVE else "is still being disposed"
                raise DshptyError("INVALID_ARGUMENT", f'owner "{name}" {what} in this service')
            token = OwnerToken(name)
            self._by_name[name] = token
            return token

    @staticmethod
    def label(token: OwnerToken) -> str:
        if token.state != LIVE:
            raise DshptyError("OWNER_NOT_LIVE", f'PTY owner "{token.name}" is no longer live (disposed)')
        return token.name

    def begin_dispose(self, token: OwnerToken) -> str:
        with self._lock:
            label = self.label(token)
            token.state = DISPOSING
            return label

    def release(self, token: OwnerToken) -> None:
        with self._lock:
            token.state = DISPOSED
            if self._by_name.get(token.name) is token:
                del self._by_name[token.name]
