"""Console sessions: what a login cookie stands for, kept in the controller's memory.

A session is made by a login (a bearer token checked against the credentials file, or a verified
TLS client certificate) and named by 32 random bytes in an HttpOnly, SameSite=Strict cookie.
It remembers the principal, how it logged in (the token itself, so every later request is
authenticated with it again and a revoked token ends the session within the credentials file's
reload interval), and its CSRF token, which every state-changing request must echo in
``X-CSRF-Token``.

Sessions live in one controller's memory: a restart, or another controller, asks for a login
again. The store is bounded (oldest evicted first) and sessions expire after an idle time and
after an absolute lifetime.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["CSRF_HEADER", "Session", "SessionStore", "cookie_name"]

CSRF_HEADER = "X-CSRF-Token"
MAX_SESSIONS = 10_000
IDLE_SECONDS = 3600.0
LIFETIME_SECONDS = 8 * 3600.0


def cookie_name(node_id: int) -> str:
    """The session cookie of controller ``node_id``: cookies ignore ports, so controllers on
    one host each need their own name."""
    return f"chunkraft_console_{node_id}"


@dataclass
class Session:
    """One logged-in person: ``principal`` (its name), ``token`` (the bearer token it logged in
    with; None for a certificate login, whose every connection's certificate must keep naming
    ``principal``), ``csrf`` and its times. Mutated only by the store."""

    session_id: str
    principal: str
    token: str | None
    csrf: str
    created: float
    last_seen: float = field(default=0.0)

    def csrf_matches(self, presented: str | None) -> bool:
        """Whether ``presented`` is this session's CSRF token (constant-time)."""
        return presented is not None and hmac.compare_digest(presented.encode(),
                                                             self.csrf.encode())


class SessionStore:
    """The sessions of one controller, by id. Thread-safe (one lock); bounded to
    ``max_sessions``, evicting the least recently used."""

    def __init__(self, *, max_sessions: int = MAX_SESSIONS, idle: float = IDLE_SECONDS,
                 lifetime: float = LIFETIME_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_sessions = max_sessions
        self.idle = idle
        self.lifetime = lifetime
        self._clock = clock
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, Session] = OrderedDict()

    def create(self, principal: str, token: str | None) -> Session:
        """A new session for ``principal`` (logged in with ``token``, or a certificate)."""
        now = self._clock()
        session = Session(secrets.token_urlsafe(32), principal, token,
                          secrets.token_urlsafe(32), now, now)
        with self._lock:
            self._sessions[session.session_id] = session
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
        return session

    def get(self, session_id: str) -> Session | None:
        """The live session named ``session_id`` (its idle time restarts), else None."""
        now = self._clock()
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return None
            if now - session.last_seen > self.idle or now - session.created > self.lifetime:
                del self._sessions[session_id]
                return None
            session.last_seen = now
            self._sessions.move_to_end(session_id)
            return session

    def end(self, session_id: str) -> None:
        """Forgets the session (a logout, or credentials that no longer hold)."""
        with self._lock:
            self._sessions.pop(session_id, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)
