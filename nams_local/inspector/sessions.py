"""Browser sessions of the inspector: a random id in an HttpOnly cookie, the token here.

A browser cannot send ``Authorization: Bearer`` by itself, so the login form takes the
token once and the server keeps it in memory under a random session id; the cookie holds
only that id (``HttpOnly``, ``SameSite=Strict``, ``Secure`` over https). The token is
re-checked through the same authenticator as ``/v1`` on every request, so a revoked or
expired key logs the browser out at once. Each session has its own CSRF token, sent back
in every form; sessions are bounded in number and idle time, and a restart logs everyone
out (nothing about a session is written to disk).
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass

__all__ = ["DEFAULT_IDLE_SECONDS", "DEFAULT_MAX_SESSIONS", "Session", "SessionStore"]

#: At most this many logged-in browsers at once; the least recently used is dropped.
DEFAULT_MAX_SESSIONS = 1024
#: A session unused for this long is gone (12 hours).
DEFAULT_IDLE_SECONDS = 12 * 3600


@dataclass
class Session:
    """One logged-in browser: the token it gave, the workspace header it chose, its CSRF
    token and when it was last used."""

    token: str
    workspace_header: str | None
    csrf: str
    last_used: float

    def csrf_matches(self, sent: str | None) -> bool:
        """Constant-time comparison, so a forged form learns nothing from the timing."""
        return sent is not None and hmac.compare_digest(sent.encode(), self.csrf.encode())


class SessionStore:
    """Sessions by id, least recently used evicted first, idle ones expired on access."""

    def __init__(
        self,
        *,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        idle_seconds: float = DEFAULT_IDLE_SECONDS,
    ) -> None:
        if max_sessions < 1 or idle_seconds <= 0:
            raise ValueError("max_sessions and idle_seconds must be positive")
        self._max = max_sessions
        self._idle = idle_seconds
        self._sessions: OrderedDict[str, Session] = OrderedDict()

    def create(self, token: str, workspace_header: str | None) -> tuple[str, Session]:
        session_id = secrets.token_urlsafe(32)
        session = Session(token, workspace_header, secrets.token_urlsafe(32), time.monotonic())
        self._sessions[session_id] = session
        while len(self._sessions) > self._max:
            self._sessions.popitem(last=False)
        return session_id, session

    def get(self, session_id: str | None) -> Session | None:
        if not session_id:
            return None
        session = self._sessions.get(session_id)
        if session is None:
            return None
        now = time.monotonic()
        if now - session.last_used > self._idle:
            del self._sessions[session_id]
            return None
        session.last_used = now
        self._sessions.move_to_end(session_id)
        return session

    def drop(self, session_id: str | None) -> None:
        if session_id:
            self._sessions.pop(session_id, None)

    def __len__(self) -> int:
        return len(self._sessions)
