"""Fusing one owner's BM25 scores with the cosines of their memories' vectors: the hybrid ranking, and which
memories it returns at all.

Every number is measured against **the owner's own memories only** (their vectors, their words'
document frequencies): another user's data never moves a user's scores, nor whether a memory is found.

**Standing.** For a query, the cosines of all the owner's vectors have a mean and a spread; a memory's
*standing* is how many standard deviations its cosine lies above that mean (a z-score). Each cosine is
first discounted by how central its memory is in the owner's bank (`CENTRALITY_WEIGHT` times its mean
cosine with the owner's other memories, less the bank's average of that): a memory phrased like many
of the owner's others (a fact among chat, a generic note) scores high against any question, and a
hub that stands out for every question stands out for none. A question
lifts a handful of memories far above the rest when the bank holds something about it, and none when
it does not, whatever the cosine values themselves are (they differ by model, by query and by how
alike a person's memories are). For a small bank the mean and spread are shrunk toward those of
unrelated sentence pairs (`PRIOR_WEIGHT` pseudo-memories), so three memories cannot make a noise
cosine stand out.

**Inclusion.** A memory is returned when

- its meaning stands out: standing ≥ √(2 ln n), where n is how many vectors the owner has (at least
  `MIN_BANK`): about as far as the highest of n unrelated memories reaches by chance (3.0 at 100
  memories, 3.7 at 1,000), and its cosine ≥ `min_similarity`, and the best standing of the query
  reaches `STAND_OUT_MARGIN` more (a question nothing answers still lifts one memory to about
  √(2 ln n); the rest of what stands out is returned beside a memory that clearly does); or
- its words answer much of the query: they hold at least `WORD_SHARE` of the query's weight (the
  idf of its terms, the owner's own: a term the owner never wrote weighs the most), or at least
  `WEAK_WORD_SHARE` and its standing is at least `WEAK_WORD_STANDING`; and they are more than one
  incidental word: at least `MIN_TERMS` of the query's terms, or one carrying `ONE_TERM_SHARE` of
  its weight (the one term of a one-word query, a rare name in a short one); or
- it matches a query word and has no vector yet: it is judged by its words alone, as lexical
  search would (memories saved before hybrid search was on, until their vectors are written).

A query asked of a bank that holds nothing about it then gets nothing: no memory stands out, and a
word the owner wrote in passing ("office", "new") carries a small share of the query. A memory that
shares one word with a longer question ("how *old* is my nephew?" and "I sold my *old* bike") is not
returned for that word: on the tuning halves, not one such match in the notes was the answer, and 14
of 1,159 in LoCoMo.

**Ranking.** The memories returned are ordered by standing + `LEXICAL_WEIGHT` · bm25 / max(bm25), and
the wire score is that number's logistic, in (0, 1). The thresholds were tuned on one half of the
labelled sets of `benchmarks/precision.json` and LoCoMo and checked on the other half
(docs/search.md, ADRs 0036 and 0039).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import attrs

from memorybank_core import MatchKind, SearchHit, SearchHits

#: How many standard deviations of cosine the best word match (bm25 / max = 1) is worth in the ranking.
LEXICAL_WEIGHT = 3.0
#: A floor under the standing rule for memories that share no word with the query: all-MiniLM-L6-v2's
#: unrelated sentence pairs score below 0.16 nine times in ten.
MIN_SIMILARITY = 0.15
#: A word match holding this share of the query's weight is returned whatever its meaning.
WORD_SHARE = 0.35
#: ... a weaker one needs this share and its meaning at least `WEAK_WORD_STANDING` above the mean.
WEAK_WORD_SHARE = 0.2
WEAK_WORD_STANDING = 0.5
#: A word match holds at least this many of the query's terms ...
MIN_TERMS = 2
#: ... or one term carrying this share of the query's weight.
ONE_TERM_SHARE = 0.6
#: How much of a memory's centrality (its mean cosine with the owner's other memories) is taken off its cosine.
CENTRALITY_WEIGHT = 1.0
#: Meaning matches are returned only when the best standing of the query reaches √(2 ln n) + this.
STAND_OUT_MARGIN = 0.25
#: The bank size below which the standing a meaning match needs stops falling (√(2 ln 20) ≈ 2.45).
MIN_BANK = 20
#: Unrelated sentence pairs under all-MiniLM-L6-v2: mean and standard deviation of their cosine
#: (measured over benchmarks/precision.json's bank and questions), weighing like this many memories.
PRIOR_MEAN = 0.05
PRIOR_DEVIATION = 0.09
PRIOR_WEIGHT = 20


@attrs.frozen
class Standing:
    """One query's cosines over one owner's vectors: their (shrunk) mean and spread, and what stands out."""

    mean: float
    deviation: float
    needed: float
    """The standing a memory sharing no word with the query needs."""

    @classmethod
    def of(cls, similarities: Mapping[str, float]) -> Standing:
        """The standing of `similarities` (every owner vector's cosine with the query)."""
        count = len(similarities)
        values = similarities.values()
        mean = math.fsum(values) / count if count else 0.0
        variance = math.fsum((value - mean) ** 2 for value in values) / count if count else 0.0
        # Shrink toward unrelated pairs: a pooled mean and variance, the prior weighing PRIOR_WEIGHT memories.
        pooled = (PRIOR_WEIGHT * PRIOR_MEAN + count * mean) / (PRIOR_WEIGHT + count)
        pooled_variance = (
            PRIOR_WEIGHT * (PRIOR_DEVIATION**2 + (PRIOR_MEAN - pooled) ** 2) + count * (variance + (mean - pooled) ** 2)
        ) / (PRIOR_WEIGHT + count)
        needed = math.sqrt(2 * math.log(max(count, MIN_BANK)))
        return cls(mean=pooled, deviation=math.sqrt(pooled_variance) or 1e-9, needed=needed)

    def of_cosine(self, cosine: float) -> float:
        """How many deviations `cosine` lies above the mean."""
        return (cosine - self.mean) / self.deviation


@attrs.frozen(kw_only=True)
class Fusion:
    """How the two sides are weighed, and what a memory needs to be returned (module docstring)."""

    lexical_weight: float = LEXICAL_WEIGHT
    min_similarity: float = MIN_SIMILARITY
    word_share: float = WORD_SHARE
    weak_word_share: float = WEAK_WORD_SHARE
    weak_word_standing: float = WEAK_WORD_STANDING
    min_terms: int = MIN_TERMS
    one_term_share: float = ONE_TERM_SHARE
    centrality_weight: float = CENTRALITY_WEIGHT
    stand_out_margin: float = STAND_OUT_MARGIN

    def rank(
        self,
        lexical: Sequence[SearchHit],
        similarities: Mapping[str, float],
        limit: int,
        *,
        centrality: Mapping[str, float] | None = None,
    ) -> SearchHits:
        """The best `limit` of the owner's memories that the rule returns, best first, then newer id first.

        `lexical` holds the owner's BM25 matches (with their `coverage`, when the engine gives it);
        `similarities` the cosine of every owner memory that has a vector; `centrality` each one's mean
        cosine with the owner's other memories (`memorybank_search.hybrid.centralities`; none: no discount).
        """
        best_bm25 = max((hit.score for hit in lexical), default=0.0)
        words = {hit.memory_id: hit for hit in lexical} if best_bm25 > 0 else {}
        adjusted = self._discounted(similarities, centrality)
        standing = Standing.of(adjusted)
        best = max((standing.of_cosine(value) for value in adjusted.values()), default=0.0)
        stands_out = best >= standing.needed + self.stand_out_margin
        ranked: list[tuple[float, str, MatchKind]] = []
        for memory_id in words.keys() | similarities.keys():
            hit = words.get(memory_id)
            cosine = similarities.get(memory_id)
            z = None if cosine is None else standing.of_cosine(adjusted[memory_id])
            meaning = (
                stands_out
                and z is not None
                and cosine is not None
                and z >= standing.needed
                and cosine >= self.min_similarity
            )
            if hit is not None and not meaning and not self._words_answer(hit, z):
                hit = None
            if hit is None and not meaning:
                continue
            match: MatchKind = "both" if hit is not None and meaning else "words" if hit is not None else "meaning"
            lexical_part = hit.score / best_bm25 if hit is not None else 0.0
            ranked.append(((z or 0.0) + self.lexical_weight * lexical_part, memory_id, match))
        ranked.sort(reverse=True)
        return SearchHits(
            (
                SearchHit(memory_id=memory_id, score=_logistic(value), match=match)
                for value, memory_id, match in ranked[:limit]
            ),
            candidate_count=len(words.keys() | similarities.keys()),
        )

    def _discounted(
        self, similarities: Mapping[str, float], centrality: Mapping[str, float] | None
    ) -> Mapping[str, float]:
        if not centrality or not similarities or not self.centrality_weight:
            return similarities
        # Centred on the bank's average centrality, so the prior of `Standing` (raw cosines) still fits.
        average = math.fsum(centrality.get(memory_id, 0.0) for memory_id in similarities) / len(similarities)
        weight = self.centrality_weight
        return {
            memory_id: cosine - weight * (centrality.get(memory_id, average) - average)
            for memory_id, cosine in similarities.items()
        }

    def _words_answer(self, hit: SearchHit, z: float | None) -> bool:
        if z is None or hit.coverage is None:
            # No vector yet, or an engine that does not say how much of the query it matched: lexically judged.
            return True
        if hit.terms is not None and hit.terms < self.min_terms and hit.coverage < self.one_term_share:
            return False  # one incidental word of a longer question
        return hit.coverage >= self.word_share or (
            hit.coverage >= self.weak_word_share and z >= self.weak_word_standing
        )


def _logistic(value: float) -> float:
    # In (0, 1) and monotonic: the wire's positive score, ordered as the ranking is.
    return 1.0 / (1.0 + math.exp(-value)) if value > -700 else 5e-324
