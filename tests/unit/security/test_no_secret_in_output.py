"""A planted credential appears in no output of any command or service path tried.

One password is planted everywhere a credential can be given: inside ``RAGTRACE_REDIS_URL`` (user
info and a ``password=`` query), in ``RAGTRACE_REDIS_PASSWORD``, in the Kafka SASL password, in
``ANTHROPIC_API_KEY``, in the judge's base URL and in an OTLP endpoint URL. Every path below is
run with Redis and Kafka down (their errors are what print addresses) and everything it writes —
stdout, stderr and log records, text and JSON — is searched for the password:

* ``labels load|list|stats|clear`` (environment URL, and ``--redis URL`` given explicitly);
* ``consume`` start-up failure (Redis unreachable), text and ``--log-format json``;
* ``consume`` with a configuration error, ``consume --print-config`` (YAML and ``--json``);
* ``serve --print-config``; ``serve`` start-up banner with a credentialled OTLP endpoint (a real
  process, stopped by SIGTERM);
* ``inspect`` of a trace file;
* ``groundedness`` with a rejected API key (the fake API answers 401) and with an unreachable
  judge base URL carrying the password.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragtrace.cli import main
from ragtrace.masking import MASK, mask_secrets, mask_url
from scripts.services.process import free_port
from tests.fakes.anthropic_server import FakeAnthropic, error_reply

SECRET = "Pl4nted-s3cret-9q"
ROOT = Path(__file__).resolve().parents[3]
EXAMPLE_LABELS = ROOT / "examples" / "labels.jsonl"
_MAIN = "import sys; from ragtrace.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """Every credential variable set to SECRET; Redis and Kafka on a closed port."""
    port = free_port()
    for name in list(os.environ):
        if name.startswith(("RAGTRACE_", "ANTHROPIC_", "OPENAI_")):
            monkeypatch.delenv(name)
    env = {
        "RAGTRACE_REDIS_URL": f"redis://ragtrace:{SECRET}@127.0.0.1:{port}/0?password={SECRET}",
        "RAGTRACE_REDIS_PASSWORD": SECRET,
        "RAGTRACE_KAFKA_BOOTSTRAP_SERVERS": f"127.0.0.1:{port}",
        "RAGTRACE_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
        "RAGTRACE_KAFKA_SASL_MECHANISM": "PLAIN",
        "RAGTRACE_KAFKA_SASL_USERNAME": "ragtrace",
        "RAGTRACE_KAFKA_SASL_PASSWORD": SECRET,
        "RAGTRACE_EXPORT_OTLP_ENDPOINT": f"http://otlp:{SECRET}@127.0.0.1:{port}",
        "RAGTRACE_HEALTH_STARTUP_WAIT_S": "0.3",
        "ANTHROPIC_API_KEY": SECRET,
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    yield port


def _run(
    argv: list[str], capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> str:
    caplog.clear()
    with caplog.at_level(logging.DEBUG):
        code = main(argv)
    out, err = capfd.readouterr()
    logged = "\n".join(
        r.getMessage() + (r.exc_text or "") for r in caplog.records
    )  # every record, DEBUG included
    text = f"{out}\n{err}\n{logged}"
    assert SECRET not in text, f"{argv} printed the planted secret:\n{text}"
    return f"exit {code}\n{text}"


@pytest.mark.parametrize("action", ["load", "list", "stats", "clear"])
def test_labels_with_redis_down(
    planted: int,
    action: str,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    args = [str(EXAMPLE_LABELS)] if action == "load" else []
    text = _run(["labels", action, *args], capfd, caplog)
    assert text.startswith("exit 3")
    assert f"redis://ragtrace:{MASK}@127.0.0.1:{planted}/0?password={MASK}" in text
    explicit = f"redis://u:{SECRET}@127.0.0.1:{planted}/0"
    text = _run(["labels", action, *args, "--redis", explicit], capfd, caplog)
    assert f"cannot use Redis at redis://u:{MASK}@127.0.0.1:{planted}/0" in text


def test_consume_startup_failure_and_config(
    planted: int, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    text = _run(["consume"], capfd, caplog)
    assert text.startswith("exit 3") and "Redis" in text and f"ragtrace:{MASK}@" in text
    text = _run(["--log-format", "json", "consume", "--log-level", "DEBUG"], capfd, caplog)
    assert text.startswith("exit 3")
    for argv in (["consume", "--print-config"], ["consume", "--print-config", "--json"]):
        text = _run(argv, capfd, caplog)
        assert text.startswith("exit 0") and "sasl_password" in text and MASK in text


def test_consume_config_error(
    planted: int,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("RAGTRACE_KAFKA_SECURITY_PROTOCOL", "PLAINTEXT")  # SASL keys now refused
    text = _run(["consume"], capfd, caplog)
    assert text.startswith("exit 2") and "kafka.sasl_mechanism" in text


def test_serve_print_config_and_inspect(
    planted: int,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    text = _run(["serve", "--print-config"], capfd, caplog)
    assert text.startswith("exit 0") and f"redis://ragtrace:{MASK}@" in text
    trace = tmp_path / "trace.json"
    trace.write_text('{"resourceSpans": []}\n', encoding="utf-8")
    _run(["inspect", str(trace)], capfd, caplog)
    _run(["inspect", str(tmp_path / "missing.json")], capfd, caplog)


def test_groundedness_with_a_rejected_key(
    planted: int,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    judge = ["groundedness", "--judge", "anthropic", "--answer", "It is 90 days."]
    judge += ["--context", "Leave is 90 days.", "--timeout", "2", "--budget", "4"]
    with FakeAnthropic(lambda request: error_reply(401, "authentication_error", "bad key")) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
        text = _run([*judge, "--json"], capfd, caplog)
        assert api.requests, "the judge never reached the API"
    assert not text.startswith("exit 0")
    unreachable = f"http://judge:{SECRET}@127.0.0.1:{planted}"
    text = _run(["--log-format", "json", *judge, "--base-url", unreachable], capfd, caplog)
    assert not text.startswith("exit 0")


def test_serve_banner_in_a_real_process(planted: int, tmp_path: Path) -> None:
    env = {**os.environ, "RAGTRACE_STATE": str(tmp_path / "state" / "s.sqlite3")}
    proc = subprocess.Popen(
        [sys.executable, "-c", _MAIN, "serve", "--port", "0", "--no-metrics"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert proc.stdout is not None
        banner = [proc.stdout.readline()]
        assert banner[0].startswith("ragtrace serve: receiving"), banner
        while not banner[-1].startswith("  results:") and banner[-1] and len(banner) < 20:
            banner.append(proc.stdout.readline())  # up to the line naming the OTLP endpoint
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    text = "".join(banner) + out + err
    assert SECRET not in text, text
    assert f"evaluation spans to http://otlp:{MASK}@127.0.0.1:{planted}" in text


def test_mask_url_and_free_text() -> None:
    assert mask_url("redis://u:p%40ss@h:6379/0") == f"redis://u:{MASK}@h:6379/0"
    assert mask_url("rediss://:pw@h/0?ssl=1&token=abc&Password=x") == (
        f"rediss://:{MASK}@h/0?ssl=1&token={MASK}&Password={MASK}"
    )
    assert mask_url("http://h:4318/v1/traces?api_key=k&limit=3") == (
        f"http://h:4318/v1/traces?api_key={MASK}&limit=3"
    )
    assert mask_url("http://h:4318") == "http://h:4318"
    line = "cannot reach amqp://a:b@c:1/x and https://u:v@w/?sig=zz; Authorization: Bearer abc.def"
    assert mask_secrets(line) == (
        f"cannot reach amqp://a:{MASK}@c:1/x and https://u:{MASK}@w/?sig={MASK}; "
        f"Authorization: Bearer {MASK}"
    )
    assert mask_secrets("no url here: host:port@ that") == "no url here: host:port@ that"


def test_a_logged_traceback_is_masked_in_json_logs(capfd: pytest.CaptureFixture[str]) -> None:
    from ragtrace.cli._logging import configure_logging
    from ragtrace.masking import install_log_masking

    install_log_masking()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        configure_logging("json", "INFO")
        try:
            raise ConnectionError(f"cannot reach redis://u:{SECRET}@db:6379/0")
        except ConnectionError:
            logging.getLogger("ragtrace.test").exception("store failed at %s", f"token={SECRET}")
    finally:
        for h in list(root.handlers):
            root.removeHandler(h)
        for h in handlers:
            root.addHandler(h)
        root.setLevel(level)
    err = capfd.readouterr().err
    assert SECRET not in err
    assert f"redis://u:{MASK}@db:6379/0" in err and f"token={MASK}" in err


def test_a_word_after_bearer_is_prose_not_a_credential() -> None:
    assert mask_secrets("set a bearer token (--token)") == "set a bearer token (--token)"
    assert (
        mask_secrets('WWW-Authenticate: Bearer realm="x"') == 'WWW-Authenticate: Bearer realm="x"'
    )
    for credential in ("abc.def", "s3cret", "eyJhbGciOi", "AbCdEf", "abcdefghijklmnopqrstu"):
        assert mask_secrets(f"Authorization: Bearer {credential}") == (
            f"Authorization: Bearer {MASK}"
        ), credential


def test_serve_beyond_loopback_advises_a_bearer_token_in_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["serve", "--host", "0.0.0.0", "--port", "0", "--state", str(tmp_path / "s.db")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "set a bearer token" in err, err
    assert MASK not in err, err
