"""Who may read and write the web view: the access token, browser sessions and CSRF tokens.

Without a token (the default, on loopback) everyone who can reach the port may read and write,
as for the OTLP receiver. With one, a request is :meth:`Sessions.authorised` when it carries
``Authorization: Bearer <token>`` (scripts, the receiver's own clients) or the cookie of a
session opened by posting the token to the login form once: a random ID, ``HttpOnly`` and
``SameSite=Strict``, kept in memory (a restart logs browsers out). Every write also needs the
session's CSRF token in the form and, when the browser sends one, an ``Origin`` (or
``Referer``) naming this server: a page on another site can neither read the token nor post
with the cookie.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Mapping
from http.cookies import CookieError, SimpleCookie
from urllib.parse import urlsplit

__all__ = ["COOKIE", "SESSION_TTL_S", "Sessions"]

COOKIE = "ragtrace_session"
SESSION_TTL_S = 12 * 3600.0
_MAX_SESSIONS = 1024


class Sessions:
    """Sessions of one web view; thread-safe. ``token`` None: no login needed."""

    def __init__(self, token: str | None = None, *, secure_cookie: bool = False) -> None:
        self._token = token
        self._secure = secure_cookie
        self._lock = threading.Lock()
        self._sessions: dict[str, tuple[float, str]] = {}  # id -> (expires, csrf)
        # Without a token there is no login: one CSRF token guards every form.
        self._open_csrf = secrets.token_urlsafe(24)

    @property
    def login_required(self) -> bool:
        return self._token is not None

    def _session_id(self, headers: Mapping[str, str]) -> str | None:
        raw = headers.get("cookie")
        if not raw:
            return None
        try:
            jar = SimpleCookie(raw)
        except CookieError:
            return None
        morsel = jar.get(COOKIE)
        return morsel.value if morsel is not None else None

    def _session(self, headers: Mapping[str, str]) -> tuple[float, str] | None:
        sid = self._session_id(headers)
        if sid is None:
            return None
        with self._lock:
            found = self._sessions.get(sid)
            if found is not None and found[0] <= time.time():
                del self._sessions[sid]
                return None
            return found

    def authorised(self, headers: Mapping[str, str]) -> bool:
        """True when the request may read: no token is set, it carries the bearer token, or
        the cookie of a live session. ``headers`` keys are lower-case."""
        if self._token is None:
            return True
        auth = headers.get("authorization", "")
        if auth[:7].lower() == "bearer " and hmac.compare_digest(
            auth[7:].strip().encode(), self._token.encode()
        ):
            return True
        return self._session(headers) is not None

    def login(self, offered: str) -> str | None:
        """The ``Set-Cookie`` value of a new session when ``offered`` is the token, else None."""
        if self._token is None or not hmac.compare_digest(offered.encode(), self._token.encode()):
            return None
        sid = secrets.token_urlsafe(32)
        now = time.time()
        with self._lock:
            if len(self._sessions) >= _MAX_SESSIONS:  # drop expired, then the oldest
                for key in [k for k, v in self._sessions.items() if v[0] <= now] or [
                    min(self._sessions, key=lambda k: self._sessions[k][0])
                ]:
                    del self._sessions[key]
            self._sessions[sid] = (now + SESSION_TTL_S, secrets.token_urlsafe(24))
        secure = "; Secure" if self._secure else ""
        return (
            f"{COOKIE}={sid}; Path=/; HttpOnly; SameSite=Strict; "
            f"Max-Age={int(SESSION_TTL_S)}{secure}"
        )

    def csrf(self, headers: Mapping[str, str]) -> str:
        """The CSRF token to put in this request's forms."""
        if self._token is None:
            return self._open_csrf
        found = self._session(headers)
        return found[1] if found is not None else ""

    def may_write(self, headers: Mapping[str, str], form_csrf: str) -> str | None:
        """None when a write with ``form_csrf`` is allowed, else why not."""
        origin = headers.get("origin") or headers.get("referer")
        host = headers.get("host", "")
        if origin is not None and origin != "null" and urlsplit(origin).netloc != host:
            return f"cross-site request refused (origin {origin[:100]!r} is not {host!r})"
        if origin == "null":
            return "cross-site request refused (opaque origin)"
        expected = self.csrf(headers)
        if not expected or not hmac.compare_digest(form_csrf.encode(), expected.encode()):
            return "missing or stale form token: reload the page and try again"
        return None
