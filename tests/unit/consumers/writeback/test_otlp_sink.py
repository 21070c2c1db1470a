"""The write-back exporter's HTTP session: environment proxy settings resolved once."""

from __future__ import annotations

import pytest

from ragtrace_consumers.writeback.otlp_sink import _session

URL = "http://collector.example:4318/v1/traces"


def _clear(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "NO_PROXY",
        "no_proxy",
        "ALL_PROXY",
        "all_proxy",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER",
        "OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER",
    ):
        monkeypatch.delenv(name, raising=False)


def test_proxies_from_the_environment_are_resolved_once(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear(monkeypatch)
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    session = _session(URL)
    assert session is not None and session.trust_env is False
    assert session.proxies == {"http": "http://proxy.example:3128"}
    monkeypatch.setenv("NO_PROXY", "collector.example")
    assert _session(URL).proxies == {}


@pytest.mark.parametrize(
    "name",
    ["REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER"],
)
def test_the_exporters_own_session_when_the_environment_configures_more(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    _clear(monkeypatch)
    monkeypatch.setenv(name, "x")
    assert _session(URL.replace("http:", "https:")) is None


def test_a_ca_bundle_does_not_concern_a_plain_http_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _clear(monkeypatch)
    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.setenv(name, "/etc/ssl/certs/ca-certificates.crt")
    session = _session(URL)
    assert session is not None and session.trust_env is False
    monkeypatch.setenv("OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER", "x")
    assert _session(URL) is None
