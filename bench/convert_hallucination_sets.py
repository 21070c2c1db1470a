"""Convert public human-labelled hallucination sets to ragtrace's generic JSON Lines
(:mod:`ragtrace.evaluation.hallucination_sets`), sampled small and split deterministically.

Each converter reads a checkout of the upstream repository (``git clone`` it, or point at any
directory holding its files) and writes ``bench/data/hallucination/<set>.jsonl``:

* ``faithbench`` — vectara/FaithBench (NAACL 2025), ``data_for_release/batch_*.json``:
  news articles summarised by modern LLMs, spans marked by annotators. Hallucinated: any
  annotator labelled a span ``Unwanted`` (intrinsic or extrinsic); ``Questionable`` and
  ``Benign`` spans are not hallucinations. Spans: the ``Unwanted`` spans. Task: ``summary``.
  Licence: CC BY-NC-SA 4.0 — shipped.
* ``qags-cnndm`` / ``qags-xsum`` — W4ngatang/qags, ``data/mturk_{cnndm,xsum}.jsonl``: one
  model summary per article, three crowd votes per summary sentence ("is it supported by the
  article?"). A sentence is unsupported when most votes are "no"; the summary (its sentences
  joined by one space) is hallucinated when any sentence is; spans: the unsupported sentences.
  Task: ``summary``. The repository states no licence, so these files are **not** shipped:
  run this script on a checkout to add them locally.
* ``halueval-qa`` — RUCAIBox/HaluEval, ``generation/qa/qa_one-turn_data.json``: HotpotQA
  knowledge, a question, the right answer and a ChatGPT-generated hallucinated answer. The
  labels are by construction, not human judgements of a generated answer; both answers of a
  question are kept (same split). No spans. Task: ``qa-short``. Licence: MIT — shipped.

Sampling: items are ordered by SHA-256 of ``ragtrace-sample:<id>`` and the first ``--limit`` kept; the split is
:func:`ragtrace.evaluation.hallucination_sets.hash_split` of the id (for HaluEval, of the
question's id, so a question's two answers never straddle tune and test).

Run: ``python bench/convert_hallucination_sets.py faithbench PATH/TO/FaithBench``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ragtrace.evaluation.hallucination_sets import hash_split

OUT = ROOT / "bench" / "data" / "hallucination"
Row = dict[str, object]


def _key(item_id: str) -> bytes:
    # salted, so the sample is independent of the split (which hashes the bare id)
    return hashlib.sha256(f"ragtrace-sample:{item_id}".encode()).digest()


def _sample(rows: list[Row], limit: int) -> list[Row]:
    return sorted(rows, key=lambda r: _key(str(r["id"])))[:limit]


def _json_documents(text: str) -> Iterator[object]:
    decoder = json.JSONDecoder()
    i = 0
    while i < len(text):
        while i < len(text) and text[i].isspace():
            i += 1
        if i < len(text):
            doc, i = decoder.raw_decode(text, i)
            yield doc


def faithbench(src: Path) -> list[Row]:
    rows: list[Row] = []
    for path in sorted((src / "data_for_release").glob("batch_*.json")):
        batch = path.stem.removeprefix("batch_")
        for doc in _json_documents(path.read_text(encoding="utf-8")):
            assert isinstance(doc, dict)
            for sample in doc["samples"]:
                spans = sorted(
                    {
                        (a["summary_start"], a["summary_end"])
                        for a in sample["annotations"]
                        if any(str(label).startswith("Unwanted") for label in a["label"])
                        and a.get("summary_start") is not None
                    }
                )
                item_id = f"faithbench-{batch}-{sample['sample_id']}"
                summary = sample["summary"]
                spans = [(s, min(e, len(summary))) for s, e in spans if 0 <= s < len(summary)]
                rows.append(
                    {
                        "id": item_id,
                        "context": [sample["source"]],
                        "answer": summary,
                        "spans": [list(s) for s in spans],
                        "hallucinated": any(
                            str(label).startswith("Unwanted")
                            for a in sample["annotations"]
                            for label in a["label"]
                        ),
                        "task_type": "summary",
                        "split": hash_split(item_id),
                        "source": f"FaithBench batch {batch}, sample {sample['sample_id']}",
                    }
                )
    return rows


def qags(src: Path, which: str) -> list[Row]:
    rows: list[Row] = []
    path = src / "data" / f"mturk_{which}.jsonl"
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        doc = json.loads(line)
        answer = ""
        spans: list[list[int]] = []
        for sentence in doc["summary_sentences"]:
            text = sentence["sentence"].strip()
            if answer:
                answer += " "
            votes = [r["response"] for r in sentence["responses"]]
            if votes.count("no") > len(votes) / 2:
                spans.append([len(answer), len(answer) + len(text)])
            answer += text
        item_id = f"qags-{which}-{n}"
        rows.append(
            {
                "id": item_id,
                "context": [doc["article"]],
                "answer": answer,
                "spans": spans,
                "task_type": "summary",
                "split": hash_split(item_id),
                "source": f"QAGS mturk_{which}.jsonl line {n}",
            }
        )
    return rows


def halueval_qa(src: Path) -> list[Row]:
    questions: list[tuple[str, dict[str, str]]] = []
    path = src / "generation" / "qa" / "qa_one-turn_data.json"
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            questions.append((f"halueval-qa-{n}", json.loads(line)))
    rows: list[Row] = []
    for qid, q in questions:
        for kind, hallucinated in (("right_answer", False), ("hallucinated_answer", True)):
            rows.append(
                {
                    "id": f"{qid}-{'h' if hallucinated else 'r'}",
                    "question_id": qid,
                    "context": [q["knowledge"]],
                    "answer": q[kind],
                    "hallucinated": hallucinated,
                    "task_type": "qa-short",
                    "split": hash_split(qid),
                    "source": f"HaluEval qa_one-turn_data.json line {qid.rsplit('-', 1)[1]} "
                    f"({kind})",
                }
            )
    return rows


def _sample_pairs(rows: list[Row], limit: int) -> list[Row]:
    ids = sorted({str(r["question_id"]) for r in rows}, key=_key)[: limit // 2]
    keep = set(ids)
    return [r for r in rows if r["question_id"] in keep]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("set", choices=("faithbench", "qags-cnndm", "qags-xsum", "halueval-qa"))
    parser.add_argument("source", type=Path, help="checkout of the upstream repository")
    parser.add_argument("--limit", type=int, default=300, help="answers kept (default: 300)")
    args = parser.parse_args(argv)
    if args.set == "faithbench":
        rows = _sample(faithbench(args.source), args.limit)
    elif args.set.startswith("qags-"):
        rows = _sample(qags(args.source, args.set.removeprefix("qags-")), args.limit)
    else:
        rows = _sample_pairs(halueval_qa(args.source), args.limit)
    OUT.mkdir(parents=True, exist_ok=True)
    out = OUT / f"{args.set}.jsonl"
    out.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    positives = sum(bool(r.get("hallucinated", r.get("spans"))) for r in rows)
    tune = sum(r["split"] == "tune" for r in rows)
    print(f"{out.relative_to(ROOT)}: {len(rows)} answers, {positives} hallucinated, {tune} tune")
    return 0


if __name__ == "__main__":
    sys.exit(main())
