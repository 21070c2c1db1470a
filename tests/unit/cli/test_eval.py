"""``ragtrace eval`` through ``ragtrace.cli.main``."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

import ragtrace.cli
from ragtrace.cli import main
from ragtrace.evaluation.retrieval import ENV_RECALL_DEFINITION
from tests.unit.cli.conftest import EVAL_LABELS, EVAL_VECTOR

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

VECTOR_TABLE = """\
5 labelled questions, 0 unanswerable (empty gold set, left out of the means)
recall definition: mean_recall    average gold-set size: 1.20

metric                   @3
--------------------  -----
recall (mean recall)  0.700
hit rate              0.800
precision             0.267
nDCG                  0.623

MRR: 0.667  (reciprocal rank of the first gold chunk, whole list)

95 % intervals over n=5 questions (bootstrap, wilson; docs/statistics.md):
  recall@3     0.700 [0.300, 1.000]
  hit_rate@3   0.800 [0.376, 0.964]
  precision@3  0.267 [0.133, 0.333]
  ndcg@3       0.623 [0.300, 0.923]
  mrr          0.667 [0.267, 1.000]
"""


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Only the commands under test: the others have their own tests.
    monkeypatch.setattr(
        ragtrace.cli, "_COMMAND_MODULES", ("ragtrace.cli.eval", "ragtrace.cli.compare")
    )
    monkeypatch.delenv(ENV_RECALL_DEFINITION, raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    monkeypatch.chdir(tmp_path)


def test_eval_run_file_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main([*EVAL_VECTOR, "--k", "3"])
    out, err = capsys.readouterr()
    assert (rc, out, err) == (0, VECTOR_TABLE, "")


def test_eval_writes_json_with_null_for_nan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        (EXAMPLES / "labels.jsonl").read_text()
        + '{"qid": "q6", "question": "What is the CEO\'s shoe size?", "gold": []}\n'
    )
    run = tmp_path / "run.jsonl"
    run.write_text(
        (EXAMPLES / "run_vector.jsonl").read_text() + '{"qid": "q6", "retrieved": ["d3"]}\n'
    )
    rc = main(
        [
            "eval",
            "--labels",
            str(labels),
            "--run",
            str(run),
            "--k",
            "3",
            "--k",
            "1",
            "--json-file",
            "out.json",
        ]
    )
    assert rc == 0
    text = (tmp_path / "out.json").read_text()
    assert "NaN" not in text
    doc = json.loads(text)
    assert doc["k"] == [1, 3]
    assert doc["unanswerable"] == 1
    assert doc["questions"] == 6
    assert doc["avg_gold_size"] == pytest.approx(1.2)
    assert doc["recall_definition"] == "mean_recall"
    assert doc["metrics"]["recall@3"] == pytest.approx(0.7)
    assert doc["metrics"]["mrr"] == pytest.approx(2 / 3)
    assert doc["per_question"]["q6"] == {
        "recall@1": None,
        "hit_rate@1": None,
        "precision@1": None,
        "ndcg@1": None,
        "recall@3": None,
        "hit_rate@3": None,
        "precision@3": None,
        "ndcg@3": None,
        "rr": None,
        "gold_size": 0,
    }
    out = capsys.readouterr().out
    assert "6 labelled questions, 1 unanswerable" in out
    assert "metric                   @1     @3" in out


def _row(table: str, label: str) -> list[str]:
    """The cells after ``label`` on the table line that starts with it."""
    (line,) = [ln for ln in table.splitlines() if ln.startswith(label + " ")]
    return line[len(label) :].split()


def test_recall_definition_flag_and_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*EVAL_VECTOR, "--k", "3"]
    assert main([*args, "--recall-definition", "hit_rate", "--json-file", "hit.json"]) == 0
    out = capsys.readouterr().out
    assert "recall definition: hit_rate" in out
    assert _row(out, "recall (hit rate)") == ["0.800"]
    assert json.loads(Path("hit.json").read_text())["recall_definition"] == "hit_rate"
    monkeypatch.setenv(ENV_RECALL_DEFINITION, "hit_rate")
    assert main(args) == 0
    assert _row(capsys.readouterr().out, "recall (hit rate)") == ["0.800"]
    assert main([*args, "--recall-definition", "mean_recall"]) == 0
    assert _row(capsys.readouterr().out, "recall (mean recall)") == ["0.700"]


def test_default_k_is_5(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["eval", "--labels", "examples/labels.jsonl", "--run", "examples/run_hybrid.jsonl"])
        == 0
    )
    assert "metric                   @5" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("run_text", "message"),
    [
        (
            '{"qid": "q1", "retrieved": ["d1"]}\n{"qid": "q42", "retrieved": []}\n',
            "line 2, field 'qid': unknown qid 'q42'",
        ),
        ('{"qid": "q1", "retrieved": "d1"}\n', "line 1, field 'retrieved': must be a list"),
        (
            '{"qid": "q1", "retrieved": ["d1"]}\n',
            "field 'qid': no entry for 4 labelled question(s)",
        ),
    ],
)
def test_bad_run_file_exits_2_naming_file_line_and_field(
    tmp_path: Path, run_text: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "bad_run.jsonl"
    run.write_text(run_text)
    previous = '{"untouched": true}\n'
    Path("out.json").write_text(previous)
    rc = main(
        ["eval", "--labels", "examples/labels.jsonl", "--run", str(run), "--json-file", "out.json"]
    )
    out, err = capsys.readouterr()
    assert rc == 2
    assert out == ""
    assert err == f"ragtrace eval: error: {run}, {message}" + err.split(message, 1)[1]
    assert Path("out.json").read_text() == previous  # nothing half-written


def test_bad_labels_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        '{"qid": "q1", "question": "x", "gold": ["a"]}\n{"qid": "q2", "question": "y"}\n'
    )
    rc = main(["eval", "--labels", str(labels), "--run", "examples/run_vector.jsonl"])
    assert rc == 2
    assert (
        capsys.readouterr().err
        == f"ragtrace eval: error: {labels}, line 2, field 'gold': missing\n"
    )
    assert main(["eval", "--labels", "nope.jsonl", "--run", "examples/run_vector.jsonl"]) == 2
    assert capsys.readouterr().err == "ragtrace eval: error: nope.jsonl: no such file\n"


def test_unwritable_json_path_exits_2_and_leaves_no_temp_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main([*EVAL_VECTOR, "--json-file", "missing-dir/out.json"])
    assert rc == 1  # the run succeeded; its output could not be written (docs/cli.md)
    assert "ragtrace eval: error: cannot write missing-dir/out.json" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["examples"]


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "--labels", "examples/labels.jsonl"],
        ["eval", "--labels", "l", "--run", "r", "--retriever", "m:f"],
        ["eval", "--labels", "examples/labels.jsonl", "--run", "r", "--k", "0"],
        [*EVAL_LABELS, "--run", "r", "--recall-definition", "recall"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert "usage: ragtrace eval" in capsys.readouterr().err


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["eval", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for text in (
        "--labels LABELS.jsonl",
        "--run RUN.jsonl",
        "--retriever MODULE:FUNCTION",
        "--recall-definition",
        "--json-file PATH",
        "hit_rate",
    ):
        assert text in out


RETRIEVERS = textwrap.dedent(
    """
    import asyncio

    RESULTS = {
        "How many days of annual leave does an employee get?": ["d1", "d3", "d2"],
        "How far in advance must a leave request be submitted?": ["d5", "d8", "d6"],
        "Can unused leave days be carried over to next year?": ["d2", "d6", "d9"],
        "Who approves a leave request?": ["d3", "d1", "d8"],
        "Is unused leave paid out on resignation?": ["d7", "d5", "d1"],
    }

    class Document:  # LangChain-like
        def __init__(self, chunk_id):
            self.page_content = "text of " + chunk_id
            self.metadata = {"id": chunk_id}

    def as_dicts(question):
        return [{"id": c, "text": "...", "score": 1.0 / (i + 1)} for i, c in enumerate(RESULTS[question])]

    def as_documents(question):
        return [Document(c) for c in RESULTS[question]]

    async def as_async(question):
        await asyncio.sleep(0)
        return list(RESULTS[question])

    class Index:
        @staticmethod
        def search(question):
            return iter(RESULTS[question])

    def raises(question):
        if "resignation" in question:
            raise RuntimeError("index offline")
        return RESULTS[question]

    def bad_items(question):
        return [object()]

    NOT_CALLABLE = 3
    """
)


@pytest.mark.parametrize("function", ["as_dicts", "as_documents", "as_async", "Index.search"])
def test_retriever_results_in_any_shape(
    tmp_path: Path, function: str, capsys: pytest.CaptureFixture[str]
) -> None:
    module = f"retrievers_{function.replace('.', '_')}"
    (tmp_path / f"{module}.py").write_text(RETRIEVERS)
    rc = main([*EVAL_LABELS, "--retriever", f"{module}:{function}", "--k", "3"])
    out, err = capsys.readouterr()
    assert (rc, out) == (0, VECTOR_TABLE)
    assert err == ""  # the progress bar draws only on a terminal


@pytest.mark.parametrize(
    ("spec", "code", "message"),
    [
        (
            "retrievers_err:bad_items",
            1,
            "cannot read the retriever's result for question 'q1': chunk 0: no ID found",
        ),
        ("retrievers_err:NOT_CALLABLE", 2, "'retrievers_err:NOT_CALLABLE' is not callable"),
        ("retrievers_err:missing", 2, "'retrievers_err' has no attribute 'missing'"),
        ("no_such_module_here:f", 2, "cannot import 'no_such_module_here'"),
        ("retrievers_err", 2, "--retriever must look like module:function"),
    ],
)
def test_retriever_failures(
    tmp_path: Path, spec: str, code: int, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "retrievers_err.py").write_text(RETRIEVERS)
    rc = main([*EVAL_LABELS, "--retriever", spec, "--json-file", "out.json"])
    err = capsys.readouterr().err
    assert rc == code
    assert err.startswith("ragtrace eval: error: ")
    assert message in err
    assert not (tmp_path / "out.json").exists()


def test_a_failing_question_is_recorded_and_the_rest_scored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The retriever raises on one question (q5): the others are still retrieved (concurrently)
    and scored, the failure is on stderr and in the JSON's errors, and the exit status is 1."""
    (tmp_path / "retrievers_err.py").write_text(RETRIEVERS)
    rc = main(
        [
            *EVAL_LABELS,
            "--retriever",
            "retrievers_err:raises",
            "--concurrency",
            "3",
            "--k",
            "3",
            "--json-file",
            "out.json",
        ]
    )
    out, err = capsys.readouterr()
    assert rc == 1
    assert err == (
        "ragtrace eval: error: the retriever raised on question 'q5': RuntimeError: index offline\n"
    )
    assert out.endswith("1 question(s) left out: retrieval failed (see the errors above)\n")
    doc = json.loads((tmp_path / "out.json").read_text())
    assert doc["errors"] == {
        "q5": "the retriever raised on question 'q5': RuntimeError: index offline"
    }
    assert "q5" not in doc["per_question"] and "q1" in doc["per_question"]


def test_json_without_a_path_goes_to_stdout_instead_of_the_text(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["eval", "--labels", "examples/labels.jsonl", "--run", "examples/run_vector.jsonl"]
    for json_args in (["--json"], ["--json"]):
        assert main([*argv, *json_args]) == 0
        out = capsys.readouterr().out
        assert json.loads(out)["metrics"]["recall@5"] is not None
    assert not Path("-").exists()
