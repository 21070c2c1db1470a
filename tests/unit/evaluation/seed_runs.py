"""The retrieval seed's five questions and its two retrievers' runs (vector, hybrid), as
labelled questions: the shared fixture of the report and comparison tests."""

from __future__ import annotations

from ragtrace.evaluation.labels import LabelledQuestion

QUESTIONS = [
    LabelledQuestion("q1", "one", frozenset({"d1"})),
    LabelledQuestion("q2", "two", frozenset({"d4", "d5"})),
    LabelledQuestion("q3", "three", frozenset({"d9"})),
    LabelledQuestion("q4", "four", frozenset({"d2"})),
    LabelledQuestion("q5", "five", frozenset({"d7"})),
]
VECTOR = {
    "q1": ["d1", "d3", "d2"],
    "q2": ["d5", "d8", "d6"],
    "q3": ["d2", "d6", "d9"],
    "q4": ["d3", "d1", "d8"],
    "q5": ["d7", "d5", "d1"],
}
HYBRID = {
    "q1": ["d1", "d2", "d3"],
    "q2": ["d4", "d5", "d8"],
    "q3": ["d9", "d2", "d6"],
    "q4": ["d2", "d3", "d1"],
    "q5": ["d5", "d7", "d1"],
}
