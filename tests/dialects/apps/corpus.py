"""The known truth every dialect app answers from: a five-passage corpus, a retriever table,
a fake LLM's answers, and four questions — one per attribution outcome.

With the lexical judge (a sentence is supported when at least 60% of its words are in the
context) and k=3, recall threshold 0.5, groundedness threshold 0.8:

* ``AUDIT``: the gold passage at rank 1, the answer copied from it → recall 1, grounded 1: fine;
* ``REGIONS``: the gold passage not retrieved, the answer copied from what was → recall 0,
  grounded 1: retrieval failed;
* ``ROTATE``: the gold passage at rank 1, a fabricated answer → recall 1, grounded 0:
  generation failed;
* ``DARK``: no label → recall n/a, grounded 1: unlabelled.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

AUDIT = "How long are audit logs kept?"
REGIONS = "Which regions can workspace data be hosted in?"
ROTATE = "How do I rotate an API key?"
DARK = "Does the dashboard have a dark mode?"
QUESTIONS = (AUDIT, REGIONS, ROTATE, DARK)

PASSAGES = {
    "doc-audit": "Audit logs are kept for 90 days.",
    "doc-regions": "Workspace data can be hosted in the EU or the US.",
    "doc-rotate": "Rotate an API key from the settings page under API keys.",
    "doc-dark": "The dashboard supports a dark mode in the appearance settings.",
    "doc-pricing": "The Team plan costs 20 dollars per seat.",
}
RETRIEVED = {
    AUDIT: ("doc-audit", "doc-pricing"),
    REGIONS: ("doc-pricing", "doc-dark"),
    ROTATE: ("doc-rotate", "doc-pricing"),
    DARK: ("doc-dark",),
}
SCORES = (0.9, 0.4)
ANSWERS = {
    AUDIT: "Audit logs are kept for 90 days.",
    REGIONS: "The Team plan costs 20 dollars per seat.",
    ROTATE: "Keys rotate automatically every full moon by carrier pigeon.",
    DARK: "The dashboard supports a dark mode in the appearance settings.",
}
LABELS = (
    {"qid": "q-audit", "question": AUDIT, "gold": ["doc-audit"]},
    {"qid": "q-regions", "question": REGIONS, "gold": ["doc-regions"]},
    {"qid": "q-rotate", "question": ROTATE, "gold": ["doc-rotate"]},
)
# question -> (question id, recall@3, groundedness, cell)
EXPECTED = {
    AUDIT: ("q-audit", 1.0, 1.0, "fine"),
    REGIONS: ("q-regions", 0.0, 1.0, "retrieval_failed"),
    ROTATE: ("q-rotate", 1.0, 0.0, "generation_failed"),
    DARK: (None, None, 1.0, "unlabelled"),
}


def question_in(text: str) -> str:
    """The corpus question a prompt or query contains (the fake LLMs answer by it)."""
    for q in QUESTIONS:
        if q in text:
            return q
    raise KeyError(f"no known question in {text[:200]!r}")


def fake_reply(messages: list[dict[str, object]]) -> str:
    """The fake chat model: the corpus answer to the question in the last message."""
    return ANSWERS[question_in(str(messages[-1]["content"]))]


def ask_model(client: Any, question: str, context: str) -> str:
    """One chat completion through an ``openai.OpenAI`` client (its instrumentor records it):
    a system instruction, then the context and the question."""
    done = client.chat.completions.create(
        model="gpt-test",
        messages=[
            {"role": "system", "content": "Answer from the context only."},
            {"role": "user", "content": f"Context:\n{context}\nQuestion: {question}"},
        ],
    )
    return str(done.choices[0].message.content)


def write_labels(path: Path) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in LABELS), encoding="utf-8")
    return path
