"""Who may talk to ``ragtrace serve``: a bearer token, TLS, and the rule that joins them to the
address it listens on.

:class:`AccessPolicy` is checked by :class:`~ragtrace_consumers.intake.http_server.GatedRequestHandler`
once per request, before any routing, for every method and path the server answers: a request
without ``Authorization: Bearer <token>`` (compared in constant time; ``Basic`` with the token as
password is accepted too, so a browser can prompt for it) is answered 401 and its connection
closed, its body never read. :func:`check_exposure` refuses to listen beyond loopback
without a token unless the operator said ``insecure``; :func:`server_tls` builds the server's TLS
context from a certificate and key pair (PEM files), read at start so a bad pair fails at once.
"""

from __future__ import annotations

import base64
import hmac
import ipaddress
import ssl
from dataclasses import dataclass

from ragtrace.errors import RagtraceError

__all__ = ["AccessPolicy", "ExposureError", "check_exposure", "is_loopback", "server_tls"]

_SCHEME = "bearer"


class ExposureError(RagtraceError, ValueError):
    """The server would listen beyond loopback with nothing keeping strangers out, or its TLS
    pair cannot be used; the message says what to set."""


@dataclass(frozen=True)
class AccessPolicy:
    """The bearer token every request must carry (``token`` None: every request is let in)."""

    token: str | None = None

    def __post_init__(self) -> None:
        if self.token is not None and (not self.token or self.token != self.token.strip()):
            raise ExposureError("the bearer token must be non-empty, without surrounding spaces")

    def allows(self, authorization: str | None) -> bool:
        """Whether a request whose ``Authorization`` header is ``authorization`` may proceed:
        ``Bearer <token>`` (exporters, scrapers), or ``Basic`` with the token as the password
        (any user name), which a browser asks for by itself on a 401."""
        if self.token is None:
            return True
        scheme, _, credentials = (authorization or "").strip().partition(" ")
        scheme, credentials = scheme.lower(), credentials.strip()
        given = ""
        if scheme == _SCHEME:
            given = credentials
        elif scheme == "basic":
            try:
                decoded = base64.b64decode(credentials, validate=True).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                decoded = ""
            given = decoded.partition(":")[2]
        # Constant time over the expected token, whatever was given.
        return hmac.compare_digest(given.encode(), self.token.encode())


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is reachable only from this machine."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything


def check_exposure(hosts: dict[str, str], policy: AccessPolicy, *, insecure: bool) -> None:
    """Raise :class:`ExposureError` when any of ``hosts`` (what listens -> address) is beyond
    loopback while ``policy`` has no token, unless ``insecure``."""
    if policy.token is not None or insecure:
        return
    exposed = [f"{what} on {host}" for what, host in hosts.items() if not is_loopback(host)]
    if exposed:
        raise ExposureError(
            f"{', '.join(exposed)} would accept anyone who can reach it: set a bearer token "
            "(--token or RAGTRACE_SERVE_TOKEN; exporters send it as the header "
            "'Authorization: Bearer <token>'), or pass --insecure to allow it without one"
        )


def server_tls(cert: str | None, key: str | None) -> ssl.SSLContext | None:
    """The server's TLS context for the PEM certificate (chain) ``cert`` and its private key
    ``key`` (None when the certificate file holds the key); None without ``cert``."""
    if cert is None:
        if key is not None:
            raise ExposureError(
                "serve.tls_key: needs serve.tls_cert (the certificate it belongs to)"
            )
        return None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise ExposureError(
            f"serve.tls_cert/tls_key: cannot use the pair {cert}"
            f"{'' if key is None else ' + ' + key}: {exc}"
        ) from None
    return context
