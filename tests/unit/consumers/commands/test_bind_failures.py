"""A busy port is one line naming the listener, the address and where to choose another, and
exit 2 — never a traceback: ``serve --port``, ``serve --metrics-port``, ``demo --port`` and
``consume``'s health endpoint, each against a port this test really holds."""

from __future__ import annotations

import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragtrace.cli import main
from ragtrace.cli.exit_codes import EXIT_BAD_INPUT
from ragtrace_consumers.config import ConsumerConfig
from ragtrace_consumers.errors import CannotListen
from ragtrace_consumers.intake.http_server import BoundedHTTPServer, GatedRequestHandler
from ragtrace_consumers.runtime import kafka_service
from ragtrace_consumers.telemetry.health import HealthServer, Heartbeat


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield int(held.getsockname()[1])


def _one_line_error(capsys: pytest.CaptureFixture[str], expected: str) -> None:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert lines == [expected]


def test_serve_names_the_otlp_receiver_and_its_busy_port(
    busy_port: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["serve", "--port", str(busy_port), "--state", str(tmp_path / "s.db")])
    assert code == EXIT_BAD_INPUT
    _one_line_error(
        capsys,
        "ragtrace serve: error: the OTLP receiver cannot listen on "
        f"127.0.0.1:{busy_port}: address already in use (another port: --port)",
    )


def test_serve_names_the_metrics_endpoint_and_its_busy_port(
    busy_port: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["serve", "--port", "0", "--metrics-port", str(busy_port)]
    code = main([*argv, "--state", str(tmp_path / "s.db"), "--judge", "lexical"])
    assert code == EXIT_BAD_INPUT
    _one_line_error(
        capsys,
        "ragtrace serve: error: the metrics endpoint cannot listen on "
        f"127.0.0.1:{busy_port}: address already in use (another port: --metrics-port)",
    )


def test_demo_names_the_otlp_receiver_and_its_busy_port(
    busy_port: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["demo", "--port", str(busy_port), "--judge", "lexical"]
    code = main([*argv, "--state", str(tmp_path / "d.db")])
    assert code == EXIT_BAD_INPUT
    _one_line_error(
        capsys,
        "ragtrace demo: error: the OTLP receiver cannot listen on "
        f"127.0.0.1:{busy_port}: address already in use (another port: --port)",
    )


def test_the_server_raises_cannot_listen_with_the_address(busy_port: int) -> None:
    with pytest.raises(CannotListen) as caught:
        BoundedHTTPServer(("127.0.0.1", busy_port), GatedRequestHandler, listener="the thing")
    assert (caught.value.listener, caught.value.host, caught.value.port) == (
        "the thing",
        "127.0.0.1",
        busy_port,
    )
    assert isinstance(caught.value, OSError)
    assert str(caught.value) == (
        f"the thing cannot listen on 127.0.0.1:{busy_port}: address already in use"
    )


def test_consume_names_the_health_endpoint_and_the_setting_for_its_port(
    busy_port: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def build(cfg: ConsumerConfig) -> None:
        # What build_service binds last, once Kafka and Redis answered (not run here).
        HealthServer("127.0.0.1", busy_port, heartbeat=Heartbeat(), liveness_timeout_s=1.0)

    monkeypatch.setattr(kafka_service, "build_service", build)
    monkeypatch.delenv("RAGTRACE_CONSUMER_CONFIG", raising=False)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        assert main(["consume"]) == EXIT_BAD_INPUT
    finally:  # consume installs its own
        for s, handler in handlers.items():
            signal.signal(s, handler)
    _one_line_error(
        capsys,
        "ragtrace consume: error: the health endpoint cannot listen on "
        f"127.0.0.1:{busy_port}: address already in use "
        "(another port: health.port, $RAGTRACE_HEALTH_PORT)",
    )
