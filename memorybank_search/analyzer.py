"""`TextAnalyzer`: the one tokenizer every search engine uses, at write time and at query time.

What a text becomes, step by step:

1. **Normalization.** NFKC (full-width `Q3` is `q3`, the `ﬁ` ligature is `fi`), case folding
   (`Straße` is `strasse`), and accent folding for Latin, Greek and Cyrillic letters, so `cafe`
   finds `café` (`ø æ œ ł đ ð þ` are spelled out too). Marks on other scripts are kept: a
   Japanese dakuten changes the word. Curly apostrophes and Unicode hyphens become ASCII.
2. **Splitting.** A word is a run of letters and digits; words joined by `-`, `.`, `_` or an
   apostrophe form a compound, which yields its joined form and then its parts (parts of one
   letter are dropped, digits kept): `e-mail` -> `email mail`, `node.js` -> `nodejs node js`,
   `user_id` -> `userid user id`, `covid-19` -> `covid19 covid 19`, `O'Reilly` -> `oreilly
   reilly`. Dotted numbers keep their dots: `3.11` -> `3.11 3 11`. A possessive `'s` is dropped
   (`Alice's` -> `alice`); other English contractions stay whole (`don't`, `she'll`: never
   `shell`). One or two letters followed by `++` or `#` keep the symbol: `c++`, `c#`, `f#`, `g++`.
   Short words are kept: `Go` -> `go`, `AI` -> `ai`, `Q3` -> `q3`.
3. **Stemming.** Words of three or more ASCII letters go through the Snowball English stemmer:
   `deploys`, `deployed`, `deploying`, `deployment` -> `deploy`. Words with digits or symbols,
   and other scripts, are left as they are.
4. **Symbols.** Emoji and other non-ASCII symbols (`🚀`, `❤️`, `€`, `→`) are terms of their own,
   one per symbol; a flag (two regional indicators, `🇯🇵`) is one term. Skin-tone modifiers,
   variation selectors and zero-width joiners are dropped, so `👍🏽` is `👍` and `❤️` is `❤`.
   ASCII punctuation is not a term.
5. **CJK.** Han, Hiragana, Katakana and Hangul runs are split where the script changes (a cheap
   stand-in for Japanese word boundaries), then each piece of two or more characters yields its
   character bigrams: `ラーメン` -> `ラー ーメ メン`. A one-character piece is its own term.
   Documents also hold every character as a unigram, so a one-character query (`猫`) finds a
   longer run; queries of two or more characters use the bigrams only.
6. **Queries** drop `memorybank_search.stopwords.STOPWORDS` ("what did I say about ..."), compared
   before stemming, and repeats, and keep their first `QUERY_TERMS_MAX` (64) terms: a question's words
   (LoCoMo's questions have at most 15), where a pasted paragraph of Han is 448 bigrams, each a full-text look-up
   and a term to count in every candidate (ADR 0045). A query made only of stopwords keeps them, so it
   still finds something. Every query term is one of the document terms of the same text.
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from collections.abc import Iterator
from typing import Any, NamedTuple

from memorybank_search.stopwords import STOPWORDS

#: Bump whenever the terms any text yields change: stored terms of an older version are re-indexed.
#: 2: emoji and other symbols became terms.
ANALYZER_VERSION = 2
#: Terms a query keeps at most, its first (only queries: a document keeps every term, `limits.INDEXED_TERMS_MAX`).
QUERY_TERMS_MAX = 64

#: Letters that do not decompose into a base letter and a mark, spelled out after case folding.
_SPELLED_OUT = str.maketrans(
    {
        "ø": "o",
        "æ": "ae",
        "œ": "oe",
        "ł": "l",
        "đ": "d",
        "ð": "d",
        "þ": "th",
        "\u0131": "i",  # dotless i
        "\u2019": "'",  # right single quotation mark: the apostrophe phones and editors type
        "\u2018": "'",
        "\u02bc": "'",
        "\u2010": "-",  # hyphen
        "\u2011": "-",  # non-breaking hyphen
    }
)

_SPELLED_OUT_CHARACTER = re.compile("[" + "".join(re.escape(chr(code)) for code in _SPELLED_OUT) + "]")

#: CJK scripts, each its own class so a run splits where the script changes.
_SCRIPTS = (
    ("han", "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f\u3005\u3007"),
    ("hiragana", "\u3041-\u309f"),
    ("katakana", "\u30a0-\u30ff\u31f0-\u31ff"),
    ("hangul", "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"),
)
_CJK_RANGES = "".join(ranges for _, ranges in _SCRIPTS)
_CJK_RUN = re.compile(f"([{_CJK_RANGES}]+)")
_SCRIPT_PIECE = re.compile("|".join(f"[{ranges}]+" for _, ranges in _SCRIPTS))
_CJK_CHARACTER = re.compile(f"[{_CJK_RANGES}]")
#: The scripts whose marks fold away: Latin, Greek and Cyrillic, with their extensions (code point ranges).
_FOLDABLE_RANGES = ((0x0000, 0x052F), (0x1E00, 0x1FFF))

#: A compound: letter/digit runs joined by single `' . - _`; then an optional `++`/`#` suffix.
_COMPOUND_PATTERN = r"[^\W_]+(?:['.\-_][^\W_]+)*(?:\+\+|#(?!\w))?"
_COMPOUND = re.compile(_COMPOUND_PATTERN)
#: In text that is not plain ASCII: a compound, a flag (two regional indicators), or any other
#: single non-ASCII character that is neither a word character nor a space (a symbol candidate). The soft hyphen and
#: the zero-width and word-joining characters are never symbols: left out here, a text of letters between them is
#: not twice as many things to look up (ADR 0041).
_FLAG_OR_SYMBOL = r"|[\U0001F1E6-\U0001F1FF]{2}|[^\w\s\x00-\x7f\u00ad\u200b-\u200f\u2060-\u2064\ufeff]"
_WORD_OR_SYMBOL = re.compile(_COMPOUND_PATTERN + _FLAG_OR_SYMBOL)
#: What `_CJK_RUN.split` then `_SCRIPT_PIECE` and `_WORD_OR_SYMBOL` find, in one pass over the whole text: a CJK
#: piece, or a compound, flag or symbol made of characters outside the CJK runs (the letters and the `#` suffix's
#: look-ahead leave CJK characters out, as the end of a segment did).
_DOCUMENT_ITEM = re.compile(
    _COMPOUND_PATTERN.replace(r"[^\W_]", f"[^\\W_{_CJK_RANGES}]").replace(r"(?!\w)", f"(?![^\\W{_CJK_RANGES}])")
    + "|"
    + _SCRIPT_PIECE.pattern
    + _FLAG_OR_SYMBOL  # after the CJK pieces: a katakana piece holds `・`, which is neither a word nor a space
)
#: Unicode categories of the characters that become symbol terms: other, math and currency symbols.
_SYMBOL_CATEGORIES = frozenset({"So", "Sm", "Sc"})
_JOINER = re.compile(r"['.\-_]")
_SYMBOL_WORD = re.compile(r"[a-z]{1,2}(?:\+\+|#)")
_DIGITS = re.compile(r"[0-9]+")
#: Shorter words are left alone (`ai`, `go` and `us` must stay themselves).
_MIN_STEMMED = 3
#: English clitics that keep a contraction whole (`'s` is handled apart: it is dropped).
_CLITICS = frozenset({"t", "re", "ve", "ll", "d", "m"})

#: Stems are cached: memories reuse a small vocabulary and the pure-Python stemmer is slow.
_STEM_CACHE_SIZE = 1 << 16


class Token(NamedTuple):
    """One term the analyzer produced, with what it was made from."""

    #: The term as stored and looked up.
    term: str
    #: The normalized, unstemmed word it came from (what stopwords are compared with).
    surface: str
    #: True for a CJK unigram that only documents hold (queries use the bigrams of that run).
    document_only: bool = False


class TextAnalyzer:
    """The analyzer described in this module's docstring; stateless and thread-safe."""

    def document_terms(self, text: str) -> list[str]:
        """Every term of `text` in order, repeats kept (they count toward term frequency)."""
        # The terms of `tokens(text)`, in one pass of C: every save and every import line comes through here, and a
        # text at the bounds can hold 16,000 terms. One regex finds the words, symbols and CJK pieces in order;
        # each distinct one is expanded into its terms once, in Python; the terms in order are then dictionary
        # look-ups chained in C, however many repeats (a per-word Python loop cost 0.5 µs a word).
        normalized = normalize(text)
        if normalized.isascii():
            found = _COMPOUND.findall(normalized)
            expanded = {
                word: (_plain_term(word),) if word.isalnum() else _compound_terms(word) for word in dict.fromkeys(found)
            }
        else:
            found = _DOCUMENT_ITEM.findall(normalized)
            expanded = {item: _item_terms(item) for item in dict.fromkeys(found)}
        return list(itertools.chain.from_iterable(map(expanded.__getitem__, found)))

    def query_terms(self, text: str) -> list[str]:
        """The terms to look up for `text`: no stopwords, no repeats, in order, the first `QUERY_TERMS_MAX`."""
        kept: dict[str, None] = {}
        stopwords: list[str] = []  # needed only while no other term is found
        for token in tokens(text):
            if token.document_only:
                continue
            if token.surface not in STOPWORDS:
                kept[token.term] = None
                if len(kept) == QUERY_TERMS_MAX:
                    break  # the rest of a long text is not analyzed
            elif not kept:
                stopwords.append(token.term)
        return list(kept) if kept else list(dict.fromkeys(stopwords))[:QUERY_TERMS_MAX]


