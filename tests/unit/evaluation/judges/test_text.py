from __future__ import annotations

from ragtrace.evaluation.judges.text import split_sentences, strip_citations, word_list, words


def test_latin_sentences_keep_decimals_and_abbreviations() -> None:
    text = 'Version 3.5 shipped, e.g. today. Really?! Yes… "Quoted." Done'
    assert split_sentences(text) == [
        "Version 3.5 shipped, e.g. today.",
        "Really?!",
        "Yes…",
        '"Quoted."',
        "Done",
    ]


def test_arabic_and_cjk_terminators_and_line_breaks() -> None:
    assert split_sentences("هل تعمل؟ نعم. ممتاز") == ["هل تعمل؟", "نعم.", "ممتاز"]
    assert split_sentences("中文。好的！end") == ["中文。", "好的！", "end"]
    assert split_sentences("- first item\n- second item\n\n") == ["- first item", "- second item"]


def test_words_are_unicode_normalised() -> None:
    assert words("Ｆｕｌｌ-width CAFÉ café") == {"full", "width", "café"}
    # harakat and tatweel are dropped, so vocalised and plain spellings match
    assert words("إِجَازَة سنـــوية") == words("إجازة سنوية") == {"إجازة", "سنوية"}
    assert word_list("the cat the") == ["the", "cat", "the"]


def test_citation_markers_are_removed() -> None:
    assert strip_citations("restored. [c-9930] and [1, 2] stay [not a citation]").split() == [
        "restored.",
        "and",
        "stay",
        "[not",
        "a",
        "citation]",
    ]


def test_ascii_words_read_as_the_unicode_path_reads_them() -> None:
    # word_list takes a regex path for ASCII text; every ASCII character between two letters
    # must split (or join) them as the general, per-character path does
    import unicodedata

    from ragtrace.evaluation.judges import text

    def general(s: str) -> list[str]:
        out, current = [], []
        for ch in unicodedata.normalize("NFKC", s).casefold() + " ":
            if unicodedata.category(ch)[0] in "LNM":
                current.append(ch)
            elif current:
                out.append("".join(current))
                current = []
        return out

    for code in range(128):
        sample = f"Ab{chr(code)}9z 'x_y' 1,000.5 E=mc2"
        assert text.word_list(sample) == general(sample), repr(chr(code))
