"""The Node side of the dialect tests: the corpus as JSON for the Node apps, the cached npm
packages (``scripts/node_deps.sh``), and a run of one app under ``node``.

The Node apps ask the corpus questions plus a two-search one (the model searches twice with its
own sub-queries; the labelled question is the user's, its gold IDs one from each search) and a
follow-up turn: asked after ``corpus.AUDIT`` in the same session, its own search returns nothing
on topic and its answer is copied from the audit passage the first turn retrieved (labelled with
that passage: recall 0; grounded only with the earlier turn's evidence)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from tests.dialects.apps import corpus
from tests.dialects.kit import ROOT, run_printing

APPS = ROOT / "tests" / "dialects" / "node"

BOTH = "How long are audit logs kept, and how do I rotate an API key?"
SUBQUERIES = {"audit log retention": corpus.AUDIT, "API key rotation": corpus.ROTATE}
BOTH_ANSWER = f"{corpus.ANSWERS[corpus.AUDIT]} {corpus.PASSAGES['doc-rotate']}"
BOTH_LABEL = {"qid": "q-both", "question": BOTH, "gold": ["doc-audit", "doc-rotate"]}

FOLLOW_UP = "And are they kept on the Team plan too?"
FOLLOW_UP_RETRIEVED = ("doc-pricing", "doc-dark")
FOLLOW_UP_LABEL = {"qid": "q-follow-up", "question": FOLLOW_UP, "gold": ["doc-audit"]}
SESSION = "conversation-audit"
TURNS = (corpus.AUDIT, FOLLOW_UP)


def node_deps() -> Path:
    """The cached npm packages (installed on first use, pinned by the lock file)."""
    assert shutil.which("node"), "the Node dialect tests need node (Node.js 20 or later)"
    out = subprocess.run(
        [str(ROOT / "scripts" / "node_deps.sh")],
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    ).stdout.strip()
    return Path(out)


def write_corpus(path: Path, ask: tuple[str, ...], session: tuple[str, ...] = ()) -> Path:
    """The corpus for the Node apps; ``ask`` the questions to ask, in order; ``session`` those
    asked as turns of :data:`SESSION` (the others each in a session of its own)."""
    retrieved = {**corpus.RETRIEVED, FOLLOW_UP: FOLLOW_UP_RETRIEVED}
    doc = {
        "passages": corpus.PASSAGES,
        "retrieved": {q: list(ids) for q, ids in retrieved.items()},
        "scores": list(corpus.SCORES),
        "answers": {**corpus.ANSWERS, BOTH: BOTH_ANSWER, FOLLOW_UP: corpus.ANSWERS[corpus.AUDIT]},
        # the longer first: BOTH contains AUDIT's words
        "questions": [BOTH, *corpus.QUESTIONS, FOLLOW_UP],
        "ask": list(ask),
        "searches": {BOTH: list(SUBQUERIES)},
        "subqueries": SUBQUERIES,
        "sessions": dict.fromkeys(session, SESSION),
    }
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def write_labels(path: Path) -> Path:
    """The corpus labels, the two-search question's and the follow-up turn's."""
    items = (*corpus.LABELS, BOTH_LABEL, FOLLOW_UP_LABEL)
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


def run_node(
    app: str, *args: str, env: Mapping[str, str] | None = None, timeout: float = 180
) -> list[dict[str, str]]:
    """Run ``tests/dialects/node/<app>`` with ``args`` (and ``env`` over the clean
    environment); what it printed (its last line)."""
    node_deps()
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    clean.update(env or {})
    return run_printing(["node", str(APPS / app), *args], env=clean, timeout=timeout, cwd=APPS)
