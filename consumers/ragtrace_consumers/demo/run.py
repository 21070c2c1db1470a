"""One run of ``ragtrace demo``: start the embedded evaluator, ask the demo app every scripted
question through the real decorators and OTLP exporter, and collect what the evaluator scored.

Nothing here scores anything: the numbers are the embedded evaluator's, read back from its
results table once every trace has been scored.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragtrace.evaluation.calibration import CalibrationStamp
    from ragtrace.evaluation.judges import Judge
    from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator

__all__ = [
    "DemoQuestion",
    "DemoRun",
    "DemoTimeout",
    "JudgeDescription",
    "describe_judge",
    "run_demo",
]

_QUIET_S = 0.2
_SERVICE = "lumen-support-bot"


class DemoTimeout(RuntimeError):
    """Not every question was scored in time."""


@dataclass(frozen=True)
class JudgeDescription:
    name: str
    model: str | None
    summary: str
    prompt_sha256: str | None = None


@dataclass(frozen=True)
class DemoQuestion:
    """One question as asked, and as scored by the evaluator (scores None when not computed)."""

    number: int
    question: str
    trace_id: str
    retrieved: tuple[str, ...]
    answer: str
    qid: str | None
    gold: tuple[str, ...]
    cell: str
    recall: float | None
    hit_rate: float | None
    groundedness: float | None
    claims: int | None
    unsupported_claims: tuple[str, ...]
    judge_error: str | None

    def to_dict(self) -> dict[str, object]:
        return {
            "number": self.number,
            "question": self.question,
            "trace_id": self.trace_id,
            "qid": self.qid,
            "gold": list(self.gold),
            "retrieved": list(self.retrieved),
            "answer": self.answer,
            "cell": self.cell,
            "recall": self.recall,
            "hit_rate": self.hit_rate,
            "groundedness": self.groundedness,
            "claims": self.claims,
            "unsupported_claims": list(self.unsupported_claims),
            "judge_error": self.judge_error,
        }


@dataclass(frozen=True)
class DemoRun:
    judge: JudgeDescription
    k: int
    recall_definition: str
    recall_threshold: float
    groundedness_threshold: float
    labelled_questions: int
    questions: tuple[DemoQuestion, ...]
    endpoint: str
    state_path: str | None
    calibration: CalibrationStamp | None = None
    """The last calibration stamp (whatever its judge: the report checks it matches)."""


def describe_judge(judge: Judge) -> JudgeDescription:
    """Which judge scores groundedness, in words the output shows."""
    info = judge.info
    if info.name == "lexical":
        threshold = getattr(judge, "threshold", 0.6)
        share = getattr(judge, "unit_overlap_share", 0.0)
        summary = (
            f"lexical (offline: a sentence is supported when its support reaches "
            f"{threshold:.0%} ({1 - share:.0%} the weighted share of its words one retrieved "
            f"sentence holds, {share:.0%} the share of its words found in the context), the "
            "context holds all its figures and names, and no negation or hedge is dropped; set "
            "ANTHROPIC_API_KEY to judge with Claude)"
        )
    else:
        summary = f"{info.name} (model {info.model})"
    return JudgeDescription(info.name, info.model, summary, info.prompt_sha256)


def run_demo(
    *,
    judge_name: str = "auto",
    state_path: str | Path | None = None,
    timeout_s: float = 60.0,
    progress: Callable[[str], None] = lambda line: None,
    serve: Callable[[DemoRun, EmbeddedEvaluator], None] | None = None,
    port: int = 0,
) -> DemoRun:
    """Run the demo end to end; raises :class:`DemoTimeout` if scoring does not finish in time.

    ``state_path`` keeps the evaluator's SQLite state there (default: a temporary file removed
    afterwards, so every run starts fresh). ``serve``, when given, is called with the result
    while the evaluator is still up (its web view and receiver on ``port``, 0: a free one) and
    the evaluator stops when it returns (``ragtrace demo --serve``).
    """
    import ragtrace
    from ragtrace.evaluation.calibration import load_stamp
    from ragtrace.evaluation.judges import make_judge
    from ragtrace.evaluation.labels import load_labels
    from ragtrace_consumers.config import ConsumerConfig
    from ragtrace_consumers.demo.app import TOP_K, DemoApp, load_script
    from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
    from ragtrace_consumers.stores.scored_results import ScoredResult

    tmp = None if state_path is not None else tempfile.mkdtemp(prefix="ragtrace-demo-")
    state = Path(state_path) if state_path is not None else Path(tmp or ".") / "state.sqlite3"
    try:
        with resources.as_file(
            resources.files("ragtrace_consumers.demo").joinpath("labels.jsonl")
        ) as lp:
            labels = load_labels(lp)
            config = ConsumerConfig.defaults().replace(
                scoring={"k": TOP_K},
                assembly={"quiet_s": _QUIET_S},
                judge={"name": judge_name},
                serve={
                    "port": port,
                    "state": state,
                    "labels": lp,
                    "metrics": False,
                    "service_name": "ragtrace-demo",
                },
            )
            judge = make_judge(judge_name)
            evaluator = EmbeddedEvaluator(config, judge=judge)
        description = describe_judge(judge)
        script = load_script()
        asked: list[tuple[str, str, tuple[str, ...], str]] = []
        with evaluator:
            before = len(evaluator.state.results)  # rows of earlier runs in a kept state file
            progress(
                f"Embedded evaluator listening on {evaluator.endpoint} (OTLP/HTTP, this "
                "process: no Kafka, no Redis)"
            )
            progress(f"Judge: {description.summary}")
            progress(
                f"Asking the demo app {len(script)} questions ({len(labels)} of them labelled):"
            )
            provider = ragtrace.configure(
                service_name=_SERVICE,
                endpoint=evaluator.endpoint,
                enabled=True,
                capture_content=True,
            )
            app = DemoApp(script=script)
            width = len(str(len(script)))
            for n, item in enumerate(script, start=1):
                answer = app.answer(item.question)
                asked.append((item.question, app.last_trace_id or "", app.last_retrieved, answer))
                progress(
                    f"  [{n:>{width}}/{len(script)}] {item.question}  ->  retrieved "
                    f"{', '.join(app.last_retrieved) or 'nothing'}"
                )
            force_flush = getattr(provider, "force_flush", None)
            if force_flush is not None:
                force_flush()
            progress("Scoring: recall@k against the labels, groundedness with the judge ...")
            by_trace: dict[str, ScoredResult] = {}
            seen = before
            while len(by_trace) < len(asked):
                rows = evaluator.wait_for_results(seen + 1, timeout_s)
                if len(rows) <= seen:
                    raise DemoTimeout(
                        f"only {len(by_trace)} of {len(asked)} questions were "
                        f"scored within {timeout_s:g}s"
                    )
                for row in rows[seen:]:
                    by_trace[row.trace_id] = row
                    progress(
                        f"  scored {len(by_trace)}/{len(asked)}: {row.query}  ->  "
                        f"{row.cell.replace('_', ' ')}"
                    )
                seen = len(rows)
            gold = {q.qid: tuple(sorted(q.gold)) for q in labels}
            questions = []
            for n, (question, trace_id, retrieved, answer) in enumerate(asked, start=1):
                scored = by_trace.get(trace_id)
                if scored is None:
                    raise DemoTimeout(f"question {n} (trace {trace_id}) was not scored")
                questions.append(
                    DemoQuestion(
                        number=n,
                        question=question,
                        trace_id=trace_id,
                        retrieved=retrieved,
                        answer=answer,
                        qid=scored.question_id,
                        gold=gold.get(scored.question_id or "", ()),
                        cell=scored.cell,
                        recall=scored.recall,
                        hit_rate=scored.hit_rate,
                        groundedness=scored.groundedness,
                        claims=scored.claims,
                        unsupported_claims=scored.unsupported_claims,
                        judge_error=scored.judge_error,
                    )
                )
            result = DemoRun(
                judge=description,
                k=TOP_K,
                recall_definition=config.scoring.recall_definition,
                recall_threshold=config.scoring.recall_threshold,
                groundedness_threshold=config.scoring.groundedness_threshold,
                labelled_questions=len(labels),
                questions=tuple(questions),
                endpoint=evaluator.endpoint,
                state_path=None if tmp is not None else str(state),
                calibration=load_stamp(),
            )
            if serve is not None:
                serve(result, evaluator)
        return result
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
