"""Convert public human-labelled hallucination sets to ragtrace's generic JSON Lines
(:mod:`ragtrace.evaluation.hallucination_sets`), sampled small and split deterministically.

Each converter reads the upstream repository — a checkout (``git clone`` it, or any directory
holding its files) or a bare git repository, read at ``HEAD`` (files absent from it are
skipped) — and writes ``bench/data/hallucination/<set>.jsonl``:

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
* ``faithbench-rest`` — the FaithBench summaries not in ``faithbench.jsonl`` (same rules), so
  a set can be reported that no earlier tuning saw. Licence: CC BY-NC-SA 4.0 — shipped.
* ``ragtruth-qa`` / ``ragtruth-summary`` / ``ragtruth-data2txt`` — RAGTruth (Niu et al., ACL
  2024) as sampled by vectara/FaithJudge, ``eval_data/ragtruth_{qa,summary,data2txt}.jsonl``:
  one source with several models' responses and their human spans. Every span is a
  hallucination; the context as :func:`~ragtrace.evaluation.hallucination_sets.ragtruth_context`
  builds it. Split by source, so a source's responses share a half. Tasks ``qa``, ``summary``,
  ``data2txt``. Licence: RAGTruth's MIT — shipped.
* ``summedits`` — salesforce/factualNLG, ``data/summedits/summedits_<domain>.json`` (the
  domains present): a seed summary and edits of it, each labelled consistent or not by people.
  Hallucinated: label 0. No spans. Split by document (the id before ``_``), so a seed and its
  edits share a half. Task ``summary``. Licence: Apache-2.0 — shipped.
* ``begin`` — google/BEGIN-dataset, ``wow/begin_{dev,test}_wow.tsv`` (Wizard of Wikipedia):
  a dialogue model's response and the knowledge snippet it should be grounded in. Hallucinated:
  ``Not fully attributable``; ``Fully attributable`` is faithful; ``Generic`` responses (no
  claim to attribute) are left out. Split by knowledge snippet and message. Task ``dialogue``.
  Licence: CC BY 4.0 — shipped.
* ``lfqa`` — timchen0618/LFQA-Verification (Chen et al., 2023, "Understanding Retrieval
  Augmentation for Long-Form Question Answering"), ``data/annotations/annotations-*.json``
  for the four answer sources written with documents in the prompt (WebGPT, GPT-3 and Alpaca
  with WebGPT's documents, GPT-3 with the human demonstrators' documents): three people judged
  each answer sentence supported, partially supported or not by those documents. A sentence is
  unsupported unless most of its judges said ``supported``; the answer (its sentences joined by
  one space) is hallucinated when any sentence is; spans: the unsupported sentences. Split by
  question. Task ``qa``. The repository states no licence — **not** shipped.
* ``lfqa-claims`` — the sentences of the test-half answers of the ``lfqa`` sample, one claim
  per line in ``ragtrace calibrate``'s labels format (``human_entailed``: most judges said
  ``supported``), written to ``claims/lfqa.jsonl``. Not shipped, as ``lfqa``.

Sampling: items are ordered by SHA-256 of ``ragtrace-sample:<id>`` and the first ``--limit`` kept; the split is
:func:`ragtrace.evaluation.hallucination_sets.hash_split` of the id (for HaluEval, of the
question's id, so a question's two answers never straddle tune and test).

Run: ``python bench/convert_hallucination_sets.py SET PATH/TO/CHECKOUT`` (``--out`` for another
directory); ``faithbench`` and ``faithbench-rest`` take vectara/FaithBench, the three
``ragtruth-*`` sets vectara/FaithJudge.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import hashlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ragtrace.evaluation.hallucination_sets import hash_split, ragtruth_context

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


def _joined(sentences: list[tuple[str, bool]]) -> tuple[str, list[list[int]]]:
    """Sentences joined by one space, and the spans of those marked unsupported."""
    answer = ""
    spans: list[list[int]] = []
    for text, unsupported in sentences:
        text = text.strip()
        if answer:
            answer += " "
        if unsupported:
            spans.append([len(answer), len(answer) + len(text)])
        answer += text
    return answer, spans


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
        answer, spans = _joined(
            [
                (
                    sentence["sentence"],
                    [r["response"] for r in sentence["responses"]].count("no")
                    > len(sentence["responses"]) / 2,
                )
                for sentence in doc["summary_sentences"]
            ]
        )
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


def faithbench_rest(src: Path, shipped: Path) -> list[Row]:
    """The FaithBench summaries whose ids are not in ``shipped`` (the committed sample)."""
    seen = {json.loads(line)["id"] for line in shipped.read_text(encoding="utf-8").splitlines()}
    return [r for r in faithbench(src) if r["id"] not in seen]


RAGTRUTH_TASKS = {"qa": "QA", "summary": "Summary", "data2txt": "Data2txt"}


def ragtruth(src: Path, task: str) -> list[Row]:
    """RAGTruth responses of one task from FaithJudge's ``eval_data`` (a source per line, its
    responses with their human spans)."""
    path = src / "eval_data" / f"ragtruth_{task}.jsonl"
    rows: list[Row] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        doc = json.loads(line)
        source_id = str(doc["source_id"])
        context = list(ragtruth_context(RAGTRUTH_TASKS[task], doc["source"]))
        for k, response in enumerate(doc["responses"]):
            answer = response["response"]
            spans = sorted(
                {
                    (max(0, lab["start"]), min(lab["end"], len(answer)))
                    for lab in response["labels"]
                    if lab["start"] < len(answer)
                }
            )
            rows.append(
                {
                    "id": f"ragtruth-{task}-{source_id}-{k}",
                    "context": context,
                    "answer": answer,
                    "spans": [list(sp) for sp in spans],
                    "hallucinated": bool(response["labels"]),
                    "task_type": task,
                    "split": hash_split(f"ragtruth-{source_id}"),
                    "source": f"RAGTruth source {source_id}, {response['model']} "
                    f"(FaithJudge eval_data/ragtruth_{task}.jsonl)",
                }
            )
    return rows


def summedits(src: Path) -> list[Row]:
    """Every SummEdits domain file present; label 0 (inconsistent) is hallucinated."""
    rows: list[Row] = []
    for path in sorted((src / "data" / "summedits").glob("summedits_*.json")):
        domain = path.stem.removeprefix("summedits_")
        for doc in json.loads(path.read_text(encoding="utf-8")):
            document = str(doc["id"]).split("_")[0]
            rows.append(
                {
                    "id": f"summedits-{domain}-{doc['id']}",
                    "context": [doc["doc"]],
                    "answer": doc["summary"],
                    "hallucinated": int(doc["label"]) == 0,
                    "task_type": "summary",
                    "split": hash_split(f"summedits-{domain}-{document}"),
                    "source": f"SummEdits {domain}, id {doc['id']}",
                }
            )
    return rows


BEGIN_LABELS = {"Fully attributable": False, "Not fully attributable": True}


def begin(src: Path) -> list[Row]:
    """BEGIN's Wizard of Wikipedia responses; ``Generic`` ones are left out."""
    rows: list[Row] = []
    for part in ("dev", "test"):
        path = src / "wow" / f"begin_{part}_wow.tsv"
        with path.open(encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
            for n, rec in enumerate(reader, start=2):
                label = BEGIN_LABELS.get(rec["begin_label"].strip())
                if label is None:
                    continue
                turn = hashlib.sha256(f"{rec['knowledge']}\n{rec['message']}".encode()).hexdigest()
                rows.append(
                    {
                        "id": f"begin-wow-{part}-{n}",
                        "context": [rec["knowledge"]],
                        "answer": rec["response"],
                        "hallucinated": label,
                        "task_type": "dialogue",
                        "split": hash_split(f"begin-{turn[:16]}"),
                        "source": f"BEGIN wow/begin_{part}_wow.tsv line {n} ({rec['model_name']})",
                    }
                )
    return rows


# annotation file -> the documents its answers were written with (and judged against)
LFQA_SOURCES = {
    "webgpt": "webgpt",
    "gpt3_wdoc": "webgpt",
    "alpaca_wdoc": "webgpt",
    "gpt3_whudoc": "human",
}


@dataclass(frozen=True)
class _LfqaAnswer:
    name: str
    question_id: int
    documents: str
    context: list[str]
    sentences: list[tuple[str, bool]]  # (sentence, unsupported)

    @property
    def id(self) -> str:
        return f"lfqa-{self.name}-{self.question_id}"

    @property
    def split(self) -> str:
        return hash_split(f"lfqa-{self.question_id}")


def _lfqa_answers(src: Path) -> Iterator[_LfqaAnswer]:
    data = src / "data"
    for name, docs_name in LFQA_SOURCES.items():
        docs = {
            d["question_id"]: [f"{x['title']}\n{x['text']}" for x in d["docs"]]
            for d in json.loads((data / "docs" / f"docs-{docs_name}.json").read_text("utf-8"))
        }
        path = data / "annotations" / f"annotations-{name}.json"
        for q in json.loads(path.read_text(encoding="utf-8")):
            sentences = [
                (a["answer"].strip(), a["labels"].count("supported") <= len(a["labels"]) / 2)
                for a in q["annotations"]
            ]
            qid = q["question_id"]
            yield _LfqaAnswer(name, qid, docs_name, docs[qid], sentences)


def lfqa(src: Path) -> list[Row]:
    """LFQA-Verification answers written with documents; a sentence is unsupported unless most
    of its judges said ``supported``."""
    rows: list[Row] = []
    for a in _lfqa_answers(src):
        answer, spans = _joined(a.sentences)
        rows.append(
            {
                "id": a.id,
                "context": a.context,
                "answer": answer,
                "spans": spans,
                "task_type": "qa",
                "split": a.split,
                "source": f"LFQA-Verification annotations-{a.name}.json question "
                f"{a.question_id} (documents: docs-{a.documents}.json)",
            }
        )
    return rows


def lfqa_claims(src: Path, limit: int) -> list[Row]:
    """The sentences of the test-half answers of the ``lfqa`` sample (``limit`` answers), one
    claim per line in ``ragtrace calibrate``'s labels format: ``human_entailed`` when most of
    its judges said ``supported``; a sentence repeated within an answer is kept once."""
    keep = {str(r["id"]) for r in _sample(lfqa(src), limit) if r["split"] == "test"}
    rows: list[Row] = []
    for a in _lfqa_answers(src):
        if a.id not in keep:
            continue
        answer, _ = _joined(a.sentences)
        seen: set[str] = set()
        for n, (sentence, unsupported) in enumerate(a.sentences, start=1):
            if sentence in seen:  # a repeated sentence is one claim (a judge merges them)
                continue
            seen.add(sentence)
            rows.append(
                {
                    "id": f"{a.id}-s{n}",
                    "claim": sentence,
                    "context": a.context,
                    "human_entailed": not unsupported,
                    "answer": answer,
                }
            )
    return rows


def _sample_pairs(rows: list[Row], limit: int) -> list[Row]:
    ids = sorted({str(r["question_id"]) for r in rows}, key=_key)[: limit // 2]
    keep = set(ids)
    return [r for r in rows if r["question_id"] in keep]


# the folders of its upstream repository each set reads
FOLDERS = {
    "faithbench": "data_for_release",
    "faithbench-rest": "data_for_release",
    "qags-cnndm": "data",
    "qags-xsum": "data",
    "halueval-qa": "generation/qa",
    "ragtruth-qa": "eval_data",
    "ragtruth-summary": "eval_data",
    "ragtruth-data2txt": "eval_data",
    "summedits": "data/summedits",
    "begin": "wow",
    "lfqa": "data",
    "lfqa-claims": "data",
}


@contextlib.contextmanager
def checkout(src: Path, folder: str) -> Iterator[Path]:
    """``src`` itself when it is a directory of files; for a bare git repository, a temporary
    directory holding ``folder`` as of ``HEAD`` (blobs the repository lacks are left out)."""
    if not ((src / "HEAD").is_file() and (src / "objects").is_dir()):
        yield src
        return
    git = ["git", "--git-dir", str(src)]
    names = subprocess.run(
        [*git, "ls-tree", "-r", "-z", "--name-only", "HEAD", "--", folder],
        check=True,
        capture_output=True,
    ).stdout.decode()
    with tempfile.TemporaryDirectory(prefix="ragtrace-upstream-") as tmp:
        for name in filter(None, names.split("\0")):
            blob = subprocess.run([*git, "show", f"HEAD:{name}"], capture_output=True)
            if blob.returncode == 0:
                target = Path(tmp) / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(blob.stdout)
        yield Path(tmp)


SETS = tuple(FOLDERS)


def convert(name: str, src: Path, limit: int, out: Path = OUT) -> list[Row]:
    """The sampled rows of set ``name`` from the checkout ``src``."""
    if name == "halueval-qa":
        return _sample_pairs(halueval_qa(src), limit)
    if name == "lfqa-claims":
        return lfqa_claims(src, limit)
    if name == "faithbench":
        rows = faithbench(src)
    elif name == "faithbench-rest":
        rows = faithbench_rest(src, out / "faithbench.jsonl")
    elif name.startswith("qags-"):
        rows = qags(src, name.removeprefix("qags-"))
    elif name.startswith("ragtruth-"):
        rows = ragtruth(src, name.removeprefix("ragtruth-"))
    elif name == "summedits":
        rows = summedits(src)
    elif name == "begin":
        rows = begin(src)
    elif name == "lfqa":
        rows = lfqa(src)
    else:
        raise ValueError(f"unknown set {name!r}")
    return _sample(rows, limit)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("set", choices=SETS)
    parser.add_argument(
        "source", type=Path, help="the upstream repository: a checkout or a bare git directory"
    )
    parser.add_argument("--limit", type=int, default=300, help="answers kept (default: 300)")
    parser.add_argument("--out", type=Path, default=OUT, help="directory written to")
    args = parser.parse_args(argv)
    with checkout(args.source, FOLDERS[args.set]) as src:
        rows = convert(args.set, src, args.limit, args.out)
    # claims are not answers: kept out of the benchmark's glob of answer sets
    out = args.out / ("claims/lfqa.jsonl" if args.set == "lfqa-claims" else f"{args.set}.jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    if args.set == "lfqa-claims":
        entailed = sum(bool(r["human_entailed"]) for r in rows)
        print(f"{out}: {len(rows)} claims, {entailed} entailed by the people's majority")
        return 0
    positives = sum(bool(r.get("hallucinated", r.get("spans"))) for r in rows)
    tune = sum(r["split"] == "tune" for r in rows)
    print(f"{out}: {len(rows)} answers, {positives} hallucinated, {tune} tune")
    return 0


if __name__ == "__main__":
    sys.exit(main())
