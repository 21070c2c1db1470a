"""Judge quality against people: hallucination detection on public human-labelled sets.

For every set in ``bench/data/hallucination/*.jsonl`` (see its README for sources, licences and
sampling), three detectors score every answer:

* the judge (default ``lexical``; ``--judge anthropic --yes`` for Claude), run through the real
  ``ragtrace detect-eval`` command, flagging an answer whose groundedness is below the four
  cells' pass threshold (0.8);
* *flag every answer* (every answer hallucinated);
* *unigram overlap*: the share of the answer's distinct lowercase words found anywhere in the
  context — the one-line baseline.

Reported, on the **test** half of each set only: AUROC (threshold-free; flag-every-answer
scores 0.5 by construction; the judge's answers ranked by ``ranking_score``: mean claim
support and word overlap in equal parts), F1 at the default threshold (the judge's 0.8; flagging every
answer has no threshold), and F1 at the threshold that maximised F1 on the **tune** half.
Groups: each set; ``summaries`` and ``overall`` pool the sets' answers (thresholds tuned on the
pooled tune halves).

Then the run-time goal: a 1,000-answer RAGTruth-format directory (built from the shipped
answers) judged by the offline judge through the ``ragtrace`` console script (process start
included), and resumed after ``kill -9``: the second run judges exactly the answers the first
had not finished.

Run: ``python bench/bench_judge_quality.py [--judge lexical]``; writes the ``judge-quality``
section of docs/groundedness.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._report import machine_line, write_section
from ragtrace.cli import main as ragtrace_main
from ragtrace.cli._detect_results import judged, read_results
from ragtrace.evaluation.detection import auroc, best_threshold, confusion_at
from ragtrace.evaluation.hallucination_sets import LabelledAnswer, load_generic
from ragtrace.evaluation.judges import make_judge

DATA = ROOT / "bench" / "data" / "hallucination"
DOC = ROOT / "docs" / "groundedness.md"
DEFAULT_THRESHOLD = 0.8
_WORD = re.compile(r"\w+")

# Response-level F1 on RAGTruth's test set, as published (not measured by us): the RAGTruth
# paper's (Niu et al., ACL 2024) rows, and LettuceDetect's as reported by its authors.
PAPER_ROWS = (
    ("prompted GPT-3.5-turbo", "RAGTruth paper", "52.9"),
    ("prompted GPT-4", "RAGTruth paper", "63.4"),
    ("SelfCheckGPT", "RAGTruth paper", "58.8"),
    ("fine-tuned Llama-2-13B", "RAGTruth paper", "78.7"),
    ("LettuceDetect-large (ModernBERT token classifier)", "Kovács et al., 2025", "79.2"),
)


def unigram_overlap(answer: str, context: Sequence[str]) -> float:
    """Distinct lowercase answer words found in the context / distinct answer words."""
    words = set(_WORD.findall(answer.lower()))
    if not words:
        return 1.0
    source = set(_WORD.findall(" ".join(context).lower()))
    return len(words & source) / len(words)


def judge_scores(
    path: Path, judge_args: list[str], work: Path
) -> tuple[dict[str, float], dict[str, float]]:
    """(id -> groundedness, id -> ranking key), from the real ``detect-eval`` command (answers it
    failed on left out). The ranking key is the mean claim support stored in each result and the
    answer's word overlap with the context in equal parts
    (:func:`ragtrace.evaluation.judges.lexical.judge.ranking_score`); a judge whose results carry no
    support is ranked by groundedness alone."""
    results = work / f"{path.stem}.results.jsonl"
    argv = ["detect-eval", "--input", str(path), "--results", str(results), *judge_args]
    code = ragtrace_main([*argv, "--json-file", str(work / f"{path.stem}.report.json")])
    if code not in (0, 3):
        raise SystemExit(f"detect-eval failed on {path.name} (exit {code})")
    judge = make_judge(judge_args[judge_args.index("--judge") + 1])
    items = {it.id: it for it in load_generic(path)}
    scores, ranked = {}, {}
    for item_id, record in read_results(results, judge.info).items():
        it = items[item_id]
        j = judged(it.answer, record, it.context)
        if j is not None:
            scores[item_id] = j.score
            ranked[item_id] = j.key
    return scores, ranked


def _f1(x: float) -> str:
    return "n/a" if x != x else f"{x * 100:.1f}"


def _row(
    items: Sequence[LabelledAnswer],
    scores: dict[str, float],
    default: float | None,
    flagged_by: dict[str, float] | None = None,
) -> tuple[str, str, str]:
    """AUROC and tuned F1 of ``scores``; F1 at ``default`` of ``flagged_by`` (else ``scores``)."""
    tune = [it for it in items if it.split == "tune" and it.id in scores]
    test = [it for it in items if it.split == "test" and it.id in scores]
    ts = [scores[it.id] for it in test]
    tl = [it.hallucinated for it in test]
    tuned = best_threshold([scores[it.id] for it in tune], [it.hallucinated for it in tune])
    fs = ts if flagged_by is None else [flagged_by[it.id] for it in test]
    at_default = "n/a" if default is None else _f1(confusion_at(fs, tl, default).f1)
    at_tuned = "n/a" if tuned is None else _f1(confusion_at(ts, tl, tuned.value).f1)
    return f"{auroc(ts, tl):.3f}", at_default, at_tuned


def quality_table(judge_args: list[str], judge_name: str) -> tuple[str, list[str]]:
    sets = sorted(DATA.glob("*.jsonl"))
    loaded = {p.stem: load_generic(p) for p in sets}
    judge: dict[str, float] = {}
    ranked: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="ragtrace-judge-quality-") as tmp:
        for p in sets:
            g, r = judge_scores(p, judge_args, Path(tmp))
            judge.update({f"{p.stem}/{k}": v for k, v in g.items()})
            ranked.update({f"{p.stem}/{k}": v for k, v in r.items()})
    # ids prefixed with their set, so pooled groups never mix two sets' answers up
    keyed = {
        name: [replace(it, id=f"{name}/{it.id}") for it in items] for name, items in loaded.items()
    }
    overlap = {it.id: unigram_overlap(it.answer, it.context) for v in keyed.values() for it in v}
    groups: list[tuple[str, list[str]]] = [(name, [name]) for name in loaded]
    summaries = [n for n, items in loaded.items() if items[0].task_type == "summary"]
    groups += [("summaries (pooled)", summaries), ("overall (pooled)", list(loaded))]
    auroc_wins: list[str] = []
    f1_holds: list[str] = []
    lines = [
        "| set | test answers | hallucinated | detector | AUROC | F1 at default threshold "
        "| F1 at tuned threshold |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, names in groups:
        items = [it for n in names for it in keyed[n]]
        test = [it.hallucinated for it in items if it.split == "test"]
        flag_all = _f1(confusion_at([0.0] * len(test), test, 1.0).f1)
        rows = [
            (
                f"{judge_name} judge, pass >= {DEFAULT_THRESHOLD:g}",
                _row(items, ranked, DEFAULT_THRESHOLD, judge),
            ),
            ("flag every answer", ("0.500", flag_all, flag_all)),
            ("unigram overlap", _row(items, overlap, None)),
        ]
        for i, (detector, (a, d, t)) in enumerate(rows):
            where = f"{label} | {len(test)} | {sum(test)}" if i == 0 else " | | "
            lines.append(f"| {where} | {detector} | {a} | {d} | {t} |")
        if len(names) == 1:
            if float(rows[0][1][0]) > float(rows[2][1][0]):
                auroc_wins.append(label)
            if float(rows[0][1][1]) >= float(flag_all):
                f1_holds.append(label)
    lines += [
        "",
        f"Sets where the {judge_name} judge's AUROC is above unigram overlap: "
        f"{len(auroc_wins)} of {len(loaded)} ({', '.join(auroc_wins) or 'none'}); where its F1 "
        f"at the default threshold is at least that of flagging every answer: {len(f1_holds)} "
        f"of {len(loaded)} ({', '.join(f1_holds) or 'none'}).",
    ]
    return "\n".join(lines), sorted(loaded)


def _ragtruth_dir(n: int, target: Path) -> None:
    """``n`` responses in RAGTruth's two-file format, cycling through the shipped answers."""
    answers = [it for p in sorted(DATA.glob("*.jsonl")) for it in load_generic(p)]
    target.mkdir(parents=True, exist_ok=True)
    with (target / "source_info.jsonl").open("w", encoding="utf-8") as src:
        for i, it in enumerate(answers):
            src.write(
                json.dumps(
                    {
                        "source_id": f"s{i}",
                        "task_type": "Summary",
                        "source": "bench",
                        "source_info": "\n\n".join(it.context),
                        "prompt": "",
                    }
                )
                + "\n"
            )
    with (target / "response.jsonl").open("w", encoding="utf-8") as out:
        for k in range(n):
            i = k % len(answers)
            it = answers[i]
            labels = [
                {"start": s, "end": e, "text": it.answer[s:e], "label_type": "x"}
                for s, e in it.spans or ()
            ]
            out.write(
                json.dumps(
                    {
                        "id": f"r{k}",
                        "source_id": f"s{i}",
                        "model": "bench",
                        "temperature": 0.7,
                        "labels": labels,
                        "split": "test" if k % 2 else "train",
                        "quality": "good",
                        "response": it.answer,
                    }
                )
                + "\n"
            )


