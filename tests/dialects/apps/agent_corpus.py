"""The known truth of the agent dialect apps: the corpus questions answered by an agent that
calls a ``search`` tool with its own sub-queries, plus a two-search question and a two-turn
conversation, and the scripted fake model that drives the tool calls.

Every search is a tool call whose query is the model's sub-query, never the user's question;
the tool returns ``{"id", "content", "score"}`` items. With k=3 (recall@3 over the union of
every step's top 3, in first-appearance order) and the lexical judge:

* the four corpus questions (``corpus.EXPECTED``): one search each;
* ``BOTH``: two searches (audit logs, then regions), the answer copied from both gold passages
  → recall 1, grounded 1: fine; ``AT_ONCE`` likewise, the two searches asked for in one reply
  (parallel tool calls: the steps' order is the order they started in, which a framework
  running tools concurrently does not fix);
* ``TEAM`` then ``TEAM_AUDIT``, two turns of one session: the first retrieves the pricing and
  the audit passage and is fine; the second's own search misses its gold (``doc-audit``), and
  its answer is copied from what the first turn retrieved → recall 0, grounded 1: retrieval
  failed (recall is the turn's own; the answer is supported by the earlier turn's evidence).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

from tests.dialects.apps import corpus

BOTH = "How long are audit logs kept, and where can workspace data be hosted?"
AT_ONCE = "How much is the Team plan, and does the dashboard have a dark mode?"
TEAM = "What does the Team plan cost?"
TEAM_AUDIT = "And how long are audit logs kept on that plan?"
SESSION = "conversation-team-plan"
TURNS = (TEAM, TEAM_AUDIT)
QUESTIONS = (*corpus.QUESTIONS, BOTH, AT_ONCE)
ALL_QUESTIONS = (*QUESTIONS, *TURNS)

# question -> the model's sub-queries, one search tool call each, in order
PLANS: dict[str, tuple[str, ...]] = {
    AT_ONCE: ("team plan price", "dashboard dark mode"),
    corpus.AUDIT: ("audit log retention",),
    corpus.REGIONS: ("workspace hosting",),
    corpus.ROTATE: ("api key rotation",),
    corpus.DARK: ("dashboard dark mode",),
    BOTH: ("audit log retention", "workspace data regions"),
    TEAM: ("team plan price",),
    TEAM_AUDIT: ("team plan audit retention",),
}
# questions whose searches the model asks for at once (parallel tool calls in one reply)
PARALLEL = frozenset({AT_ONCE})
# the search tool's index: sub-query -> ranked document IDs
SEARCHES: dict[str, tuple[str, ...]] = {
    "audit log retention": corpus.RETRIEVED[corpus.AUDIT],
    "workspace hosting": corpus.RETRIEVED[corpus.REGIONS],
    "api key rotation": corpus.RETRIEVED[corpus.ROTATE],
    "dashboard dark mode": corpus.RETRIEVED[corpus.DARK],
    "workspace data regions": ("doc-regions", "doc-dark"),
    "team plan price": ("doc-pricing", "doc-audit"),
    "team plan audit retention": ("doc-pricing",),
}
ANSWERS = {
    **corpus.ANSWERS,
    BOTH: f"{corpus.PASSAGES['doc-audit']} {corpus.PASSAGES['doc-regions']}",
    AT_ONCE: f"{corpus.PASSAGES['doc-pricing']} {corpus.PASSAGES['doc-dark']}",
    TEAM: corpus.PASSAGES["doc-pricing"],
    TEAM_AUDIT: corpus.PASSAGES["doc-audit"],
}
LABELS = (
    *corpus.LABELS,
    {"qid": "q-both", "question": BOTH, "gold": ["doc-audit", "doc-regions"]},
    {"qid": "q-at-once", "question": AT_ONCE, "gold": ["doc-pricing", "doc-dark"]},
    {"qid": "q-team", "question": TEAM, "gold": ["doc-pricing"]},
    {"qid": "q-team-audit", "question": TEAM_AUDIT, "gold": ["doc-audit"]},
)
# question -> (question id, recall@3, groundedness, cell)
EXPECTED = {
    **corpus.EXPECTED,
    BOTH: ("q-both", 1.0, 1.0, "fine"),
    AT_ONCE: ("q-at-once", 1.0, 1.0, "fine"),
    TEAM: ("q-team", 1.0, 1.0, "fine"),
    TEAM_AUDIT: ("q-team-audit", 0.0, 1.0, "retrieval_failed"),
}


def search(query: str) -> list[dict[str, object]]:
    """The search tool's result: ``{"id", "content", "score"}`` items, best first."""
    return [
        {"id": d, "content": corpus.PASSAGES[d], "score": s}
        for d, s in zip(SEARCHES[query], (0.9, 0.4), strict=False)
    ]


def retrieved(question: str) -> tuple[str, ...]:
    """The union of every step's IDs, in first-appearance order (no step returns more than
    k=3, so recall@3 pools them all)."""
    return tuple(dict.fromkeys(i for sub in PLANS[question] for i in SEARCHES[sub]))


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


def agent_reply(messages: Sequence[Mapping[str, Any]]) -> str | dict[str, Any]:
    """The scripted agent model (Chat Completions messages in): after the last user message,
    one ``search`` tool call per sub-query of its question's plan, one at a time (all at once
    for a :data:`PARALLEL` question), then the answer; each reply after ``AGENT_MODEL_DELAY_S`` seconds (a real model's latency)."""
    time.sleep(float(os.environ.get("AGENT_MODEL_DELAY_S", "0")))
    last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
    question = _text(messages[last_user]["content"]).strip()
    done = sum(1 for m in messages[last_user:] if m.get("role") == "tool")
    plan = PLANS[question]
    if done >= len(plan):
        return ANSWERS[question]
    subs = plan if question in PARALLEL else plan[done : done + 1]
    calls = [
        {
            "id": f"call_{ALL_QUESTIONS.index(question)}_{done + i}",
            "type": "function",
            "function": {"name": "search", "arguments": json.dumps({"query": sub})},
        }
        for i, sub in enumerate(subs)
    ]
    return {"role": "assistant", "content": None, "tool_calls": calls}
