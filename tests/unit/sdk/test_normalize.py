"""The ASCII fast path of ``normalize_question`` agrees with the general Unicode rule (NFKC,
case fold, drop categories P* and S*, fold white space) on every ASCII text."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from ragtrace.normalize import normalize_question


def _general(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    kept = "".join(
        " " if ch.isspace() else ch
        for ch in folded
        if not unicodedata.category(ch).startswith(("P", "S"))
    )
    return " ".join(kept.split())


def test_every_ascii_character() -> None:
    for code in range(128):
        text = f"a{chr(code)}b {chr(code)}"
        assert normalize_question(text) == _general(text), repr(chr(code))


@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_ascii_texts(text: str) -> None:
    assert normalize_question(text) == _general(text)


@given(st.text())
def test_any_text(text: str) -> None:
    assert normalize_question(text) == _general(text)
