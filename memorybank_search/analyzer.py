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
   before stemming, and repeats. A query made only of stopwords keeps them, so it still finds
   something. Every query term is one of the document terms of the same text.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator
from typing import Any, NamedTuple

from memorybank_search.stopwords import STOPWORDS

#: Bump whenever the terms any text yields change: stored terms of an older version are re-indexed.
#: 2: emoji and other symbols became terms.
ANALYZER_VERSION = 2

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

#: CJK scripts, each its own class so a run splits where the script changes.
_SCRIPTS = (
    ("han", "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f\u3005\u3007"),
    ("hiragana", "\u3041-\u309f"),
    ("katakana", "\u30a0-\u30ff\u31f0-\u31ff"),
    ("hangul", "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"),
)
_CJK_RUN = re.compile("([" + "".join(ranges for _, ranges in _SCRIPTS) + "]+)")
_SCRIPT_PIECE = re.compile("|".join(f"[{ranges}]+" for _, ranges in _SCRIPTS))

#: A compound: letter/digit runs joined by single `' . - _`; then an optional `++`/`#` suffix.
_COMPOUND_PATTERN = r"[^\W_]+(?:['.\-_][^\W_]+)*(?:\+\+|#(?!\w))?"
_COMPOUND = re.compile(_COMPOUND_PATTERN)
#: In text that is not plain ASCII: a compound, a flag (two regional indicators), or any other
#: single non-ASCII character that is neither a word character nor a space (a symbol candidate).
_WORD_OR_SYMBOL = re.compile(_COMPOUND_PATTERN + r"|[\U0001F1E6-\U0001F1FF]{2}|[^\w\s\x00-\x7f]")
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
        # The terms of `tokens(text)`, with a fast path for plain words: every save and every
        # import line comes through here.
        terms: list[str] = []
        for index, segment in enumerate(_CJK_RUN.split(normalize(text))):
            if index % 2:
                terms.extend(_cjk_terms(segment))
                continue
            for word in _words(segment):
                if word.isalnum():
                    terms.append(_plain_term(word))
                else:
                    terms.extend(token.term for token in _compound_tokens(word))
        return terms

    def query_terms(self, text: str) -> list[str]:
        """The terms to look up for `text`: no stopwords, no repeats, in order."""
        found = [token for token in tokens(text) if not token.document_only]
        kept = [token.term for token in found if token.surface not in STOPWORDS]
        return list(dict.fromkeys(kept or [token.term for token in found]))


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
        folded = _fold_accents(folded).translate(_SPELLED_OUT)
    return folded


def _fold_accents(text: str) -> str:
    kept = []
    strip_marks = False
    for character in unicodedata.normalize("NFD", text):
        if unicodedata.combining(character):
            if strip_marks:
                continue
        else:
            code = ord(character)
            # Latin, Greek and Cyrillic (with their extensions) lose their marks; other scripts keep them.
            strip_marks = code < 0x0530 or 0x1E00 <= code < 0x2000
        kept.append(character)
    return unicodedata.normalize("NFC", "".join(kept))


def _compound_tokens(word: str) -> Iterator[Token]:
    if _SYMBOL_WORD.fullmatch(word) or not word[0].isalnum():
        # `c++`, `c#`; or an emoji, another symbol or a flag: the term is the symbol itself.
        yield Token(word, word)
        return
    word = word.rstrip("+#")
    if "'" in word:
        base, _, clitic = word.rpartition("'")
        if clitic == "s":
            word = base
        elif clitic in _CLITICS and "'" not in base and not _JOINER.search(base):
            yield Token(word, word)
            return
    parts = [part for part in _JOINER.split(word) if part]
    if len(parts) == 1:
        yield _word_token(parts[0])
        return
    dotted_number = all(_DIGITS.fullmatch(part) for part in parts) and set(_JOINER.findall(word)) == {"."}
    joined = ".".join(parts) if dotted_number else "".join(parts)
    yield _word_token(joined)
    for part in parts:
        if len(part) > 1 or part.isdigit():
            yield _word_token(part)


def _word_token(word: str) -> Token:
    return Token(_plain_term(word), word)


@functools.lru_cache(maxsize=_STEM_CACHE_SIZE)
def _plain_term(word: str) -> str:
    stemmable = len(word) >= _MIN_STEMMED and word.isascii() and word.isalpha()
    return stem(word) if stemmable else word


def _cjk_terms(run: str) -> list[str]:
    """The terms of `_cjk_tokens(run)`, in the same order, without a `Token` per term: a document of 72,000 CJK
    characters has 144,000 terms (issue 27's adversarial benchmark: 98 ms in Tokens, a sixth of that in slices)."""
    terms: list[str] = []
    for piece in _SCRIPT_PIECE.findall(run):
        if len(piece) > 1:
            terms += [piece[start : start + 2] for start in range(len(piece) - 1)]
        terms += piece
    return terms


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
