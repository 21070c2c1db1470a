"""Keeping personal data from the judge: named patterns replaced by placeholders, consistently.

A :class:`Redactor` holds the patterns in force: the built-in ``email``, ``phone`` and ``card``
(a payment card number: 13 to 19 digits, spaces or dashes allowed, that pass the Luhn check) and
any custom regular expressions, each under its own name. :meth:`Redactor.session` starts one
trace's redaction: a :class:`RedactionSession` replaces every match in every text it is given
(the query, each context passage, the answer, a reference answer) with a placeholder made of the
pattern's name and a number, ``<EMAIL_1>``, the SAME placeholder for the same value on every side
(an e-mail is compared case-insensitively, a phone or card number by its digits). An answer that
quotes an address from its context therefore still quotes it — as ``<EMAIL_1>`` on both sides —
and its groundedness is unchanged, while the address itself never reaches a judge.

Custom patterns run first, in the order given, then ``email``, ``card``, ``phone`` (a card number
is not also taken for a phone number; an ISO date never is). A session is deterministic: the same
texts in the same order give the same placeholders, so judge-cache keys stay stable. Its
:attr:`RedactionSession.counts` says how many values of each pattern it replaced.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from ragtrace.errors import RagtraceError

__all__ = [
    "BUILTIN_PATTERNS",
    "RedactionError",
    "RedactionRule",
    "RedactionSession",
    "Redactor",
    "luhn_valid",
]


class RedactionError(RagtraceError, ValueError):
    """A redaction pattern is unknown, badly named or not a valid regular expression."""


def luhn_valid(digits: str) -> bool:
    """Whether the digit string passes the Luhn (mod 10) check of payment card numbers."""
    total = 0
    for i, char in enumerate(reversed(digits)):
        d = ord(char) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return bool(digits) and total % 10 == 0


def _digits(text: str) -> str:
    return "".join(c for c in text if c.isdigit())


_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _is_phone(match: str) -> bool:
    return 7 <= len(_digits(match)) <= 15 and not _ISO_DATE.fullmatch(match.strip())


def _is_card(match: str) -> bool:
    digits = _digits(match)
    return 13 <= len(digits) <= 19 and luhn_valid(digits)


@dataclass(frozen=True)
class RedactionRule:
    """One named pattern: ``pattern`` finds candidates, ``accept`` (optional) confirms one, and
    ``key`` says when two matches are the same value (they then share a placeholder)."""

    name: str
    pattern: re.Pattern[str]
    accept: Callable[[str], bool] | None = None
    key: Callable[[str], str] = str

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.name):
            raise RedactionError(
                f"redaction pattern name must be lower-case letters, digits and _, "
                f"starting with a letter, got {self.name!r}"
            )

    @property
    def label(self) -> str:
        """The placeholder's stem: ``EMAIL`` for ``email``."""
        return self.name.upper()


BUILTIN_PATTERNS: Mapping[str, RedactionRule] = {
    "email": RedactionRule(
        "email",
        re.compile(
            r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
        ),
        key=str.lower,
    ),
    "card": RedactionRule(
        "card", re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])"), _is_card, _digits
    ),
    "phone": RedactionRule(
        "phone",
        re.compile(
            r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]?\d{2,5}){1,4}(?![\w])"
        ),
        _is_phone,
        _digits,
    ),
}
"""The built-in patterns by name, in the order they are applied."""


@dataclass(frozen=True)
class Redactor:
    """The patterns in force, in the order they are applied (see the module docstring)."""

    rules: tuple[RedactionRule, ...] = ()

    @classmethod
    def build(cls, names: Iterable[str] = (), custom: Mapping[str, str] | None = None) -> Redactor:
        """The built-in patterns ``names`` plus ``custom`` (name -> regular expression). Raises
        :class:`RedactionError` naming an unknown built-in, a clashing name or a bad regex."""
        chosen = list(dict.fromkeys(n.strip().lower() for n in names if n.strip()))
        unknown = [n for n in chosen if n not in BUILTIN_PATTERNS]
        if unknown:
            raise RedactionError(
                f"unknown redaction pattern {unknown[0]!r} (built in: "
                f"{', '.join(BUILTIN_PATTERNS)}; others are given as custom regular expressions)"
            )
        rules: list[RedactionRule] = []
        for name, regex in (custom or {}).items():
            if name in BUILTIN_PATTERNS:
                raise RedactionError(f"custom redaction pattern {name!r} has a built-in's name")
            try:
                compiled = re.compile(regex)
            except re.error as exc:
                raise RedactionError(
                    f"custom redaction pattern {name!r}: not a regular expression: {exc}"
                ) from None
            if compiled.search(""):
                raise RedactionError(f"custom redaction pattern {name!r} matches the empty text")
            rules.append(RedactionRule(name, compiled))
        rules += [rule for name, rule in BUILTIN_PATTERNS.items() if name in chosen]
        return cls(tuple(rules))

    @property
    def enabled(self) -> bool:
        return bool(self.rules)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(rule.name for rule in self.rules)

    def session(self) -> RedactionSession:
        """A fresh redaction for one trace (its own placeholders)."""
        return RedactionSession(self)


@dataclass
class RedactionSession:
    """One trace's redaction: :meth:`redact` each of its texts (module docstring)."""

    redactor: Redactor
    counts: dict[str, int] = field(default_factory=dict)
    """Values replaced so far, by pattern name (every occurrence counts)."""
    _placeholders: dict[tuple[str, str], str] = field(default_factory=dict)
    _next: dict[str, int] = field(default_factory=dict)

    def redact(self, text: str) -> str:
        """``text`` with every match of every pattern replaced by its placeholder."""
        for rule in self.redactor.rules:
            text = rule.pattern.sub(functools.partial(self._substitute, rule), text)
        return text

    def _substitute(self, rule: RedactionRule, match: re.Match[str]) -> str:
        return self._replace(rule, match[0])

    def redact_optional(self, text: str | None) -> str | None:
        return None if text is None else self.redact(text)

    def _replace(self, rule: RedactionRule, value: str) -> str:
        if rule.accept is not None and not rule.accept(value):
            return value
        key = (rule.name, rule.key(value))
        placeholder = self._placeholders.get(key)
        if placeholder is None:
            number = self._next.get(rule.name, 0) + 1
            self._next[rule.name] = number
            placeholder = self._placeholders[key] = f"<{rule.label}_{number}>"
        self.counts[rule.name] = self.counts.get(rule.name, 0) + 1
        return placeholder