def _cli(work: Path, results: Path) -> list[str]:
    script = Path(sys.executable).with_name("ragtrace")
    exe = (
        [str(script)]
        if script.exists()
        else [sys.executable, "-c", "import sys; from ragtrace.cli import main; sys.exit(main())"]
    )
    return [
        *exe,
        "detect-eval",
        "--input",
        str(work),
        "--judge",
        "lexical",
        "--results",
        str(results),
    ]


def _count(results: Path) -> int:
    n = 0
    for line in results.read_text(encoding="utf-8").splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            json.loads(line)
            n += 1
    return n


def runtime(n: int = 1000) -> dict[str, float | int]:
    with tempfile.TemporaryDirectory(prefix="ragtrace-1000-") as tmp:
        work = Path(tmp) / "ragtruth"
        _ragtruth_dir(n, work)
        results = Path(tmp) / "r.jsonl"
        start = time.perf_counter()
        subprocess.run(_cli(work, results), check=True, capture_output=True)
        full = time.perf_counter() - start
        assert _count(results) == n, "every answer has a result"
        start = time.perf_counter()
        again = subprocess.run(_cli(work, results), check=True, capture_output=True, text=True)
        resume_noop = time.perf_counter() - start
        assert f"{n} already judged" in again.stderr
        killed = Path(tmp) / "killed.jsonl"
        proc = subprocess.Popen(
            _cli(work, killed), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        while not killed.exists() or _count(killed) < n // 3:
            if proc.poll() is not None:
                raise SystemExit("the run finished before it could be killed")
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        finished = _count(killed)
        second = subprocess.run(_cli(work, killed), check=True, capture_output=True, text=True)
        judged_again = int(re.search(r"(\d+) judged \(mean", second.stderr).group(1))  # type: ignore[union-attr]
        ids = [
            json.loads(x)["id"]
            for x in killed.read_text().splitlines()
            if x.startswith("{") and x.endswith("}")
        ]
        assert len(set(ids)) == len(ids) == n, "no answer judged twice, none missing"
        assert judged_again == n - finished
        return {
            "answers": n,
            "full_s": full,
            "resume_noop_s": resume_noop,
            "killed_after": finished,
            "judged_on_resume": judged_again,
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judge", default="lexical")
    parser.add_argument("--yes", action="store_true", help="consent to a paid judge's cost")
    args = parser.parse_args(argv)
    judge_args = ["--judge", args.judge] + (["--yes"] if args.yes else [])
    table, names = quality_table(judge_args, args.judge)
    timing = runtime()
    paper = "\n".join(f"| {name} | {src} | {f1} |" for name, src, f1 in PAPER_ROWS)
    markdown = f"""## Measured against people

`python bench/bench_judge_quality.py` ({machine_line()}). Positive class: hallucinated. Every
figure is on the held-out **test** half of each set; tuned thresholds were chosen on the
**tune** half only. Sets ({", ".join(names)}), their licences and how each label is defined:
`bench/data/hallucination/README.md` (the QAGS files are not shipped — no licence upstream —
and are rebuilt with `bench/convert_hallucination_sets.py`). HaluEval's labels are by
construction, not human judgements. No long-form RAG QA set with its contexts could be obtained
here. AUROC and the tuned threshold rank the judge's answers by `ranking_score`: the mean
support of their claims and their word overlap with the context in equal parts (so the
judge's ranking holds what unigram overlap knows, plus its aligned, weighted support), and
unigram overlap by its share; the default-threshold F1 flags an answer whose groundedness is
below 0.8. F1 in %.

{table}

For reference only — **published figures on RAGTruth's test set, not measured by us, and not
on the sets above** (response-level F1, %):

| detector | reported in | F1 on RAGTruth |
|---|---|---|
{paper}

RAGTruth's data files could not be obtained here, so no row we measured is on RAGTruth. To
measure the Claude judge on it, download `response.jsonl` and `source_info.jsonl` from
github.com/ParticleMedia/RAGTruth into `ragtruth/` and run:

    ANTHROPIC_API_KEY=... ragtrace detect-eval --input ragtruth/ --judge anthropic \\
        --tune-sample 1000 --max-cost 40 --json-file claude-ragtruth.json

It judges RAGTruth's test answers (about 2,700) and 1,000 of its training answers (to tune the
threshold on), prints the expected token cost before sending anything and refuses to start if
the estimate is above `--max-cost`; interrupted, the same command resumes without paying for an
answer twice. Its F1 at the tuned threshold is the figure to set beside the rows above.

Run time: {timing["answers"]:,} answers in RAGTruth's format through the offline judge
(`ragtrace detect-eval --judge lexical`, process start included) took
{timing["full_s"]:.1f} s; running it again found every answer done in
{timing["resume_noop_s"]:.1f} s. Killed with `kill -9` after {timing["killed_after"]} results,
the rerun judged the remaining {timing["judged_on_resume"]} and no answer twice.
"""
    write_section("judge-quality", markdown, DOC)
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
