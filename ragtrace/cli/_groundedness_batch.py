"""``ragtrace groundedness --input answers.jsonl``: many answers, judged concurrently, resumable.

Input, one JSON object per line: ``{"id": "a1", "answer": "...", "context": ["...", ...]}``
(``id`` optional: the line number; ``context`` a string or a list of strings).

Output, one JSON object per line, in completion order: ``{"id", "score", "error", ...}`` (the
single-answer ``--json`` document plus ``id``), appended to ``--output`` (or written to stdout)
and flushed line by line. Re-running with the same ``--output`` skips every id already there
without an error — an interrupted or partly failed run resumes where it stopped and never pays
for a judgement twice.

At most ``--concurrency`` judge calls run at once. When the judge is unreachable after its
retries, nothing new is started, the calls in flight finish and are written, and the command
exits 3; run it again later to resume. A progress bar (tqdm) is drawn on stderr only when stderr
is a terminal; the totals (answers, mean score, tokens and cost) go to stderr at the end.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ragtrace.errors import RagtraceError

if TYPE_CHECKING:
    from ragtrace.evaluation.judges import GroundednessResult, Judge

__all__ = ["BatchItem", "BatchTotals", "judge_batch", "read_done_ids", "read_items"]


class BatchInputError(RagtraceError, ValueError):
    """A line of the input file is not a valid item (the message names file and line)."""


@dataclass(frozen=True)
class BatchItem:
    """One answer to judge, with the context it was given."""

    id: str
    answer: str
    context: tuple[str, ...]


@dataclass
class BatchTotals:
    """What a batch run did; ``cost_usd`` at the judge's list prices."""

    judged: int = 0
    errors: int = 0
    skipped: int = 0
    score_sum: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    unavailable: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, result: GroundednessResult) -> None:
        with self._lock:
            u = result.usage
            self.input_tokens += u.input_tokens
            self.output_tokens += u.output_tokens
            self.cache_read_tokens += u.cache_read_input_tokens
            self.cache_write_tokens += u.cache_creation_input_tokens
            self.cost_usd += result.cost_usd
            if result.error is not None or result.score is None:
                self.errors += 1
            else:
                self.judged += 1
                self.score_sum += result.score

    def summary(self) -> str:
        mean = f"{self.score_sum / self.judged:.3f}" if self.judged else "n/a"
        return (
            f"{self.judged} judged (mean groundedness {mean}), {self.errors} judge errors, "
            f"{self.skipped} already done; tokens: {self.input_tokens} in, "
            f"{self.output_tokens} out, {self.cache_read_tokens} cache read, "
            f"{self.cache_write_tokens} cache write; cost ${self.cost_usd:.4f}"
        )


def read_items(path: str) -> Iterator[BatchItem]:
    """The input items; ``-`` reads stdin. Raises :class:`BatchInputError` on a bad line."""
    stream: TextIO = sys.stdin if path == "-" else Path(path).open(encoding="utf-8")  # noqa: SIM115
    try:
        for n, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            where = f"{path}, line {n}"
            try:
                doc = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BatchInputError(f"{where}: not valid JSON: {exc.msg}") from None
            if not isinstance(doc, dict):
                raise BatchInputError(f"{where}: expected a JSON object")
            answer, context = doc.get("answer"), doc.get("context")
            if not isinstance(answer, str):
                raise BatchInputError(f'{where}: "answer" must be a string')
            if isinstance(context, str):
                context = [context]
            if not isinstance(context, list) or not all(isinstance(c, str) for c in context):
                raise BatchInputError(f'{where}: "context" must be a string or a list of strings')
            yield BatchItem(str(doc.get("id", n)), answer, tuple(context))
    finally:
        if stream is not sys.stdin:
            stream.close()


def read_done_ids(path: Path) -> set[str]:
    """Ids already judged without error in an earlier run's output (a torn last line, from a
    killed run, is ignored: that answer is judged again)."""
    done: set[str] = set()
    if not path.exists():
        return done
    with path.open(encoding="utf-8") as f:
        for line in f:
            try:
                doc = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(doc, dict) and doc.get("error") is None and "id" in doc:
                done.add(str(doc["id"]))
    return done


def _progress(total: int | None) -> Any:
    from tqdm import tqdm

    return tqdm(
        total=total,
        unit="answer",
        desc="judging",
        file=sys.stderr,
        disable=not sys.stderr.isatty(),
        dynamic_ncols=True,
    )


def judge_batch(
    judge: Judge,
    items: list[BatchItem],
    out: TextIO,
    *,
    concurrency: int,
    done: set[str] | None = None,
) -> BatchTotals:
    """Judge ``items`` not in ``done``, ``concurrency`` at a time, writing one JSON line per
    result to ``out`` as each finishes. Stops starting new ones when the judge is unavailable
    (``totals.unavailable`` says why)."""
    from ragtrace.evaluation.judges import JudgeUnavailable

    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    done = done or set()
    todo = [it for it in items if it.id not in done]
    totals = BatchTotals(skipped=len(items) - len(todo))
    write_lock = threading.Lock()

    def one(item: BatchItem) -> None:
        result = judge.groundedness(item.answer, list(item.context))
        totals.add(result)
        line = json.dumps({"id": item.id, **result.to_dict()}, ensure_ascii=False)
        with write_lock:
            out.write(line + "\n")
            out.flush()

    pending = iter(todo)
    with (
        ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="ragtrace-judge") as pool,
        _progress(len(todo)) as bar,
    ):
        running: set[Future[None]] = set()
        while True:
            while totals.unavailable is None and len(running) < concurrency:
                item = next(pending, None)
                if item is None:
                    break
                running.add(pool.submit(one, item))
            if not running:
                break
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            for f in finished:
                bar.update(1)
                exc = f.exception()
                if isinstance(exc, JudgeUnavailable):
                    totals.unavailable = str(exc)
                elif exc is not None:
                    raise exc
    return totals
