from __future__ import annotations

import pytest

from ragtrace.evaluation.judges import normalise_for_match, quote_found

CONTEXT = [
    (
        "Audit log retention on the Enterprise plan is 90 days. Logs older than\n  the retention "
        "window are deleted nightly and cannot be restored."
    ),
    "The “Team” plan — launched in 2023 — keeps exports for 7 days; it's cheaper.",
]


@pytest.mark.parametrize(
    "quote",
    [
        "Audit log retention on the Enterprise plan is 90 days.",
        "  logs older than the retention window are DELETED nightly  ",  # case and whitespace
        "Logs older than the retention window",  # line break in context
        '"Audit log retention on the Enterprise plan is 90 days"',  # wrapping quotes stripped
        "“Audit log retention on the Enterprise plan is 90 days”",  # typographic wrappers
        'The "Team" plan - launched in 2023 - keeps exports',  # ASCII for “ ” and —
        "The “Team” plan – launched in 2023 ― keeps exports",  # other dash variants
        "it’s cheaper",  # ’ for '
        "ｋｅｅｐｓ ｅｘｐｏｒｔｓ",  # NFKC full width
        "re\u00adten\u200btion window",  # soft hyphen, zero width
        "Audit log retention on the Enterprise\u00a0plan",  # no-break space
    ],
)
def test_found_after_normalisation(quote: str) -> None:
    assert quote_found(quote, CONTEXT)


@pytest.mark.parametrize(
    "quote",
    [
        None,
        "",
        "   ",
        "Logs are deleted automatically.",  # the seed's loose implication
        "Audit log retention ... is 90 days",  # no ellipsis elisions
        "cannot be restored. The “Team” plan",  # stitched across two documents
        "Audit logs are retained for 90 days",  # paraphrase
    ],
)
def test_not_found(quote: str | None) -> None:
    assert not quote_found(quote, CONTEXT)


def test_escaped_markup_in_a_quote_matches_the_raw_context() -> None:
    context = ["Use </document> tags & stay calm"]
    assert quote_found("Use &lt;/document> tags &amp; stay calm", context)
    assert normalise_for_match("A\tB\n\nC") == "a b c"
