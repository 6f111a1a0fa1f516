"""`OwnerIndexer`: a memory's owner-scoped search document, what every engine indexes and searches.

Each memory's search fields (content, tags, context snippets: `search_fields`) are analyzed
by `memorybank_search.analyzer.TextAnalyzer`, and every term becomes one *tagged token*: an
8-character tag derived from the owner's `user_id`, then the term. The SQL engines store the
tokens in `memory.search_terms`; a full-text index over that column therefore keeps one posting
list per (owner, term), and a
query reads only the owner's lists, however many rows other users hold.

A token is made only of `[0-9a-z_]`, which every full-text tokenizer (InnoDB's, FTS5's
unicode61 with `_` as a token character) keeps as one word, is never shorter than InnoDB's
3-character minimum and never longer than its 84-character maximum, and is never an InnoDB
stopword. Terms outside `[0-9a-z]` (CJK, `c++`, `3.11`, other scripts) or too long are hashed:

    plain:   <tag><term>                 e.g. `k3v9x0qago` for `go`
    hashed:  <tag>_<13 base36 of BLAKE2b(term)>

The tag only makes posting lists small. It is not the access control: two owners whose tags
collide share posting lists (a little slower), and every query also says `user_id = :owner`.

The in-memory engine indexes the same tokens, so every engine ranks the same candidates with the
same numbers (`memorybank_search.candidates`).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import re
from collections.abc import Iterable

import attrs

from memorybank_core import BlindIndex, Memory, limits
from memorybank_search.analyzer import ANALYZER_VERSION, TextAnalyzer

#: Bump when the search document below changes: the token encoding, or which terms it keeps (the analyzer has its
#: own version). 2: at most `limits.INDEXED_TERMS_MAX` terms a memory (ADR 0041).
ENCODING_VERSION = 2
#: What `memory.search_version` holds for rows indexed by this code; older rows get re-indexed.
SEARCH_VERSION = ENCODING_VERSION * 1000 + ANALYZER_VERSION
TAG_LENGTH = 8
#: InnoDB's `innodb_ft_max_token_size` default: longer words are silently not indexed.
MAX_TOKEN_LENGTH = 84
_HASH_BYTES = 8
_PLAIN = re.compile(r"[0-9a-z]+")
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


#: Every two base-36 digits, in order of their value: a token's hash is written two digits a step.
_PAIRS = [high + low for high in _DIGITS for low in _DIGITS]


def _base36(number: int, width: int) -> str:
    """The low `width` base-36 digits of `number`, most significant first."""
    # Two digits a division: a save of CJK text can hash tens of thousands of distinct bigrams.
    chunks = []
    for _ in range(width // 2):
        number, pair = divmod(number, 36 * 36)
        chunks.append(_PAIRS[pair])
    if width % 2:
        chunks.append(_DIGITS[number % 36])
    return "".join(reversed(chunks))


@functools.lru_cache(maxsize=4096)
def owner_tag(user_id: str) -> str:
    """The owner's 8-character `[0-9a-z]` tag (36^8 ≈ 2.8e12 values), stable forever for a `user_id`."""
    digest = hashlib.blake2b(user_id.encode("utf-8"), digest_size=_HASH_BYTES).digest()
    return _base36(int.from_bytes(digest, "big"), TAG_LENGTH)


def encode_term(tag: str, term: str) -> str:
    """The tagged token stored and searched for `term` of the owner with `tag`."""
    return tag + _term_suffix(term)


@functools.lru_cache(maxsize=1 << 16)
def _term_suffix(term: str) -> str:
    if _PLAIN.fullmatch(term) and TAG_LENGTH + len(term) <= MAX_TOKEN_LENGTH:
        return term
    digest = hashlib.blake2b(term.encode("utf-8"), digest_size=_HASH_BYTES).digest()
    return "_" + _base36(int.from_bytes(digest, "big"), 13)


@attrs.frozen
class SearchDocument:
    """What the store writes beside a memory: its tagged tokens, their count and the scheme version."""

    search_terms: str
    doc_length: int
    search_version: int


def search_fields(memory: Memory) -> list[str]:
    """The texts a memory is found by, in order: its content, its tags, then its context snippets.

    Tags and snippets are what a person remembers a memory by as often as its wording.
    """
    return [memory.content, *memory.tags, *(context.snippet for context in memory.contexts)]


