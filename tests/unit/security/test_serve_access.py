"""``serve`` beyond loopback: a bearer token checked before routing on every request, TLS from a
certificate and key pair, and the refusal to listen openly without ``--insecure``.

A real certificate is made at test time (``cryptography`` when installed, else the ``openssl``
command); the real OTLP/HTTP exporter sends the token as its ``Authorization`` header over TLS.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import shutil
import ssl
import subprocess
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry, Counter

from ragtrace.cli import main
from ragtrace_consumers.config import ConsumerConfig
from ragtrace_consumers.intake.http_server import (
    AccessPolicy,
    ExposureError,
    check_exposure,
    server_tls,
)
from ragtrace_consumers.intake.metrics_endpoint import MetricsEndpoint
from ragtrace_consumers.intake.otlp_receiver import Accepted, OtlpHttpReceiver
from ragtrace_consumers.model import SpanRecord
from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator

TOKEN = "tok-3f9a1c-serve"


def _self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost, and its key (PEM files)."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
    except ImportError:
        openssl = shutil.which("openssl")
        assert openssl, "neither the cryptography package nor the openssl command is available"
        subprocess.run(
            [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
            + ["-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1"]
            + ["-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
            check=True,
            capture_output=True,
        )
        return cert, key
    private = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(private.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(private, hashes.SHA256())
    )
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key.write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert, key


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _self_signed(tmp_path_factory.mktemp("tls"))


class Sink:
    def __init__(self) -> None:
        self.batches: list[list[SpanRecord]] = []
        self.lock = threading.Lock()

    def __call__(self, spans: Sequence[SpanRecord]) -> Accepted | None:
        with self.lock:
            self.batches.append(list(spans))
        return None


@pytest.fixture
def secured(pair: tuple[Path, Path]) -> Iterator[tuple[OtlpHttpReceiver, Sink]]:
    sink = Sink()
    receiver = OtlpHttpReceiver(
        sink, port=0, access=AccessPolicy(TOKEN), tls=server_tls(str(pair[0]), str(pair[1]))
    )
    with receiver:
        yield receiver, sink


def _spans() -> Sequence[object]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "tls-test"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with provider.get_tracer("t").start_as_current_span("rag.pipeline"):
        pass
    provider.shutdown()
    return memory.get_finished_spans()


def test_real_exporter_sends_the_token_over_tls(
    secured: tuple[OtlpHttpReceiver, Sink],
    pair: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # requests lets these variables win over the session's CA file the exporter sets.
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    receiver, sink = secured
    assert receiver.traces_url.startswith("https://127.0.0.1:")
    spans = _spans()
    good = OTLPSpanExporter(
        endpoint=receiver.traces_url,
        headers={"Authorization": f"Bearer {TOKEN}"},
        certificate_file=str(pair[0]),
        timeout=5,
    )
    assert good.export(spans) is SpanExportResult.SUCCESS  # type: ignore[arg-type]
    good.shutdown()  # type: ignore[no-untyped-call]
    assert [s.name for b in sink.batches for s in b] == ["rag.pipeline"]
    for headers in ({"Authorization": "Bearer wrong-token"}, {}):
        refused = OTLPSpanExporter(
            endpoint=receiver.traces_url,
            headers=headers,
            certificate_file=str(pair[0]),
            timeout=5,
        )
        assert refused.export(spans) is SpanExportResult.FAILURE  # type: ignore[arg-type]
        refused.shutdown()  # type: ignore[no-untyped-call]
    assert len(sink.batches) == 1  # nothing from the refused exporters reached the sink


def _get(
    url: str, pair: tuple[Path, Path], token: str | None, method: str = "GET"
) -> tuple[int, str]:
    context = ssl.create_default_context(cafile=str(pair[0]))
    request = urllib.request.Request(url, method=method, data=b"{}" if method == "POST" else None)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=5, context=context) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        schemes = exc.headers.get_all("WWW-Authenticate")
        web_page = urllib.parse.urlsplit(url).path.startswith("/ui/")
        assert exc.code != 401 or schemes == (
            ['Bearer realm="ragtrace"']  # the web view's sign-in page: no browser prompt
            if web_page
            else ['Bearer realm="ragtrace"', 'Basic realm="ragtrace", charset="UTF-8"']
        )
        return exc.code, exc.read().decode()


def test_the_gate_comes_before_every_route(
    secured: tuple[OtlpHttpReceiver, Sink], pair: tuple[Path, Path]
) -> None:
    receiver, _ = secured
    base = receiver.endpoint
    for path, method in [
        ("/v1/traces", "POST"),
        ("/v1/logs", "POST"),
        ("/v1/metrics", "POST"),
        ("/v1/traces", "GET"),
        ("/no-such-route", "GET"),
        ("/", "GET"),
    ]:
        assert _get(base + path, pair, None, method)[0] == 401, (method, path)
        assert _get(base + path, pair, "Bearer-less", method)[0] == 401, (method, path)
    # With the token the routes answer as before.
    assert _get(base + "/no-such-route", pair, TOKEN)[0] == 404
    assert _get(base + "/v1/traces", pair, TOKEN)[0] == 405
    assert _get(base + "/v1/logs", pair, TOKEN, "POST")[0] == 200


def test_plain_http_to_the_tls_port_gets_nothing(secured: tuple[OtlpHttpReceiver, Sink]) -> None:
    receiver, sink = secured
    plain = receiver.endpoint.replace("https://", "http://") + "/v1/traces"
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        urllib.request.urlopen(
            urllib.request.Request(plain, data=b"", method="POST"), timeout=5
        ).read()
    assert sink.batches == []


def test_metrics_endpoint_behind_the_same_gate(pair: tuple[Path, Path]) -> None:
    registry = CollectorRegistry()
    Counter("ragtrace_probe", "probe", registry=registry).inc()
    endpoint = MetricsEndpoint(
        registry,
        "127.0.0.1",
        0,
        access=AccessPolicy(TOKEN),
        tls=server_tls(str(pair[0]), str(pair[1])),
    ).start()
    try:
        assert endpoint.url.startswith("https://127.0.0.1:") and endpoint.url.endswith("/metrics")
        assert _get(endpoint.url, pair, None)[0] == 401
        assert _get(endpoint.url, pair, "nope")[0] == 401
        status, body = _get(endpoint.url, pair, TOKEN)
        assert status == 200 and "ragtrace_probe_total 1.0" in body
        assert _get(endpoint.url.replace("/metrics", "/x"), pair, TOKEN)[0] == 404
    finally:
        endpoint.stop()


def test_access_policy_and_exposure_rule() -> None:
    policy = AccessPolicy(TOKEN)
    assert policy.allows(f"Bearer {TOKEN}") and policy.allows(f"bearer  {TOKEN} ")
    for header in (None, "", TOKEN, f"Basic {TOKEN}", f"Bearer {TOKEN}x", "Bearer "):
        assert not policy.allows(header), header
    assert AccessPolicy().allows(None)
    # A browser: Basic with the token as the password, any user name.
    basic = base64.b64encode(f"anyone:{TOKEN}".encode()).decode()
    assert policy.allows(f"Basic {basic}")
    for wrong in (f"anyone:{TOKEN}x", TOKEN, f"{TOKEN}:"):
        assert not policy.allows(f"Basic {base64.b64encode(wrong.encode()).decode()}"), wrong
    assert not policy.allows("Basic !!not-base64!!")
    for host in ("127.0.0.1", "::1", "[::1]", "localhost", "127.0.0.2"):
        check_exposure({"receiver": host}, AccessPolicy(), insecure=False)
    for host in ("0.0.0.0", "::", "10.1.2.3", "evaluator.internal"):
        with pytest.raises(ExposureError, match="--insecure"):
            check_exposure({"receiver": host}, AccessPolicy(), insecure=False)
        check_exposure({"receiver": host}, AccessPolicy(), insecure=True)
        check_exposure({"receiver": host}, policy, insecure=False)
    with pytest.raises(ExposureError, match="serve.tls_key: needs serve.tls_cert"):
        server_tls(None, "key.pem")


def test_serve_refuses_an_open_wide_bind(
    tmp_path: Path,
    pair: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("RAGTRACE_SERVE_TOKEN", raising=False)
    state = ["--state", str(tmp_path / "s.sqlite3"), "--port", "0"]
    assert main(["serve", "--host", "0.0.0.0", *state]) == 2
    err = capsys.readouterr().err
    assert "the OTLP receiver on 0.0.0.0 would accept anyone" in err and "--insecure" in err
    assert main(["serve", "--metrics-host", "0.0.0.0", *state]) == 2
    assert "/metrics on 0.0.0.0" in capsys.readouterr().err
    bad = ["--tls-cert", str(pair[1]), "--tls-key", str(tmp_path / "missing.pem")]
    assert main(["serve", *state, *bad]) == 2
    assert "cannot use the pair" in capsys.readouterr().err
    monkeypatch.setenv("RAGTRACE_SERVE_TOKEN", TOKEN)
    assert main(["serve", "--host", "0.0.0.0", *state, "--print-config"]) == 0
    out = capsys.readouterr().out
    assert "token: '***'  # env RAGTRACE_SERVE_TOKEN" in out and TOKEN not in out


def _gated(tmp_path: Path, pair: tuple[Path, Path], **serve: object) -> ConsumerConfig:
    """A configuration whose serve section asks for TOKEN over TLS with ``pair``."""
    return ConsumerConfig.defaults().replace(
        serve={
            "port": 0,
            "state": tmp_path / "state.sqlite3",
            "token": TOKEN,
            "tls_cert": str(pair[0]),
            "tls_key": str(pair[1]),
            **serve,
        }
    )


def test_the_embedded_evaluator_gates_its_receiver_and_metrics(
    tmp_path: Path, pair: tuple[Path, Path]
) -> None:
    config = _gated(tmp_path, pair, host="0.0.0.0", metrics_host="0.0.0.0", metrics_port=0)
    assert TOKEN not in repr(config)
    with EmbeddedEvaluator(config) as evaluator:
        metrics_url = evaluator.metrics_url
        assert metrics_url is not None and metrics_url.startswith("https://")
        local = metrics_url.replace("0.0.0.0", "127.0.0.1")
        assert _get(local, pair, None)[0] == 401
        assert _get(local, pair, TOKEN)[0] == 200
        traces = f"https://127.0.0.1:{evaluator.receiver.port}/v1/traces"
        assert _get(traces, pair, None, "POST")[0] == 401
        assert _get(traces, pair, TOKEN, "POST")[0] == 415  # past the gate: routed


def test_the_web_view_shares_the_token_and_tls_of_the_receiver(
    tmp_path: Path, pair: tuple[Path, Path]
) -> None:
    """The receiver's gate lets the web view's paths through to the web view, which asks for the
    same token: a bearer header, or a sign-in that sets a Secure cookie over TLS."""
    with EmbeddedEvaluator(_gated(tmp_path, pair, host="127.0.0.1")) as evaluator:
        base = f"https://127.0.0.1:{evaluator.receiver.port}"
        assert evaluator.web_url == base + "/ui/"
        status, page = _get(base + "/ui/traces", pair, None)
        assert status == 401 and "Access token" in page  # the web view's sign-in page
        assert _get(base + "/ui/traces", pair, "wrong-token")[0] == 401
        assert _get(base + "/ui/traces", pair, TOKEN)[0] == 200
        assert _get(base + "/ui/static/ragtrace.css", pair, None)[0] == 200
        assert _get(base + "/v1/traces", pair, None, "POST")[0] == 401  # OTLP still gated
        assert _get(base + "/v1/traces", pair, None)[0] == 401

        context = ssl.create_default_context(cafile=str(pair[0]))
        login = urllib.request.Request(
            base + "/ui/login",
            data=f"token={TOKEN}".encode(),
            headers={"Content-Type": "application/x-www-form-urlencoded", "Origin": base},
            method="POST",
        )

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args: object, **kwargs: object) -> None:
                return None

        opener = urllib.request.build_opener(
            urllib.request.HTTPSHandler(context=context), NoRedirect()
        )
        with pytest.raises(urllib.error.HTTPError) as seen:
            opener.open(login, timeout=5)
        assert seen.value.code == 303
        cookie = seen.value.headers["Set-Cookie"]
        assert "Secure" in cookie and "HttpOnly" in cookie
        page_request = urllib.request.Request(
            base + "/ui/traces", headers={"Cookie": cookie.split(";", 1)[0]}
        )
        with opener.open(page_request, timeout=5) as response:
            assert response.status == 200
