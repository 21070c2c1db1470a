"""Credentials never printed: one masking function for URLs and texts that may contain them.

:func:`mask_url` masks one URL: the password of its user info (``redis://user:pw@host`` reads
``redis://user:***@host``) and the value of any secret-named query parameter (``password=``,
``token=``, ``api_key=``, ...). :func:`mask_secrets` masks every URL found in a free text (an
error message, a library's exception, a log line), secret-named ``key=value`` pairs, ``Bearer``
credentials (not a word after "bearer": "set a bearer token" stays readable), and any value
registered with :func:`register_secret` (a password or API key read from the environment), so
a message quoting one verbatim still reads ``***``.

:func:`install_log_masking` applies :func:`mask_secrets` to every log record the process emits
(message, arguments and traceback), whatever handler writes it; the ``ragtrace`` command
installs it first thing. Every place that prints a URL calls :func:`mask_url` itself as well:
the log mask is the safety net for text a library formats, not the only guard.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "MASK",
    "SECRET_ENV_VARS",
    "SECRET_QUERY_KEYS",
    "install_log_masking",
    "mask_secrets",
    "mask_url",
    "register_environment_secrets",
    "register_secret",
]

MASK = "***"
"""What a credential reads as wherever it is shown."""

SECRET_QUERY_KEYS = frozenset(
    {
        *("password", "passwd", "pwd", "pass", "token", "access_token", "refresh_token"),
        *("api_key", "apikey", "api-key", "key", "secret", "client_secret", "auth"),
        *("authorization", "sig", "signature", "x-amz-signature", "x-amz-security-token"),
        *("sasl_password", "credential", "credentials", "session_token"),
    }
)
"""Query parameter names (case-insensitive) whose value is masked."""

SECRET_ENV_VARS = (
    *("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"),
    *("RAGTRACE_REDIS_PASSWORD", "RAGTRACE_KAFKA_SASL_PASSWORD", "RAGTRACE_SERVE_TOKEN"),
)
"""Environment variables holding a credential: :func:`register_environment_secrets` masks
their values."""

_MIN_SECRET_CHARS = 4  # shorter values would mask ordinary words
_secrets: set[str] = set()
_lock = threading.Lock()

# scheme://user:password@ — the password is anything up to the last '@' before the host.
_USERINFO = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s/@:]*):(?P<pw>[^\s/]*)@")
# key=value in a query string or free text ("password=..." in a message), key not mid-word.
_QUERY = re.compile(
    r"(?P<head>(?<![A-Za-z0-9_.\-])(?P<key>[A-Za-z0-9_.\-]+)=)(?P<value>[^&;#,\s'\"]*)"
)
_BEARER = re.compile(r"(?P<head>\b[Bb]earer\s+)(?P<value>[A-Za-z0-9\-._~+/]+=*)")
# A word of prose after "bearer" ("a bearer token", 'Bearer realm="..."'), not a credential: a
# credential has a digit, a symbol, inner capitals or more letters than a word.
_PROSE_WORD = re.compile(r"[A-Z]?[a-z]{1,15}")


def mask_url(url: str) -> str:
    """``url`` with the password of its user info and every secret-named query value masked.
    Text that is not a URL is returned unchanged (by :func:`mask_secrets`' rules)."""
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL (an unbalanced bracket): mask what looks like one
        return mask_secrets(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":" + MASK
        netloc = f"{userinfo}@{host}"
    query = "&".join(_masked_param(item) for item in parts.query.split("&") if item)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _masked_param(item: str) -> str:
    key, sep, value = item.partition("=")
    return f"{key}={MASK}" if sep and key.lower() in SECRET_QUERY_KEYS else item


def register_secret(value: str | None) -> None:
    """Mask ``value`` wherever :func:`mask_secrets` sees it from now on (a password, a token or
    an API key the process was given). Values under four characters are ignored."""
    if value and len(value) >= _MIN_SECRET_CHARS:
        with _lock:
            _secrets.add(value)


def register_environment_secrets(env: Mapping[str, str]) -> None:
    """:func:`register_secret` the value of every variable of :data:`SECRET_ENV_VARS` in ``env``."""
    for name in SECRET_ENV_VARS:
        register_secret(env.get(name))


def mask_secrets(text: str) -> str:
    """``text`` with every URL's password, secret-named query values, ``Bearer`` credentials
    and registered secrets masked."""
    if not text:
        return text
    with _lock:
        known = sorted(_secrets, key=len, reverse=True)
    for secret in known:
        if secret in text:
            text = text.replace(secret, MASK)
    text = _USERINFO.sub(lambda m: f"{m['head']}:{MASK}@", text)
    text = _QUERY.sub(
        lambda m: m["head"] + MASK if m["key"].lower() in SECRET_QUERY_KEYS else m[0], text
    )
    return _BEARER.sub(
        lambda m: m[0] if _PROSE_WORD.fullmatch(m["value"].rstrip("=")) else m["head"] + MASK, text
    )


_installed: Callable[..., logging.LogRecord] | None = None


def install_log_masking() -> None:
    """Mask secrets in every log record created from now on (idempotent): the message with its
    arguments is formatted once and masked, and an attached traceback is formatted and masked."""
    global _installed
    with _lock:
        if _installed is not None and logging.getLogRecordFactory() is _installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args: object, **kwargs: object) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            try:
                message = record.getMessage()
            except Exception:  # noqa: BLE001 - a bad format string is the handler's to report
                return record
            masked = mask_secrets(message)
            if masked != message or record.args:
                record.msg, record.args = masked, None
            if record.exc_info and not record.exc_text:
                record.exc_text = mask_secrets(logging.Formatter().formatException(record.exc_info))
            return record

        logging.setLogRecordFactory(factory)
        _installed = factory
