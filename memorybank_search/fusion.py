"""Fusing one owner's BM25 scores with the cosines of their memories' vectors: the hybrid ranking.

    score = w · bm25 / max(bm25) + (1 - w) · (cos - min cos) / (max cos - min cos)

Both sides are normalised over **the owner's own memories only** (every vector they hold, every
lexical match): another user's data never moves a user's scores. With w = 0.5 and a stemmed
BM25 side this measured R@10 0.662 on LoCoMo against 0.618 for FTS5 + porter, and held on a
held-out set (docs/search.md). Scores lie in (0, 1].

A memory enters the results when it matches a query word, or when its cosine reaches
`min_similarity`: without that floor a dense ranking returns every memory for every query, and a
search for a word the user never wrote would list their whole bank.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from memorybank_core import SearchHit, SearchHits

#: The lexical side's weight (the semantic side has the rest); best on LoCoMo for every model tried.
LEXICAL_WEIGHT = 0.5
#: The cosine a memory sharing no word with the query needs to be returned. all-MiniLM-L6-v2: unrelated
#: sentence pairs score below 0.16 nine times in ten; the paraphrases of benchmarks/paraphrases.json 0.18 to 0.75.
MIN_SIMILARITY = 0.15


@attrs.frozen(kw_only=True)
class Fusion:
    """How the two sides are weighed, and the cosine a memory needs when it shares no query word."""

    lexical_weight: float = LEXICAL_WEIGHT
    min_similarity: float = MIN_SIMILARITY

    def rank(self, lexical: Sequence[SearchHit], similarities: Mapping[str, float], limit: int) -> SearchHits:
        """The best `limit` of the owner's memories by fused score, score descending then newer id first.

        `lexical` holds the owner's BM25 matches; `similarities` the cosine of every owner memory
        that has a vector. Zero scores are dropped.
        """
        best_bm25 = max((hit.score for hit in lexical), default=0.0)
        bm25 = {hit.memory_id: hit.score / best_bm25 for hit in lexical} if best_bm25 > 0 else {}
        low = min(similarities.values(), default=0.0)
        spread = max(similarities.values(), default=0.0) - low
        semantic_weight = 1.0 - self.lexical_weight
        scored: list[tuple[float, str]] = []
        for memory_id in bm25.keys() | similarities.keys():
            lexical_part = bm25.get(memory_id, 0.0)
            cosine = similarities.get(memory_id)
            if lexical_part == 0.0 and (cosine is None or cosine < self.min_similarity):
                continue
            # One vector (or all equal): nothing to spread, each is as near as the nearest.
            semantic_part = 0.0 if cosine is None else (cosine - low) / spread if spread > 0 else 1.0
            score = self.lexical_weight * lexical_part + semantic_weight * semantic_part
            if score > 0:
                scored.append((score, memory_id))
        scored.sort(reverse=True)
        return SearchHits(
            (SearchHit(memory_id=memory_id, score=score) for score, memory_id in scored[:limit]),
            candidate_count=len(bm25.keys() | similarities.keys()),
        )
