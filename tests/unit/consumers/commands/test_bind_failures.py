"""A busy port is one line naming the listener and the address, and exit 2 — never a traceback:
``serve --port``, ``serve --metrics-port`` and ``demo --port``, each against a port this test
really holds."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragtrace.cli import main
from ragtrace.cli.exit_codes import EXIT_BAD_INPUT
from ragtrace_consumers.errors import CannotListen
from ragtrace_consumers.intake.http_server import BoundedHTTPServer, GatedRequestHandler


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
        f"127.0.0.1:{busy_port}: address already in use",
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
        f"127.0.0.1:{busy_port}: address already in use",
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
        f"127.0.0.1:{busy_port}: address already in use",
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
