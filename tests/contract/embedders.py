"""A tiny deterministic `Embedder` for the contract suite: hashed bags of analyzed terms, no model.

Each analyzed (stemmed) term adds ±1 to one of `DIMENSION` components chosen by its hash; the sum is
normalised to unit length. Texts sharing terms have a positive cosine, texts sharing none about 0,
so hybrid search's owner scoping, storage, sealing and ranking are exercised with exact,
reproducible numbers (the real model's meaning is tested in tests/semantic).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

from memorybank_core import Embedder, Embedding
from memorybank_search import TextAnalyzer

DIMENSION = 384


class HashedTermsEmbedder(Embedder):
    """Texts to unit vectors by feature hashing of their analyzed terms."""

    model_id = "test-hashed-terms-384"
    dimension = DIMENSION

    def __init__(self) -> None:
        self._analyzer = TextAnalyzer()
        self.calls = 0
        """How many `embed` calls were made (a test can tell whether a vector was computed)."""

    def embed(self, texts: Sequence[str]) -> list[Embedding]:
        self.calls += 1
        return [self._one(text) for text in texts]

    def _one(self, text: str) -> Embedding:
        vector = [0.0] * DIMENSION
        for term in self._analyzer.document_terms(text):
            digest = hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest()
            number = int.from_bytes(digest, "big")
            vector[number % DIMENSION] += 1.0 if number >> 63 else -1.0
        norm = math.sqrt(sum(component * component for component in vector))
        return Embedding.quantize([component / norm for component in vector] if norm else vector)
