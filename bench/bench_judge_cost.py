"""Judge cost per answer: realtime vs the Message Batches API, and when prompt caching pays.

The real ``anthropic`` client runs against the fake API (tests/fakes), which reports usage from a
character-count estimate of each request (the same for a realtime call and a batch request) and
simulates prompt caching (``cache_control`` on the system block: the first request writes the
prefix, later ones read it). Costs come from ragtrace's price table (list prices) applied to the
usage the fake reports, exactly as the consumers' cost metric computes them.

Three runs over the same N answers (each ~3 context passages, as in the consumer benchmark):
realtime with the default prompt; batch mode (one batch); realtime with instructions padded past
the model's minimum cacheable prefix (the only case where ragtrace marks the prompt cacheable).

Run: ``python bench/bench_judge_cost.py [--answers 200]``; writes the ``judge-cost`` section of
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._report import machine_line, write_section
from ragtrace.evaluation.judges import AnthropicJudge
from ragtrace.evaluation.judges.model.anthropic_batch import AnthropicBatchJudge, BatchRequest
from ragtrace.evaluation.judges.model.caching import min_cacheable_tokens
from ragtrace.evaluation.judges.prompts import GROUNDEDNESS_INSTRUCTIONS
from tests.fakes.anthropic_server import FakeAnthropic, entail_all

MODEL = "claude-haiku-4-5"


def answers(n: int) -> list[tuple[str, tuple[str, ...]]]:
    out = []
    for i in range(n):
        context = tuple(
            f"Passage {j} of ticket {i}: audit logs on the plan {i % 7} are kept for "
            f"{30 + j * 30} days, exported nightly to the region {i % 5}, and deleted after "
            f"the retention window unless a legal hold applies. " * 3
            for j in range(3)
        )
        answer = (
            f"Audit logs on plan {i % 7} are kept for 30 days. They are exported "
            f"nightly to region {i % 5}."
        )
        out.append((answer, context))
    return out


def _sum(results: list[Any]) -> dict[str, float]:
    return {
        "cost": sum(r.cost_usd for r in results),
        "input": sum(r.usage.input_tokens for r in results),
        "output": sum(r.usage.output_tokens for r in results),
        "cache_read": sum(r.usage.cache_read_input_tokens for r in results),
        "cache_write": sum(r.usage.cache_creation_input_tokens for r in results),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--answers", type=int, default=200)
    args = parser.parse_args()
    items = answers(args.answers)
    with FakeAnthropic(entail_all) as api:
        judge = AnthropicJudge(MODEL, api_key="bench", base_url=api.base_url)
        realtime = _sum([judge.groundedness(a, c) for a, c in items])

        batch_judge = AnthropicBatchJudge(judge)
        requests = {f"a{i}": BatchRequest(f"a{i}", a, c) for i, (a, c) in enumerate(items)}
        start = time.perf_counter()
        batch_id = batch_judge.submit(list(requests.values()))
        while not batch_judge.status(batch_id).ended:
            time.sleep(0.05)
        results = batch_judge.results(batch_id, requests)
        took = time.perf_counter() - start
        batch = _sum(list(results.values()))

        # Instructions padded past the model's cacheable minimum: the judge marks them cacheable.
        pad = "\n\nReference note (kept constant across calls). " * (
            min_cacheable_tokens(MODEL) * 5 // 40
        )
        long_judge = AnthropicJudge(
            MODEL,
            api_key="bench",
            base_url=api.base_url,
            instructions=GROUNDEDNESS_INSTRUCTIONS + pad,
        )
        cached_results = [long_judge.groundedness(a, c) for a, c in items]
        cached = _sum(cached_results)
        # The same long prompt without caching, for comparison (prices applied by hand).
        price = judge.prices.lookup(MODEL)
        assert price is not None
        plain_long = sum(
            (
                (
                    r.usage.input_tokens
                    + r.usage.cache_read_input_tokens
                    + r.usage.cache_creation_input_tokens
                )
                * price.input
                + r.usage.output_tokens * price.output
            )
            / 1e6
            for r in cached_results
        )
    n = args.answers
    ratio = batch["cost"] / realtime["cost"]
    print(
        f"realtime ${realtime['cost'] / n:.6f}/answer, batch ${batch['cost'] / n:.6f}/answer "
        f"(ratio {ratio:.3f}), long prompt cached ${cached['cost'] / n:.6f} vs uncached "
        f"${plain_long / n:.6f}"
    )
    md = f"""## Judge cost (`bench/bench_judge_cost.py`)

{machine_line()}; the real `anthropic` client against the fake API, which reports usage from
the request size (identical for a realtime call and a batch request) and simulates prompt
caching; costs are the price table's list prices for `{MODEL}` applied to that usage, as the
consumers' `ragtrace.judge.cost` metric computes them. {n} answers, three context passages
each. Run: `python bench/bench_judge_cost.py`.

| mode | input tokens / answer | output tokens / answer | cache read / write tokens | USD / answer | / realtime |
|---|---:|---:|---:|---:|---:|
| realtime (`judge.mode: realtime`) | {realtime["input"] / n:,.0f} | {realtime["output"] / n:,.0f} | {realtime["cache_read"] / n:,.0f} / {realtime["cache_write"] / n:,.0f} | {realtime["cost"] / n:.6f} | 1 |
| **batch** (`judge.mode: batch`, one batch of {n}) | {batch["input"] / n:,.0f} | {batch["output"] / n:,.0f} | {batch["cache_read"] / n:,.0f} / {batch["cache_write"] / n:,.0f} | {batch["cost"] / n:.6f} | **{ratio:.2f}** |
| realtime, instructions padded past the {min_cacheable_tokens(MODEL):,}-token cacheable minimum, cached | {cached["input"] / n:,.0f} | {cached["output"] / n:,.0f} | {cached["cache_read"] / n:,.0f} / {cached["cache_write"] / n:,.0f} | {cached["cost"] / n:.6f} | {cached["cost"] / realtime["cost"]:.2f} |
| same padded prompt, had it not been cached | | | | {plain_long / n:.6f} | {plain_long / realtime["cost"]:.2f} |

Batch mode costs **{ratio:.2f}×** realtime for the same tokens (goal 0.5×). Its price is
latency: a trace is scored when its batch ends (the fake ends it at once; the API usually
within minutes, at most 24 h), recorded per result in `ragtrace.judge.latency` (here
{took:.2f} s from submission to results read).

**Prompt caching pays only above the model's minimum cacheable prefix** ({min_cacheable_tokens(MODEL):,}
tokens for `{MODEL}`, 1,024 for Sonnet 4.5): below it the API caches nothing and the marker does
nothing. The default groundedness prefix (instructions plus tool schema) is a few hundred
tokens, so the judge
sends no `cache_control` (`caching.should_cache`) and every token above is plain input. Once
a prefix does qualify — long custom `instructions`, few-shot examples — a cache write costs
1.25× its input price and each read within the 5-minute cache lifetime 0.1×, so it pays from the
second judgement in five minutes: any steady judged traffic. The cache read and write token
counts go to `ragtrace.judge.tokens` (`token_type` `cache_read` / `cache_write`) and their cost
into `ragtrace.judge.cost`. Caching and batch pricing stack.
"""
    print(md)
    write_section("judge-cost", md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
