"""The shared analyzer: what each kind of text becomes, and properties that hold for any text."""

from __future__ import annotations

import hashlib
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memorybank_search import ANALYZER_VERSION, STOPWORDS, TextAnalyzer, tokens
from memorybank_search import analyzer as analyzer_module
from memorybank_search.analyzer import QUERY_TERMS_MAX, _fold_accents

analyzer = TextAnalyzer()

#: Text drawn from every Unicode category, plus the characters the splitter treats specially.
any_text = st.text(
    alphabet=st.one_of(st.characters(), st.sampled_from(list("'.-_+#\u2019 \u2010東京ラーメンがㄱ한국어 cafééÉ"))),
    max_size=200,
)


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("Go", ["go"]),
        ("AI", ["ai"]),
        ("Q3 planning", ["q3", "plan"]),
        ("deploys deployed deploying deployment", ["deploy", "deploy", "deploy", "deploy"]),
        ("café CAFÉ Cafe", ["cafe", "cafe", "cafe"]),
        ("Straße \uff31\uff13 ﬁle", ["strass", "q3", "file"]),
        ("C++ and C# or F#", ["c++", "and", "c#", "or", "f#"]),
        ("node.js", ["nodej", "node", "js"]),
        ("e-mail email", ["email", "mail", "email"]),
        ("don't", ["don't"]),
        ("don't# she'll#", ["don't", "she'll"]),
        ("she'll see shell", ["she'll", "see", "shell"]),
        ("Alice's cat", ["alic", "cat"]),
        ("O'Reilly", ["oreilli", "reilli"]),
        ("user_id", ["userid", "user", "id"]),
        ("covid-19", ["covid19", "covid", "19"]),
        ("python 3.11", ["python", "3.11", "3", "11"]),
        ("launch 🚀 done", ["launch", "🚀", "done"]),
        ("❤️ 👍🏽 👨\u200d👩\u200d👧", ["❤", "👍", "👨", "👩", "👧"]),
        ("🇯🇵 trip", ["🇯🇵", "trip"]),
        ("€5 → «done» — ok…", ["€", "5", "→", "done", "ok"]),
        ("x-ray", ["xray", "ray"]),
        ("hello, world!", ["hello", "world"]),
        ("ラーメン", ["ラー", "ーメ", "メン", "ラ", "ー", "メ", "ン"]),
        ("猫", ["猫"]),
        ("東京で", ["東京", "東", "京", "で"]),
        ("Москва́", ["москва"]),
        ("", []),
        ("  ...  --- ''' ", []),
    ],
)
def test_document_terms_of_typical_text(text: str, terms: list[str]) -> None:
    assert analyzer.document_terms(text) == terms


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("what did I say about lighthouses and keepers?", ["lighthous", "keeper"]),
        ("do you remember my Go project", ["go", "project"]),
        ("deployment deployment", ["deploy"]),
        ("ラーメン", ["ラー", "ーメ", "メン"]),
        ("猫", ["猫"]),
        # Only stopwords: keep them rather than search for nothing.
        ("what is it", ["what", "is", "it"]),
        ("The Who", ["the", "who"]),
        ("", []),
    ],
)
def test_query_terms_drop_stopwords_and_repeats(text: str, terms: list[str]) -> None:
    assert analyzer.query_terms(text) == terms


@pytest.mark.parametrize(
    ("document", "query"),
    [
        ("The service deploys nightly", "deployment"),
        ("I drink café au lait", "cafe"),
        ("send me an e-mail", "email"),
        ("send me an email", "e-mail"),
        ("我的猫很可爱", "猫"),
        ("我的猫很可爱", "可爱"),
        ("東京でラーメンを食べた", "ラーメン"),
        ("the Q3 roadmap", "q3"),
        ("We write Go and C++", "c++"),
        ("Node.js services", "nodejs"),
    ],
)
def test_a_query_finds_what_people_mean(document: str, query: str) -> None:
    assert set(analyzer.query_terms(query)) & set(analyzer.document_terms(document))


