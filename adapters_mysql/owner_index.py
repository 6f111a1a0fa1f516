"""The owner-scoped search document, shared by the MySQL and SQLite owner-scoped engines.

Each memory's search fields (content, tags, context snippets: `memorybank_core.search_fields`)
are analyzed by `memorybank_text.TextAnalyzer`, and every term is stored in `memory.search_terms`
as one *tagged token*: an 8-character tag derived from the owner's `user_id`, then the term.
A full-text index over that column therefore keeps one posting list per (owner, term), and a
query reads only the owner's lists, however many rows other users hold.

A token is made only of `[0-9a-z_]`, which every full-text tokenizer (InnoDB's, FTS5's
unicode61 with `_` as a token character) keeps as one word, is never shorter than InnoDB's
3-character minimum and never longer than its 84-character maximum, and is never an InnoDB
stopword. Terms outside `[0-9a-z]` (CJK, `c++`, `3.11`, other scripts) or too long are hashed:

    plain:   <tag><term>                 e.g. `k3v9x0qago` for `go`
    hashed:  <tag>_<13 base36 of BLAKE2b(term)>

The tag only makes posting lists small. It is not the access control: two owners whose tags
collide share posting lists (a little slower), and every query also says `user_id = :owner`.

Ranking is exact BM25 with the owner's own statistics (`memorybank_core.ranking`): term
frequencies come from the candidates' stored tokens, document lengths from `doc_length`, and
the document count, average length and document frequencies from the owner's rows only.
"""

from __future__ import annotations

import functools
import hashlib
import re
from abc import abstractmethod
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

import attrs
import sqlalchemy as sa

from adapters_mysql.errors import unavailable_on_driver_error
from memorybank_core import Analyzer, BlindIndex, Memory, SearchEngine, SearchHit, memory_terms
from memorybank_core.ranking import CorpusStats, rank
from memorybank_text import ANALYZER_VERSION, TextAnalyzer

#: Bump when the token encoding below changes (the analyzer has its own version).
ENCODING_VERSION = 1
#: What `memory.search_version` holds for rows indexed by this code; older rows get re-indexed.
SEARCH_VERSION = ENCODING_VERSION * 1000 + ANALYZER_VERSION
#: A row whose search columns were never written (e.g. migrated from revision 0001).
UNINDEXED_VERSION = 0

TAG_LENGTH = 8
#: InnoDB's `innodb_ft_max_token_size` default: longer words are silently not indexed.
MAX_TOKEN_LENGTH = 84
_HASH_BYTES = 8
_PLAIN = re.compile(r"[0-9a-z]+")
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"

#: How many candidate rows a search scores at most. Past it, the engine keeps the candidates its
#: full-text index ranks highest, and still counts document frequencies over all the owner's rows.
DEFAULT_CANDIDATE_LIMIT = 1000


def _base36(number: int, width: int) -> str:
    digits = []
    for _ in range(width):
        number, digit = divmod(number, 36)
        digits.append(_DIGITS[digit])
    return "".join(reversed(digits))


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


class OwnerIndexer:
    """Turns memories into search documents and queries into owner-scoped tokens, with one analyzer.

    With a `blind_index` (encryption at rest) every token is that index's keyed hash of
    (owner, term) instead of the readable owner tag + term: the full-text index still keeps one
    posting list per (owner, term), and BM25 reads the same counts, but the words are gone.
    While rows written under an earlier scheme remain (plaintext before `memorybank encrypt`,
    an old index key before `memorybank keys rotate`), `also_search` makes queries match them too.
    """

    def __init__(self, analyzer: Analyzer | None = None, *, blind_index: BlindIndex | None = None) -> None:
        self.analyzer: Analyzer = analyzer or TextAnalyzer()
        self.blind_index = blind_index
        self._query_schemes: tuple[BlindIndex | None, ...] = (blind_index,)

    def also_search(self, schemes: Iterable[BlindIndex | None]) -> None:
        """Match rows tokenized by `schemes` too (None: plaintext owner tags), besides the writing scheme."""
        self._query_schemes = tuple(dict.fromkeys((self.blind_index, *schemes)))

    def document(self, memory: Memory) -> SearchDocument:
        """The search columns for `memory`."""
        terms = memory_terms(self.analyzer, memory)
        if self.blind_index is None:
            tag = owner_tag(memory.user_id)
            tokens = [tag + _term_suffix(term) for term in terms]
        else:
            token = self.blind_index.token
            tokens = [token(memory.user_id, term) for term in terms]
        return SearchDocument(search_terms=" ".join(tokens), doc_length=len(tokens), search_version=SEARCH_VERSION)

    def query_tokens(self, user_id: str, query: str) -> list[str]:
        """The owner's tokens for `query`, deduplicated, in order; empty when nothing is searchable."""
        terms = self.analyzer.query_terms(query)
        tokens: list[str] = []
        for scheme in self._query_schemes:
            if scheme is None:
                tag = owner_tag(user_id)
                tokens.extend(encode_term(tag, term) for term in terms)
            else:
                tokens.extend(scheme.token(user_id, term) for term in terms)
        return list(dict.fromkeys(tokens))


