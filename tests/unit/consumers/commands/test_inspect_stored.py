"""``ragtrace inspect --state FILE --trace ID``: a trace read from serve's state file by any
unique prefix of its ID — its spans while they are held, what was kept once it is scored — an
ambiguous prefix refused with its matches, and a file that is no state file refused (exit 2)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from ragtrace.cli import main
from ragtrace.cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK
from ragtrace_consumers.commands.inspect_stored import SPANS_GONE
from ragtrace_consumers.intake.decode import decode_request
from ragtrace_consumers.stores.scored_results import ScoredResult
from ragtrace_consumers.stores.sqlite_state import SqliteState
from ragtrace_consumers.stores.sqlite_traces import SqliteTraceStore
from tests.unit.consumers.commands.test_inspect import _request

SCORED = "ab12" + "0" * 28
TWIN = "ab34" + "0" * 28


@pytest.fixture
def state(tmp_path: Path) -> Path:
    folder = tmp_path / "state"
    folder.mkdir(mode=0o700)
    path = folder / "serve.sqlite3"
    with SqliteState(path) as s:
        for trace_id, query in ((SCORED, "How long are logs kept?"), (TWIN, "Other?")):
            s.results.put(
                ScoredResult(
                    trace_id=trace_id,
                    scored_at=0.0,
                    service="svc",
                    cell="generation_failed",
                    query=query,
                    k=3,
                    recall=1.0,
                    groundedness=0.5,
                    unsupported_claims=("Logs are kept forever.",),
                    judge_name="lexical",
                    answer="Logs are kept forever.",
                ),
                {"retrieved": [{"id": "c-1"}, {"id": "c-2"}], "context": [], "gold": ["c-1"]},
            )
    return path


def test_a_scored_trace_by_prefix_shows_what_the_file_kept(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", "--state", str(state), "--trace", "AB1"]) == EXIT_OK
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"trace {SCORED}",
        "  scored 1970-01-01 00:00:00 UTC:",
        f"  {SPANS_GONE}",
        "      service: 'svc'",
        "      query: 'How long are logs kept?'",
        "      answer: 'Logs are kept forever.'",
        "      retrieved (ranked): c-1, c-2",
        "      context: none",
        "      gold: c-1",
        "      recall@3=1.00  groundedness=0.50  cell=generation_failed  judge=lexical",
        '      not supported: "Logs are kept forever."',
    ]


def test_the_json_reading_carries_the_scored_result_and_detail(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", "--state", str(state), "--trace", SCORED, "--json"]) == EXIT_OK
    (doc,) = json.loads(capsys.readouterr().out)
    assert (doc["trace_id"], doc["spans"], doc["spans_kept"]) == (SCORED, [], False)
    assert doc["scored"]["query"] == "How long are logs kept?"
    assert doc["detail"]["gold"] == ["c-1"]


def test_an_ambiguous_prefix_lists_its_matches(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", "--state", str(state), "--trace", "ab"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert f"--trace ab is ambiguous in {state}: it starts {SCORED}, {TWIN}" in err


@pytest.mark.parametrize(
    ("prefix", "message"),
    [("ff", "no trace with that ID prefix"), ("xyz", "is not a prefix of one")],
)
def test_a_prefix_naming_no_trace_is_refused(
    state: Path, capsys: pytest.CaptureFixture[str], prefix: str, message: str
) -> None:
    assert main(["inspect", "--state", str(state), "--trace", prefix]) == EXIT_BAD_INPUT
    assert message in capsys.readouterr().err


def test_spans_still_held_are_read_by_the_readers(
    state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, trace_id = _request(tmp_path, as_json=False)
    spans = decode_request(path.read_bytes())
    store = SqliteTraceStore(state)
    store.append(spans, {trace_id: time.time() + 3600}, {trace_id})
    store.close()
    assert main(["inspect", "--state", str(state), "--trace", trace_id[:12]]) == EXIT_OK
    out = capsys.readouterr().out
    assert f"trace {trace_id}" in out
    assert "-> openinference" in out and "lc-01" in out
    assert "not scored yet: the state file holds its spans" in out


def test_a_file_that_is_no_state_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"qid": "q", "question": "?", "gold": []}\n')
    assert main(["inspect", "--state", str(labels), "--trace", "ab"]) == EXIT_BAD_INPUT
    assert "not a state file (not a SQLite database" in capsys.readouterr().err
    assert labels.read_text().startswith('{"qid"')  # never turned into a database


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["inspect"], "one of the arguments PATH --state is required"),
        (["inspect", "x.json", "--state", "s"], "argument --state: not allowed with argument PATH"),
        (["inspect", "--state", "s"], "--state needs --trace ID"),
    ],
)
def test_the_input_is_a_path_or_a_state_trace(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith("usage: ragtrace inspect") and message in err, err