def test_a_one_character_cjk_query_does_not_match_unrelated_bigrams() -> None:
    assert not set(analyzer.query_terms("犬")) & set(analyzer.document_terms("我的猫很可爱"))


@settings(max_examples=300)
@given(any_text)
def test_analysis_never_raises_and_is_deterministic(text: str) -> None:
    assert analyzer.document_terms(text) == analyzer.document_terms(text)
    assert analyzer.query_terms(text) == analyzer.query_terms(text)


@settings(max_examples=300)
@given(any_text)
def test_every_term_is_non_empty_lowercase_and_free_of_whitespace(text: str) -> None:
    for term in analyzer.document_terms(text):
        assert term
        assert term == term.casefold() or not term.isascii()
        assert not any(character.isspace() for character in term)


@settings(max_examples=300)
@given(any_text)
def test_query_terms_are_document_terms_of_the_same_text_less_stopwords(text: str) -> None:
    found = list(tokens(text))
    content = {t.term for t in found if t.surface not in STOPWORDS}
    query = analyzer.query_terms(text)
    assert len(query) == len(set(query))
    if content:
        assert set(query) <= content
    else:
        assert set(query) <= {t.term for t in found}


@settings(max_examples=300)
@given(any_text)
def test_a_query_keeps_its_first_terms_up_to_the_bound(text: str) -> None:
    found = [t for t in tokens(text) if not t.document_only]
    content = list(dict.fromkeys(t.term for t in found if t.surface not in STOPWORDS))
    everything = list(dict.fromkeys(t.term for t in found))
    assert analyzer.query_terms(text) == (content or everything)[:QUERY_TERMS_MAX]


def test_a_pasted_paragraph_is_looked_up_by_its_first_terms() -> None:
    words = [f"harbor{n}" for n in range(200)]
    assert analyzer.query_terms(" ".join(words)) == words[:QUERY_TERMS_MAX]
    # 512 Han characters are 511 bigrams: a search looks up the first 64, as it embeds the first 64 tokens.
    han = "".join(chr(0x4E00 + (n * 37) % 20_000) for n in range(512))
    assert analyzer.query_terms(han) == [han[n : n + 2] for n in range(QUERY_TERMS_MAX)]


@settings(max_examples=200)
@given(any_text, any_text)
def test_analysis_of_separated_texts_concatenates(first: str, second: str) -> None:
    # Terms never span a space: a memory's fields can be analyzed apart or together.
    assert analyzer.document_terms(first + " " + second) == [
        *analyzer.document_terms(first),
        *analyzer.document_terms(second),
    ]


@pytest.mark.parametrize("emoji", ["🚀", "❤️", "❤", "👍🏽", "🇯🇵"])
def test_an_emoji_query_finds_the_text_holding_that_emoji(emoji: str) -> None:
    query = analyzer.query_terms(emoji)
    assert query
    assert set(query) <= set(analyzer.document_terms(f"shipped it {emoji} yesterday"))
    assert not set(query) & set(analyzer.document_terms("shipped it yesterday 🎉"))


def test_the_scheme_version_is_bumped_whenever_the_output_changes() -> None:
    # A fingerprint of the analyzer's output on a fixed text. If this fails, the terms changed:
    # bump ANALYZER_VERSION (stored terms of the older version get re-indexed), then record both.
    sample = (
        "Go AI Q3 C++ C# node.js e-mail don't she'll Alice's O'Reilly user_id covid-19 3.11 "
        "deploys deployment café Straße \uff31\uff13 東京でラーメンを食べた 我的猫很可爱 한국어 Москва́ "
        "what did I say about the lighthouse keepers and their boats? 🚀 ❤️ 👍🏽 🇯🇵 €5 → «done»"
    )
    output = repr((analyzer.document_terms(sample), analyzer.query_terms(sample)))
    assert (ANALYZER_VERSION, hashlib.sha256(output.encode()).hexdigest()[:16]) == (2, "a562555dd41c2b4e")


