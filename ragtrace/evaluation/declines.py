"""Whether an answer declines: the verdict on a question labelled unanswerable (empty gold set).

An unanswerable question has no recall (NaN, excluded: :mod:`.retrieval`), so what remains to
judge is the answer's behaviour: it should say it cannot answer. :func:`decline` decides by one
narrow, explainable rule over the answer's units (:func:`~.judges.segment.segment_answer`, meta
sentences such as "I hope this helps!" already dropped):

* an answer with no unit (empty, or only meta sentences) declines, and so does a trace whose
  answer text was not recorded: nothing was claimed;
* otherwise it declines when **every** unit is a *decline* ("I don't know.", "The passages do
  not mention the dark mode.", "I cannot find that in the documentation.") or a *redirect*
  ("Please contact support.", "You may want to ask your administrator."), and at least one is a
  decline;
* a unit that declines and then goes on ("I'm not sure, but it is probably 90 days.") is a
  claim, not a decline: the phrase must not be followed by *but*, *however*, *although*,
  *though* or *yet*.

Anything else answered the question: a bot that makes even one claim about an unanswerable
question is flagged. The rule reads English phrasing only; the reason it gives quotes the unit
that decided, so a wrong verdict can be seen and argued with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .judges.segment import segment_answer

__all__ = ["Decline", "decline"]

_CONTEXT = r"(?:context|passages?|documents?|documentation|sources?|information|docs|text|data)"
_DECLINE = re.compile(
    r"\b(?:"
    r"i (?:do not|don't|dont) (?:know|have (?:that|this|enough|any|the) information)"
    r"|i(?:'m| am) (?:not sure|unsure|not certain|unable to|not able to)"
    r"|i (?:cannot|can't|can not|could not|couldn't|was unable to|am unable to) "
    r"(?:answer|find|say|tell|determine|confirm|provide|locate|help with)"
    r"|(?:unable|not able) to (?:answer|find|determine|confirm|locate)"
    r"|no (?:information|mention|details?|answer|data) (?:about|on|regarding|of|for|in)"
    r"|there (?:is|are) no (?:information|mention|details?|answer)"
    rf"|{_CONTEXT} (?:do|does|did) not (?:say|mention|contain|include|provide|cover|specify"
    r"|state|describe|address|answer|discuss)"
    rf"|{_CONTEXT} (?:doesn't|don't|didn't) (?:say|mention|contain|include|provide|cover"
    r"|specify|state|describe|address|answer|discuss)"
    r"|(?:not|isn't|is not|aren't|are not) (?:mentioned|covered|stated|specified|provided"
    r"|described|documented|available|included) (?:in|by) "
    r"|cannot be (?:answered|determined|found)"
    r")",
    re.IGNORECASE,
)
_GOES_ON = re.compile(r"\b(?:but|however|although|though|yet)\b", re.IGNORECASE)
_REDIRECT = re.compile(
    r"^(?:please |kindly )?(?:contact|ask|check|consult|refer to|reach out|try|visit|see)\b"
    r"|^you (?:may|might|can|could|should) (?:want to |wish to )?"
    r"(?:contact|ask|check|consult|refer to|reach out|try|visit)\b",
    re.IGNORECASE,
)
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'"})


@dataclass(frozen=True)
class Decline:
    """The verdict on one answer: ``declined`` and the ``reason`` (the deciding unit quoted)."""

    declined: bool
    reason: str

    def __post_init__(self) -> None:
        if not self.reason:
            raise ValueError("Decline.reason must not be empty")


def _declines(unit: str) -> bool:
    found = _DECLINE.search(unit)
    return found is not None and _GOES_ON.search(unit, found.end()) is None


def decline(answer: str | None) -> Decline:
    """Whether ``answer`` declines to answer (the module docstring's rule), and why."""
    if answer is None:
        return Decline(True, "no answer text was recorded")
    units = [u.text.translate(_APOSTROPHES) for u in segment_answer(answer)]
    if not units:
        return Decline(True, "the answer says nothing")
    declines = [u for u in units if _declines(u)]
    other = [u for u in units if not _declines(u) and _REDIRECT.search(u) is None]
    if declines and not other:
        return Decline(True, f'the answer declines: "{declines[0]}"')
    claim = other[0] if other else units[0]
    return Decline(False, f'the answer makes a claim: "{claim}"')
