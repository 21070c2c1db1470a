"""The hallucination-set converters, each on a tiny inline sample in its upstream layout."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bench.convert_hallucination_sets import (
    _joined,
    begin,
    checkout,
    convert,
    faithbench_rest,
    lfqa,
    lfqa_claims,
    ragtruth,
    summedits,
)
from ragtrace.evaluation.hallucination_sets import hash_split, load_generic


def _put(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_joined_sentences_mark_the_unsupported_ones() -> None:
    answer, spans = _joined([(" First one.", False), ("Made up. ", True), ("Fine.", False)])
    assert answer == "First one. Made up. Fine."
    assert spans == [[11, 19]] and answer[11:19] == "Made up."


def test_ragtruth_from_faithjudge_eval_data(tmp_path: Path) -> None:
    source = {
        "source_id": 7,
        "source": {"question": "q?", "passages": "passage 1: Alpha beta.\npassage 2: Gamma."},
        "responses": [
            {"response": "Alpha beta.", "model": "m1", "labels": []},
            {
                "response": "Alpha delta.",
                "model": "m2",
                "labels": [{"start": 6, "end": 99, "label_type": "Evident Conflict"}],
            },
        ],
    }
    _put(tmp_path, "eval_data/ragtruth_qa.jsonl", json.dumps(source) + "\n")
    faithful, hallucinated = ragtruth(tmp_path, "qa")
    assert faithful["context"] == ["Alpha beta.", "Gamma."]
    assert (faithful["hallucinated"], faithful["spans"]) == (False, [])
    assert hallucinated["hallucinated"] is True
    assert hallucinated["spans"] == [[6, len("Alpha delta.")]]  # clipped to the answer
    assert faithful["split"] == hallucinated["split"] == hash_split("ragtruth-7")
    assert faithful["id"] != hallucinated["id"]
    assert "m2" in str(hallucinated["source"])


def test_ragtruth_data2txt_context_is_the_record_as_json(tmp_path: Path) -> None:
    source = {
        "source_id": "s",
        "source": {"name": "Cafe"},
        "responses": [{"response": "A cafe.", "model": "m", "labels": []}],
    }
    _put(tmp_path, "eval_data/ragtruth_data2txt.jsonl", json.dumps(source) + "\n")
    (row,) = ragtruth(tmp_path, "data2txt")
    assert row["context"] == ['{"name": "Cafe"}'] and row["task_type"] == "data2txt"


def test_summedits_label_zero_is_hallucinated_and_a_document_keeps_one_split(
    tmp_path: Path,
) -> None:
    docs = [
        {"id": "abc_og", "doc": "D.", "summary": "S.", "label": "1"},
        {"id": "abc_e1", "doc": "D.", "summary": "T.", "label": 0},
    ]
    _put(tmp_path, "data/summedits/summedits_news.json", json.dumps(docs))
    seed, edit = summedits(tmp_path)
    assert (seed["hallucinated"], edit["hallucinated"]) == (False, True)
    assert seed["split"] == edit["split"] == hash_split("summedits-news-abc")
    assert seed["id"] == "summedits-news-abc_og" and seed["context"] == ["D."]


def test_begin_maps_attribution_labels_and_leaves_generic_out(tmp_path: Path) -> None:
    header = "model_name\tdata_source\tknowledge\tmessage\tresponse\tbegin_label\n"
    lines = [
        "t5\twow\tK one.\tHi\tK one indeed.\tFully attributable\n",
        'gpt2\twow\tK one.\tHi\tSomething "else".\tNot fully attributable\n',
        "ctrl\twow\tK two.\tHo\tCool!\tGeneric\n",
    ]
    _put(tmp_path, "wow/begin_test_wow.tsv", header + "".join(lines))
    _put(tmp_path, "wow/begin_dev_wow.tsv", header)
    faithful, hallucinated = begin(tmp_path)
    assert (faithful["hallucinated"], hallucinated["hallucinated"]) == (False, True)
    assert hallucinated["answer"] == 'Something "else".'  # quotes kept as written
    assert faithful["context"] == ["K one."] and faithful["task_type"] == "dialogue"
    assert faithful["split"] == hallucinated["split"]  # same turn, same half
    assert faithful["id"] == "begin-wow-test-2"


def test_lfqa_majority_of_judges_and_the_documents_the_answer_was_written_with(
    tmp_path: Path,
) -> None:
    def docs(kind: str) -> str:
        return json.dumps(
            [{"question_id": 3, "docs": [{"title": f"{kind} page", "text": "Body."}]}]
        )

    _put(tmp_path, "data/docs/docs-webgpt.json", docs("webgpt"))
    _put(tmp_path, "data/docs/docs-human.json", docs("human"))
    question = {
        "question_id": 3,
        "annotations": [
            {"answer": " Kept.", "labels": ["supported", "supported", "not_supported"]},
            {"answer": "Split vote.", "labels": ["supported", "partially", "not_supported"]},
        ],
    }
    for name in ("webgpt", "gpt3_wdoc", "alpaca_wdoc", "gpt3_whudoc"):
        _put(tmp_path, f"data/annotations/annotations-{name}.json", json.dumps([question]))
    rows = {r["id"]: r for r in lfqa(tmp_path)}
    assert set(rows) == {
        f"lfqa-{n}-3" for n in ("webgpt", "gpt3_wdoc", "alpaca_wdoc", "gpt3_whudoc")
    }
    row = rows["lfqa-webgpt-3"]
    assert row["answer"] == "Kept. Split vote." and row["spans"] == [[6, 17]]
    assert row["context"] == ["webgpt page\nBody."]
    assert rows["lfqa-gpt3_whudoc-3"]["context"] == ["human page\nBody."]
    assert {r["split"] for r in rows.values()} == {hash_split("lfqa-3")}


def test_lfqa_claims_are_the_test_half_sentences_once_each(tmp_path: Path) -> None:
    docs = [{"question_id": q, "docs": [{"title": "T", "text": "B."}]} for q in range(12)]
    _put(tmp_path, "data/docs/docs-webgpt.json", json.dumps(docs))
    _put(tmp_path, "data/docs/docs-human.json", json.dumps(docs))
    sentences = [
        {"answer": "Yes.", "labels": ["supported", "supported", "partially"]},
        {"answer": "9.", "labels": ["not_supported"] * 3},
        {"answer": "9.", "labels": ["not_supported"] * 3},
    ]
    questions = [{"question_id": q, "annotations": sentences} for q in range(12)]
    for name in ("webgpt", "gpt3_wdoc", "alpaca_wdoc", "gpt3_whudoc"):
        _put(tmp_path, f"data/annotations/annotations-{name}.json", json.dumps(questions))
    claims = lfqa_claims(tmp_path, 48)
    test_answers = {r["id"] for r in lfqa(tmp_path) if r["split"] == "test"}
    assert 0 < len(test_answers) < 48
    assert len(claims) == 2 * len(test_answers)  # the repeated "9." kept once
    first, second = claims[0], claims[1]
    second_id = str(second["id"])
    assert first["id"] == f"{second_id[:-3]}-s1" and second_id.endswith("-s2")
    assert (first["claim"], first["human_entailed"]) == ("Yes.", True)
    assert (second["claim"], second["human_entailed"]) == ("9.", False)
    assert first["answer"] == "Yes. 9. 9." and first["context"] == ["T\nB."]


def _faithbench(root: Path, ids: list[int]) -> None:
    samples = [
        {
            "sample_id": i,
            "source": "Src.",
            "summary": "Sum.",
            "annotations": [{"label": ["Unwanted.Intrinsic"], "summary_start": 0, "summary_end": 3}]
            if i % 2
            else [],
        }
        for i in ids
    ]
    _put(root, "data_for_release/batch_1.json", json.dumps({"samples": samples}))


def test_faithbench_rest_leaves_out_the_shipped_sample(tmp_path: Path) -> None:
    _faithbench(tmp_path, [1, 2, 3])
    shipped = tmp_path / "shipped.jsonl"
    shipped.write_text(json.dumps({"id": "faithbench-1-2"}) + "\n", encoding="utf-8")
    rest = faithbench_rest(tmp_path, shipped)
    assert [r["id"] for r in rest] == ["faithbench-1-1", "faithbench-1-3"]
    assert all(r["hallucinated"] for r in rest)


def test_convert_samples_the_same_answers_whatever_the_input_order(tmp_path: Path) -> None:
    _faithbench(tmp_path, list(range(10)))
    first = [r["id"] for r in convert("faithbench", tmp_path, 4)]
    _faithbench(tmp_path, list(reversed(range(10))))
    assert [r["id"] for r in convert("faithbench", tmp_path, 4)] == first and len(first) == 4
    with pytest.raises(ValueError, match="unknown set"):
        convert("nope", tmp_path, 4)


def test_written_rows_load_as_generic_json_lines(tmp_path: Path) -> None:
    _faithbench(tmp_path, list(range(4)))
    path = tmp_path / "out.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in convert("faithbench", tmp_path, 9)))
    items = load_generic(path)
    assert len(items) == 4 and sum(it.hallucinated for it in items) == 2


def test_checkout_reads_a_bare_repository_at_head(tmp_path: Path) -> None:
    work = tmp_path / "work"
    _put(work, "eval_data/a.jsonl", "one\n")
    _put(work, "other/b.txt", "two\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", str(work)], check=True)
    subprocess.run([*git, "-C", str(work), "add", "."], check=True)
    subprocess.run([*git, "-C", str(work), "commit", "-qm", "x"], check=True)
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    with checkout(bare, "eval_data") as tree:
        assert (tree / "eval_data" / "a.jsonl").read_text() == "one\n"
        assert not (tree / "other").exists()
    with checkout(work, "eval_data") as tree:
        assert tree == work