def tokens(text: str) -> Iterator[Token]:
    """The analyzer's tokens for `text`, in order; never raises on any string."""
    normalized = normalize(text)
    # With a capturing group, split alternates: other text, CJK run, other text, ...
    for index, segment in enumerate(_CJK_RUN.split(normalized)):
        if index % 2:
            yield from _cjk_tokens(segment)
        else:
            for word in _words(segment):
                # Most words are plain letters or digits: skip the compound rules for them.
                if word.isalnum():
                    yield _word_token(word)
                else:
                    yield from _compound_tokens(word)


def _words(segment: str) -> list[str]:
    """The compounds and symbols of a non-CJK segment, in order."""
    if segment.isascii():
        return _COMPOUND.findall(segment)
    return [word for word in _WORD_OR_SYMBOL.findall(segment) if word[0].isalnum() or _is_symbol(word)]


def _is_symbol(found: str) -> bool:
    # A flag, or a single non-word character: kept only when it is a symbol (emoji, currency,
    # math), not punctuation, a joiner, a variation selector or a skin-tone modifier.
    return len(found) > 1 or unicodedata.category(found) in _SYMBOL_CATEGORIES


def normalize(text: str) -> str:
    """NFKC, case folding, accent folding of Latin/Greek/Cyrillic, ASCII apostrophes and hyphens."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    if not folded.isascii():
        folded = _fold_accents(folded)
        if _SPELLED_OUT_CHARACTER.search(folded):  # a search in C; translating looks up every character
            folded = folded.translate(_SPELLED_OUT)
    return folded


def _fold_accents(text: str) -> str:
    # Latin, Greek and Cyrillic (with their extensions) lose the marks after them; other scripts keep theirs. A few
    # regexes over the decomposed text, no Python per character (a per-character loop cost a text of 72,000 CJK
    # characters 17 ms for marks it did not have).
    decomposed = unicodedata.normalize("NFD", text)
    marks = _marks()
    beyond = ""
    if marks.beyond_basic.search(decomposed):
        # Marks outside the Basic Multilingual Plane are rare: looked for among those characters only, and a pattern
        # made for the few found (a class of all of them is a list the regex engine walks for every character).
        found = {character for character in marks.beyond_basic.findall(decomposed) if unicodedata.combining(character)}
        beyond = "".join(sorted(found))
    if beyond:
        decomposed = _marks_after_foldable(beyond).sub("", decomposed)
    elif marks.basic.search(decomposed):
        decomposed = marks.after_foldable.sub("", decomposed)
    return unicodedata.normalize("NFC", decomposed)


class _Marks(NamedTuple):
    #: A combining character (canonical combining class other than 0) of the Basic Multilingual Plane.
    basic: re.Pattern[str]
    #: A character beyond that plane.
    beyond_basic: re.Pattern[str]
    #: A run of the first plane's marks right after a letter whose marks fold away: removed by `sub("")`.
    after_foldable: re.Pattern[str]
    #: The parts of `after_foldable`: its look-behind's class, and its marks.
    bases: str
    marks: str


@functools.cache
def _marks() -> _Marks:
    """The combining characters of this Python's Unicode database below U+10000 and the patterns made of them, read
    once (about 5 ms, on the first text that is not ASCII).

    A letter whose marks fold away is a character of those scripts' ranges that is not itself a mark (U+0300-U+036F
    are marks inside them): a mark never decides what happens to the marks after it, as in the per-character loop
    this replaces.
    """
    codes = [code for code in range(0x10000) if unicodedata.combining(chr(code))]
    bases: list[str] = []
    for low, high in _FOLDABLE_RANGES:
        start = low
        for code in (code for code in codes if low <= code <= high):
            if start < code:
                bases.append(_class_range(start, code - 1))
            start = code + 1
        if start <= high:
            bases.append(_class_range(start, high))
    marks = "".join(re.escape(chr(code)) for code in codes)
    return _Marks(
        basic=re.compile(f"[{marks}]"),
        beyond_basic=re.compile("[\U00010000-\U0010ffff]"),
        after_foldable=re.compile(f"(?<=[{''.join(bases)}])[{marks}]+"),
        bases="".join(bases),
        marks=marks,
    )


@functools.lru_cache(maxsize=256)
def _marks_after_foldable(beyond: str) -> re.Pattern[str]:
    """`_Marks.after_foldable` for a text that also holds the marks `beyond` the first plane (never themselves
    letters of the folded scripts, whose ranges lie inside it)."""
    marks = _marks()
    return re.compile(f"(?<=[{marks.bases}])(?:[{marks.marks}]|[{re.escape(beyond)}])+")


def _class_range(low: int, high: int) -> str:
    return f"{re.escape(chr(low))}-{re.escape(chr(high))}"


def _compound_tokens(word: str) -> Iterator[Token]:
    itself, words = _compound_words(word)
    if itself is not None:
        yield Token(itself, itself)
        return
    yield from map(_word_token, words)


def _compound_words(word: str) -> tuple[str | None, list[str]]:
    """How a compound is indexed: (its one term, []) when that term is the compound as written (a symbol, a clitic
    form); else (None, the words whose terms it gives, in order: the joined word, then each part that is a term; or
    its one word)."""
    if _SYMBOL_WORD.fullmatch(word) or not word[0].isalnum():
        # `c++`, `c#`; or an emoji, another symbol or a flag: the term is the symbol itself.
        return word, []
    word = word.rstrip("+#")
    if "'" in word:
        base, _, clitic = word.rpartition("'")
        if clitic == "s":
            word = base
        elif clitic in _CLITICS and "'" not in base and not _JOINER.search(base):
            return word, []
    # Filters in C, each distinct part judged once: a compound can be a whole field of thousands of parts.
    parts = list(filter(None, _JOINER.split(word)))
    if len(parts) == 1:
        return None, parts
    distinct = dict.fromkeys(parts)
    dotted_number = all(_DIGITS.fullmatch(part) for part in distinct) and set(_JOINER.findall(word)) == {"."}
    joined = ".".join(parts) if dotted_number else "".join(parts)
    is_term = {part: len(part) > 1 or part.isdigit() for part in distinct}
    return None, [joined, *filter(is_term.__getitem__, parts)]


def _word_token(word: str) -> Token:
    return Token(_plain_term(word), word)


@functools.lru_cache(maxsize=_STEM_CACHE_SIZE)
def _plain_term(word: str) -> str:
    stemmable = len(word) >= _MIN_STEMMED and word.isascii() and word.isalpha()
    return stem(word) if stemmable else word


def _item_terms(item: str) -> tuple[str, ...]:
    """The terms of one thing `_DOCUMENT_ITEM` found: a CJK piece's bigrams then its characters, a word's term or a
    compound's terms, a symbol; nothing for punctuation and other characters that are not terms."""
    if _CJK_CHARACTER.match(item):
        return (*map(str.__add__, item, item[1:]), *item)
    if item.isalnum():
        return (_plain_term(item),)
    if not item[0].isalnum() and not _is_symbol(item):
        return ()
    return _compound_terms(item)