class Candidate(NamedTuple):
    """A row the full-text index matched: its id, stored tokens and length."""

    memory_id: str
    search_terms: str
    doc_length: int


def term_counts(tokens: Sequence[str], search_terms: str) -> Counter[str]:
    """How often each of `tokens` occurs in a stored `search_terms` string."""
    # Doubling the separators gives every token its own pair of spaces, so `count` (C speed)
    # sees back-to-back repeats of a token too.
    padded = " " + search_terms.replace(" ", "  ") + " "
    return Counter({token: padded.count(f" {token} ") for token in tokens})


def rank_candidates(
    tokens: Sequence[str],
    candidates: Sequence[Candidate],
    *,
    document_count: int,
    total_length: int,
    document_frequency: Mapping[str, int] | None,
    limit: int,
) -> list[SearchHit]:
    """BM25 over `candidates` with the owner's statistics; `document_frequency` None means count it here.

    Counting here is exact when `candidates` holds every owner row that matches any token.
    """
    documents = {candidate.memory_id: term_counts(tokens, candidate.search_terms) for candidate in candidates}
    if document_frequency is None:
        document_frequency = {token: sum(1 for counts in documents.values() if counts[token]) for token in tokens}
    stats = CorpusStats(
        document_count=document_count,
        average_length=total_length / document_count if document_count else 0.0,
        document_frequency=document_frequency,
    )
    lengths = {candidate.memory_id: candidate.doc_length for candidate in candidates}
    return rank(tokens, documents, stats, limit, lengths=lengths)


CandidateRow = sa.Row[str, str | None, int, int, int]
"""A candidate as the engines' SQL returns it: id, search_terms, doc_length, owner_count, owner_length."""


class OwnerScopedSearch(SearchEngine):
    """What both owner-scoped engines do around their dialect's SQL: fetch, bound, rank per owner.

    A dialect supplies the owner's matching rows (each carrying the owner's document count and
    total length) and one token's matching-row count, and may choose which rows to keep when
    there are too many (by default, the order it fetched them in). At most `candidate_limit`
    rows are scored; past it, document frequencies are still counted over all the owner's rows,
    so the scores stay exact.
    """

    def __init__(
        self, engine: sa.Engine, indexer: OwnerIndexer | None = None, *, candidate_limit: int = DEFAULT_CANDIDATE_LIMIT
    ) -> None:
        self._engine = engine
        self._indexer = indexer or OwnerIndexer()
        self._candidate_limit = candidate_limit

    def search(self, *, user_id: str, query: str, limit: int) -> Sequence[SearchHit]:
        tokens = self._indexer.query_tokens(user_id, query)
        if not tokens:
            return []
        with unavailable_on_driver_error("search"), self._engine.connect() as connection:
            rows = self._candidates(connection, user_id, tokens, self._candidate_limit + 1)
            if not rows:
                return []
            document_frequency = None
            if len(rows) > self._candidate_limit:
                rows = self._best_candidates(connection, user_id, tokens, rows)[: self._candidate_limit]
                document_frequency = {token: self._matching_count(connection, user_id, token) for token in tokens}
        return rank_candidates(
            tokens,
            [Candidate(row.id, row.search_terms or "", row.doc_length) for row in rows],
            document_count=int(rows[0].owner_count),
            total_length=int(rows[0].owner_length),
            document_frequency=document_frequency,
            limit=limit,
        )

    @abstractmethod
    def _candidates(
        self, connection: sa.Connection, user_id: str, tokens: Sequence[str], limit: int
    ) -> Sequence[CandidateRow]:
        """Up to `limit` owner rows matching any token: id, search_terms, doc_length, owner_count, owner_length."""

    def _best_candidates(
        self,
        connection: sa.Connection,  # noqa: ARG002 - a dialect that re-queries needs it
        user_id: str,  # noqa: ARG002
        tokens: Sequence[str],  # noqa: ARG002
        rows: Sequence[CandidateRow],
    ) -> Sequence[CandidateRow]:
        """The candidates to keep when `rows` overflowed the bound, best first: by default `rows` as fetched."""
        return rows

    @abstractmethod
    def _matching_count(self, connection: sa.Connection, user_id: str, token: str) -> int:
        """How many of the owner's rows hold `token`."""
