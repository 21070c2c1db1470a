"""What the embedded evaluator sends to its OTLP endpoint: export.results_as, narrowed by
otlp_signals and the Phoenix sink (evaluation spans not sent to Phoenix unless asked)."""

from __future__ import annotations

import pytest

from ragtrace_consumers.config import ConsumerConfig, ServeSettings
from ragtrace_consumers.runtime.embedded import describe_results, results_for

OTLP = "http://127.0.0.1:4318"
PHOENIX = "http://127.0.0.1:6006"


@pytest.mark.parametrize(
    ("signals", "phoenix", "asked", "configured", "expected"),
    [
        ("all", None, False, "both", "both"),
        ("all", None, False, "events", "events"),
        ("all", None, False, "spans", "spans"),
        ("traces", None, False, "both", "spans"),  # a spans-only backend: no /v1/logs
        ("traces", None, False, "events", "spans"),
        ("all", PHOENIX, False, "both", "events"),  # Phoenix shows annotations instead
        ("all", PHOENIX, True, "both", "both"),  # ... unless asked
        ("traces", PHOENIX, False, "both", None),  # nothing left to send there
        ("traces", PHOENIX, True, "both", "spans"),
    ],
)
def test_results_for(
    signals: str, phoenix: str | None, asked: bool, configured: str, expected: str | None
) -> None:
    serve = ServeSettings(
        otlp_endpoint=OTLP,
        otlp_signals=signals,
        phoenix_url=phoenix,
        phoenix_evaluation_spans=asked,
    )
    assert results_for(serve, configured) == expected


def test_the_banner_says_where_results_go() -> None:
    config = ConsumerConfig.defaults()
    both = config.replace(serve={"otlp_endpoint": OTLP})
    assert describe_results(both) == (
        f"gen_ai.evaluation.result log records and evaluation spans to {OTLP}"
    )
    phoenix_only = config.replace(
        serve={"otlp_endpoint": PHOENIX, "otlp_signals": "traces", "phoenix_url": PHOENIX}
    )
    assert describe_results(phoenix_only) == (
        "kept local (Phoenix shows them as annotations; --phoenix-evaluation-spans sends spans)"
    )
    assert describe_results(config) == "kept local (no OTLP endpoint for them)"
