"""Signals an OTLP endpoint refuses: turned off for it, with one warning, the others keep going.

A trace backend (Phoenix, Jaeger, Tempo) takes ``/v1/traces`` and answers 404, 405, 415 or 501
to ``/v1/logs`` and ``/v1/metrics``. Such an answer is not transient: retrying it would only
park every scored trace and fill the log with one line per export. :class:`RefusedSignals`
remembers, per endpoint, which signals were refused and logs ONE warning per signal naming the
setting that chooses what is sent; :meth:`RefusedSignals.guard` puts an OTLP/HTTP exporter of
the SDK behind it (sent nothing once its signal is off, and a refusal counts as handled); the
app-signal forwarder asks :meth:`RefusedSignals.is_off` before each request. Any other failure
(5xx, 429, connection refused) is left to the exporter's retries and the caller, as before.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ragtrace.masking import mask_url

__all__ = ["REFUSING_STATUSES", "RefusedSignals", "signal_of_path"]

_log = logging.getLogger(__name__)

REFUSING_STATUSES: Final = frozenset({404, 405, 415, 501})
"""HTTP statuses meaning "this endpoint does not take this signal" (never retried)."""

_SIGNAL_PATHS: Final = {"/v1/traces": "traces", "/v1/logs": "logs", "/v1/metrics": "metrics"}


def signal_of_path(path: str) -> str | None:
    """The OTLP signal posted to ``path`` (``/v1/logs``: ``logs``); None for another path."""
    return _SIGNAL_PATHS.get(path)


class _SdkLog:
    """The SDK client's logger, less its own error line for a refusing status (ours replaces
    it). A wrapper rather than a ``logging.Filter``: it holds whatever logging configuration the
    application (or a test run) installs."""

    def __init__(self, inner: logging.Logger) -> None:
        self._inner = inner

    def error(self, msg: str, *args: object, **kwargs: Any) -> None:
        if msg.startswith("Failed to export %s batch code") and REFUSING_STATUSES.intersection(
            a for a in args if isinstance(a, int)
        ):
            return
        self._inner.error(msg, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


_sdk_log = _SdkLog(logging.getLogger(__name__ + ".sdk"))


@dataclass(frozen=True)
class _Skipped:
    """The SDK client's result for a request not sent (or refused) because its signal is off:
    a success, so the exporter neither retries nor reports it."""

    success: bool = True
    status_code: int | None = None
    reason: str | None = None
    error: Exception | None = None


class RefusedSignals:
    """The signals ``endpoint`` refused. ``settings`` maps a signal to advice naming the setting
    that chooses whether it is sent (quoted in the warning: ``serve --otlp-signals traces``)."""

    def __init__(self, endpoint: str, settings: Mapping[str, str]) -> None:
        self._endpoint = mask_url(endpoint.rstrip("/"))
        self._settings = dict(settings)
        self._off: set[str] = set()
        self._lock = threading.Lock()

    def is_off(self, signal: str) -> bool:
        return signal in self._off

    @property
    def off(self) -> frozenset[str]:
        """The signals turned off so far."""
        return frozenset(self._off)

    def refused(self, signal: str, status: int | None) -> bool:
        """Note an answer ``status`` to ``signal``; True when it is a refusal (the signal is off
        from now on; the first refusal of a signal is logged, once)."""
        if status not in REFUSING_STATUSES:
            return False
        with self._lock:
            first = signal not in self._off
            self._off.add(signal)
        if first:
            advice = self._settings.get(signal, "")
            _log.warning(
                "%s answers %s to /v1/%s: it does not take %s, so none are sent there until "
                "restart; the other signals keep going%s",
                self._endpoint,
                status,
                signal,
                signal,
                f" ({advice})" if advice else "",
            )
        return True

    def guard(self, exporter: Any, signal: str) -> Any:
        """``exporter`` (an SDK OTLP/HTTP exporter of ``signal``), its HTTP client behind this
        registry; returned for chaining."""
        exporter._client = _GuardedClient(exporter._client, signal, self)
        return exporter


class _GuardedClient:
    """The SDK's ``_OTLPHTTPClient`` seen through :class:`RefusedSignals`."""

    def __init__(self, inner: Any, signal: str, refusals: RefusedSignals) -> None:
        inner._logger = _sdk_log
        self._inner = inner
        self._signal = signal
        self._refusals = refusals

    def export(self, data: bytes) -> Any:
        if self._refusals.is_off(self._signal):
            return _Skipped()
        result = self._inner.export(data)
        if not result.success and self._refusals.refused(self._signal, result.status_code):
            return _Skipped(status_code=result.status_code)
        return result

    def shutdown(self) -> None:
        self._inner.shutdown()