def document_terms(analyzer: TextAnalyzer, memory: Memory) -> list[str]:
    """The terms `memory` is indexed by, in order: its search fields' terms, at most `limits.INDEXED_TERMS_MAX`.

    Fields are analyzed one by one and only while the bound is not reached, so a field wholly past it costs nothing
    (ADR 0041): content and tags are always whole, snippets are cut in order.
    """
    fields = map(analyzer.document_terms, search_fields(memory))
    return list(itertools.islice(itertools.chain.from_iterable(fields), limits.INDEXED_TERMS_MAX))


def embedding_text(memory: Memory) -> str:
    """What hybrid search embeds for a memory: its search fields, one per line, content first.

    A model reads a bounded number of tokens (all-MiniLM-L6-v2: 256), so the content is never the part cut.
    """
    return "\n".join(search_fields(memory))


class OwnerIndexer:
    """Turns memories into search documents and queries into owner-scoped tokens, with the one analyzer.

    With a `blind_index` (encryption at rest, docs/security.md) every token is that index's keyed
    hash of (owner, term) instead of the readable owner tag + term: the full-text index still keeps
    one posting list per (owner, term), and BM25 reads the same counts, but the words are gone.
    While rows written under an earlier scheme remain (plaintext before `memorybank encrypt`, an
    old index key before `memorybank keys rotate`), `also_search` makes queries match them too.
    """

    def __init__(self, *, blind_index: BlindIndex | None = None) -> None:
        self.analyzer = TextAnalyzer()
        self.blind_index = blind_index
        self._query_schemes: tuple[BlindIndex | None, ...] = (blind_index,)

    def also_search(self, schemes: Iterable[BlindIndex | None]) -> None:
        """Match rows tokenized by `schemes` too (None: plaintext owner tags), besides the writing scheme."""
        self._query_schemes = tuple(dict.fromkeys((self.blind_index, *schemes)))

    @property
    def rewrite_pending(self) -> bool:
        """True while rows carry tokens of another scheme: a walk may be rewriting them as searches run."""
        return len(self._query_schemes) > 1

    def document(self, memory: Memory) -> SearchDocument:
        """The search document of `memory`: what the SQL engines store beside it. A retired memory's is empty:
        no query finds it (it stays readable by id), on every engine alike."""
        if memory.retired:
            return SearchDocument(search_terms="", doc_length=0, search_version=SEARCH_VERSION)
        terms = document_terms(self.analyzer, memory)
        if self.blind_index is None:
            # Each distinct term is encoded once; the tokens in order are then dictionary look-ups in C (`map`): a
            # save at the bounds can hold 270,000 terms (CJK text) of a few hundred distinct ones.
            tag = owner_tag(memory.user_id)
            encoded = {term: tag + _term_suffix(term) for term in dict.fromkeys(terms)}
            search_terms = " ".join(map(encoded.__getitem__, terms))
            return SearchDocument(search_terms=search_terms, doc_length=len(terms), search_version=SEARCH_VERSION)
        # Blind tokens in the index's stored form: sorted, so the row does not keep the words' order.
        search_terms = self.blind_index.document_terms(memory.user_id, terms)
        return SearchDocument(search_terms=search_terms, doc_length=len(terms), search_version=SEARCH_VERSION)

    def query_tokens(self, user_id: str, query: str) -> list[str]:
        """The owner's tokens for `query`, deduplicated, in order; empty when nothing is searchable."""
        return list(dict.fromkeys(token for group in self.query_token_groups(user_id, query) for token in group))

    def query_token_groups(self, user_id: str, query: str) -> list[tuple[str, ...]]:
        """Per query term, its tokens under every scheme searched (one while no rewrite is pending).

        A memory holds a term when it holds any of its tokens: how much of a query a memory's words
        answer (`SearchHit.coverage`) is counted per term, not per token.
        """
        terms = self.analyzer.query_terms(query)
        tag = owner_tag(user_id)
        return [
            tuple(
                dict.fromkeys(
                    encode_term(tag, term) if scheme is None else scheme.token(user_id, term)
                    for scheme in self._query_schemes
                )
            )
            for term in terms
        ]
