"""Ranking candidates: exact BM25 over the rows a full-text index matched, with the owner's statistics.

Every engine ends here: the SQL engines with the rows their index returned, the in-memory
engine with the owner's memories that hold a query token. Term frequencies come from the
candidates' tokens, document lengths from their token counts, and the document count,
average length and document frequencies from the owner's documents only.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from memorybank_core import SearchHits
from memorybank_search.bm25 import CorpusStats, best_matches

#: How many candidate rows a search scores at most. Past it, an engine keeps the candidates its
#: full-text index ranks highest, and still counts document frequencies over all the owner's rows.
DEFAULT_CANDIDATE_LIMIT = 1000
#: Up to this many query tokens, a candidate's counts are one `str.count` pass per token; past it, one split of the
#: candidate's tokens costs less (a pass is about a tenth of a split). The same bound, after the split, on the tokens
#: it holds: up to it, a `list.count` each; past it, one `Counter`.
_COUNTED_BY_PASSES = 8
#: Up to this many stored tokens, a candidate's held tokens are found by a set first; a longer one goes straight to a
#: `Counter`, whose fixed cost is small beside its length (and a set would hash its tokens twice).
_SHORT_DOCUMENT = 128


class Candidate(NamedTuple):
    """A document the full-text index matched: its id, stored tokens and length."""

    memory_id: str
    search_terms: str
    doc_length: int


def term_counts(tokens: Sequence[str], search_terms: str) -> dict[str, int]:
    """How often each of `tokens` occurs in a stored `search_terms` string: only the tokens it holds are keys.

    Sparse on purpose: a candidate holds a few of a long query's tokens (a save's `similar` look-up asks with the new
    memory's every word), and everything after this works per token held, not per token asked.
    """
    return counter_for(tokens)(search_terms)


def counter_for(tokens: Sequence[str]) -> Callable[[str], dict[str, int]]:
    """`term_counts` for one query's `tokens`, its choices made once for all the candidates it counts."""
    if len(tokens) <= _COUNTED_BY_PASSES:
        # Doubling the separators gives every token its own pair of spaces, so `count` (C speed)
        # sees back-to-back repeats of a token too.
        keyed = [(token, f" {token} ") for token in tokens]

        def by_passes(search_terms: str) -> dict[str, int]:
            padded = " " + search_terms.replace(" ", "  ") + " "
            return {token: found for token, key in keyed if (found := padded.count(key))}

        return by_passes
    # More tokens: one split instead of a pass over the text per token (a query of 500 CJK bigrams over a document of
    # 270,000 tokens made 500 passes over 3 MB), then the tokens it holds, found by a set (in C).
    wanted = frozenset(tokens)

    def by_split(search_terms: str) -> dict[str, int]:
        terms = search_terms.split(" ")
        if len(terms) <= _SHORT_DOCUMENT:
            # A short candidate holds a few of a long query's tokens: finding them by the set and a `list.count` each
            # costs less than building a `Counter` (a quarter of a look-up's ranking of 480 such candidates).
            held = wanted.intersection(terms)
            if len(held) <= _COUNTED_BY_PASSES:
                return {token: terms.count(token) for token in held}
        return Counter(filter(wanted.__contains__, terms))

    return by_split


def rank_candidates(
    tokens: Sequence[str],
    candidates: Sequence[Candidate],
    *,
    document_count: int,
    total_length: int,
    document_frequency: Mapping[str, int] | None,
    limit: int,
    groups: Sequence[Sequence[str]] | None = None,
    unread: int = 0,
) -> SearchHits:
    """BM25 over `candidates` with the owner's statistics; `document_frequency` None means count it here.

    Counting here is exact when `candidates` holds every owner document that matches any token. `unread`: how many
    more of the owner's documents matched, left unread by a bound; the frequencies counted over `candidates` are then
    scaled to all that matched (an estimate: the candidates read are the best, or the newest).
    `groups` gathers the tokens of one query term (`OwnerIndexer.query_token_groups`); None: one each.
    """
    counts = counter_for(tokens)
    documents = {candidate.memory_id: counts(candidate.search_terms) for candidate in candidates}
    if document_frequency is None:
        # Each candidate's counts hold only the tokens it holds: a token's frequency is how many hold it.
        counted = Counter(itertools.chain.from_iterable(documents.values()))
        if unread and candidates:
            scale = (len(candidates) + unread) / len(candidates)
            document_frequency = {token: round(count * scale) for token, count in counted.items()}
        else:
            document_frequency = counted
    stats = CorpusStats(
        document_count=document_count,
        average_length=total_length / document_count if document_count else 0.0,
        document_frequency=document_frequency,
    )
    lengths = {candidate.memory_id: candidate.doc_length for candidate in candidates}
    return SearchHits(
        best_matches(tokens, documents, stats, limit, lengths=lengths, groups=groups), candidate_count=len(candidates)
    )