def _compound_terms(word: str) -> tuple[str, ...]:
    """`_compound_tokens`' terms, its words' terms looked up in C: one compound can be a whole field of thousands of
    parts (`é.éé.éé.` repeated), and a `Token` a part cost more than the rest of the save's analysis."""
    itself, words = _compound_words(word)
    return (itself,) if itself is not None else tuple(map(_plain_term, words))


def _cjk_tokens(run: str) -> Iterator[Token]:
    for piece in _SCRIPT_PIECE.findall(run):
        if len(piece) == 1:
            yield Token(piece, piece)
            continue
        for start in range(len(piece) - 1):
            bigram = piece[start : start + 2]
            yield Token(bigram, bigram)
        for character in piece:
            yield Token(character, character, document_only=True)


# The pure-Python Snowball stemmer by name: `snowballstemmer.stemmer()` switches to PyStemmer when
# that is installed, whose bundled Snowball may stem some words differently, and every install
# must produce the same terms as the index it reads. Made on first use: importing snowballstemmer loads
# every language's stemmer, which an admin command that never stems should not wait for.
@functools.cache
def _english() -> Any:
    from snowballstemmer.english_stemmer import EnglishStemmer

    return EnglishStemmer()


@functools.lru_cache(maxsize=_STEM_CACHE_SIZE)
def stem(word: str) -> str:
    """The Snowball English stem of a lower-case ASCII word."""
    stemmed: str = _english().stemWord(word)
    return stemmed
