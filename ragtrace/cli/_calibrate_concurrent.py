"""``ragtrace calibrate``'s judging loop: claim groups judged concurrently, with a progress bar on
a terminal, and what was judged kept when the judge becomes unreachable.

The comparison itself is :mod:`ragtrace.evaluation.calibration`'s (same groups: one judge call per
run of lines sharing a context, same items, same report); only the scheduling lives here.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragtrace.evaluation.calibration import CalibrationReport, HumanLabel

__all__ = ["CalibrationRun", "calibrate_concurrently"]


@dataclass(frozen=True)
class CalibrationRun:
    """``report`` over the groups judged (None when none was); ``unjudged`` claims were never
    judged because the judge became unreachable (``unavailable`` says why)."""

    report: CalibrationReport | None
    unjudged: int
    unavailable: str | None
    input_tokens: int
    output_tokens: int
    cost_usd: float


def calibrate_concurrently(
    labels: Sequence[HumanLabel],
    judge: Any,
    *,
    require_verified_evidence: bool = True,
    concurrency: int = 4,
) -> CalibrationRun:
    from tqdm import tqdm

    from ragtrace.evaluation.calibration import CalibrationReport, _groups, _items
    from ragtrace.evaluation.judges import JudgeUnavailable

    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    groups = _groups(labels)
    if not groups:
        raise ValueError("no labelled claims to calibrate")
    results: dict[int, Any] = {}
    lock = threading.Lock()
    unavailable: str | None = None

    def one(i: int) -> None:
        group = groups[i]
        result = judge.judge_claims([x.claim for x in group], list(group[0].context))
        with lock:
            results[i] = result

    pending = iter(range(len(groups)))
    with (
        ThreadPoolExecutor(
            max_workers=concurrency, thread_name_prefix="ragtrace-calibrate"
        ) as pool,
        tqdm(
            total=len(labels),
            unit="claim",
            desc="calibrating",
            file=sys.stderr,
            disable=not sys.stderr.isatty(),
            dynamic_ncols=True,
        ) as bar,
    ):
        running: dict[Future[None], int] = {}
        while True:
            while unavailable is None and len(running) < concurrency:
                i = next(pending, None)
                if i is None:
                    break
                running[pool.submit(one, i)] = i
            if not running:
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for f in finished:
                i = running.pop(f)
                bar.update(len(groups[i]))
                exc = f.exception()
                if isinstance(exc, JudgeUnavailable):
                    after = (
                        "" if exc.retry_after is None else f" (retry after {exc.retry_after:g}s)"
                    )
                    unavailable = unavailable or f"{exc}{after}"
                elif exc is not None:
                    raise exc
    items = []
    errors = 0
    info = None
    tokens_in = tokens_out = 0
    cost = 0.0
    for i in sorted(results):  # label-file order, whatever order the calls finished in
        result = results[i]
        info = result.judge
        usage = getattr(result, "usage", None)
        if usage is not None:
            tokens_in += (
                usage.input_tokens
                + usage.cache_read_input_tokens
                + usage.cache_creation_input_tokens
            )
            tokens_out += usage.output_tokens
        cost += float(getattr(result, "cost_usd", 0.0) or 0.0)
        if result.error is not None:
            errors += len(groups[i])
            continue
        items.extend(_items(groups[i], result.claims, require_verified_evidence))
    unjudged = sum(len(g) for i, g in enumerate(groups) if i not in results)
    report = (
        None
        if info is None
        else CalibrationReport(info, tuple(items), require_verified_evidence, errors)
    )
    return CalibrationRun(report, unjudged, unavailable, tokens_in, tokens_out, cost)
