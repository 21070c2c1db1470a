"""Run the bundled demo app in a child process, exporting through the real SDK (decorators,
``ragtrace.configure``, the OTLP/HTTP exporter) to an embedded evaluator under test.

A child process because the SDK installs the process-global tracer provider, which a test
process shares with every other test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

_APP = r"""
import json, sys
import ragtrace
from ragtrace_consumers.demo.app import DemoApp

endpoint, questions = sys.argv[1], json.loads(sys.argv[2])
provider = ragtrace.configure(service_name="lumen-support-bot", endpoint=endpoint)
app = DemoApp()
out = []
for q in questions:
    answer = app.answer(q)
    out.append({"question": q, "trace_id": app.last_trace_id,
                "retrieved": list(app.last_retrieved), "answer": answer})
provider.force_flush()
print(json.dumps(out))
"""

QUESTIONS = (
    "How long are audit logs kept on the Team plan?",
    "What does the /v1/exports endpoint return?",
    "How do I rotate an API key?",
    "What is the rate limit of the public API?",
    "Which regions can workspace data be hosted in?",
    "Does the dashboard have a dark mode?",
)


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The test environment without anything that would redirect or change the SDK, the judge
    or the evaluator's configuration."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OTEL_", "RAGTRACE_", "ANTHROPIC_"))
    }
    env.update(extra or {})
    return env


def run_app(endpoint: str, questions: Sequence[str] = QUESTIONS) -> list[dict[str, object]]:
    """Ask ``questions``; returns what the app answered, with each answer's trace ID."""
    done = subprocess.run(
        [sys.executable, "-c", _APP, endpoint, json.dumps(list(questions))],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout))


_SCRIPT = Path(sys.executable).with_name("ragtrace")
CLI = (
    [str(_SCRIPT)]
    if _SCRIPT.exists()
    else [sys.executable, "-c", "import sys; from ragtrace.cli import main; sys.exit(main())"]
)
"""How the tests run the ``ragtrace`` command: the installed console script, as ``make demo``
does (the same entry point called in-line when the script is not beside the interpreter)."""