def test_a_compound_of_thousands_of_parts_gives_the_joined_word_then_each_part_that_is_a_term() -> None:
    # A whole field can be one compound (issue 27's fuzzer: `é.éé.éé.` repeated); its parts are judged once each.
    compound = ".".join(["é", "éé", "éé"] * 1000)
    assert analyzer.document_terms(compound) == ["eeeee" * 1000, *(["ee"] * 2000)]
    assert analyzer.document_terms("3.1.4") == ["3.1.4", "3", "1", "4"]


@settings(max_examples=300)
@given(any_text)
def test_the_fast_document_path_yields_exactly_the_tokens_terms(text: str) -> None:
    assert analyzer.document_terms(text) == [token.term for token in tokens(text)]


def _fold_accents_per_character(text: str) -> str:
    """The accent folding as first written, one character at a time: the reference the regexes must match."""
    kept = []
    strip_marks = False
    for character in unicodedata.normalize("NFD", text):
        if unicodedata.combining(character):
            if strip_marks:
                continue
        else:
            code = ord(character)
            strip_marks = code < 0x0530 or 0x1E00 <= code < 0x2000
        kept.append(character)
    return unicodedata.normalize("NFC", "".join(kept))


#: Combining marks of every kind, beside the letters they follow: Latin, Devanagari, a mark outside the BMP.
marked_text = st.text(
    alphabet=st.one_of(
        st.characters(),
        st.sampled_from(list("aeoEIn\u0301\u0300\u0308\u0327\u0483\u05b0\u093f\u094d\u0915\u20d7\U0001d165\u3099か")),
    ),
    max_size=120,
)


@settings(max_examples=500)
@given(marked_text)
def test_accents_fold_only_after_latin_greek_and_cyrillic_letters(text: str) -> None:
    folded = unicodedata.normalize("NFKC", text).casefold()

    assert _fold_accents(folded) == _fold_accents_per_character(folded)


@pytest.mark.parametrize(
    "unit", ["京京", "ラーメン東京 ", "a\u200b", "aé ", "café don't c++ node.js ", "東京abc "], ids=repr
)
def test_the_python_work_of_a_text_grows_with_its_distinct_words_not_its_length(
    unit: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 27: a save at the bounds of one short unit repeated (CJK, zero-width spaces between letters) made the
    # analyzer's Python run once per word or character. Counted in steps, not timed: what runs in Python per thing
    # found (`_item_terms`) is the same for a text and one twice its size.
    calls: list[str] = []
    expand = analyzer_module._item_terms

    def counted(item: str) -> tuple[str, ...]:
        calls.append(item)
        return expand(item)

    monkeypatch.setattr(analyzer_module, "_item_terms", counted)
    half, whole = ((unit * size)[:size] for size in (4000, 8000))

    analyzer.document_terms(half)
    steps_half = len(calls)
    calls.clear()
    terms = analyzer.document_terms(whole)

    assert len(calls) <= steps_half + 2  # the cut at the end may leave one new item
    assert len(terms) > 2000  # and the terms themselves are all there


_INVISIBLE = "\u00ad\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063\u2064\ufeff"


@settings(max_examples=300)
@given(st.text(alphabet=st.sampled_from([*_INVISIBLE, *"aZé9#+-.'_ ", "東", "京", "ラ", "🚀", "👩", "€", "\u0301"])))
def test_invisible_characters_part_words_as_a_space_does(text: str) -> None:
    # They are never terms (ADR 0041 leaves them out of the symbol candidates, so a text of letters between them is
    # not twice the work): wherever they stand, the terms are those of the text with a space there instead.
    spaced = text.translate({ord(character): " " for character in _INVISIBLE})
    assert analyzer.document_terms(text) == analyzer.document_terms(spaced)
    assert analyzer.query_terms(text) == analyzer.query_terms(spaced)
