"""Tuning the inclusion rule in-process: what each hybrid search hands `Fusion.rank`, captured once, then
replayed under variants of the rule (seconds per variant instead of an HTTP run).

    python -m benchmarks.inclusion capture [--data ../shared/data/locomo/locomo10.json] [--out FILE]
    python -m benchmarks.inclusion replay [--out FILE]

`capture` builds `benchmarks.precision`'s banks in the core's in-memory ports with the shipped model and
asks every question; for each it records the owner's BM25 hits (score and coverage) and every cosine, by
position in the bank, and keeps the vectors the search used (each bank's, each question's: int8 and
scale) for `python -m benchmarks.neighbours`. `replay` ranks the recorded inputs with each candidate
`Fusion` and prints the precision table's columns per bank group and half. Thresholds are chosen on the
tuning half only. The captured file holds LoCoMo text-free numbers and vectors only, but stays outside
the repository (LoCoMo is CC BY-NC 4.0: an embedding can be inverted to much of its text).
"""

from __future__ import annotations

import argparse
import pickle
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from benchmarks.common import NO_SCREEN, Principal
from benchmarks.locomo import DEFAULT_DATA
from benchmarks.precision import LIMIT, Bank, Tally, banks, report
from memorybank_core import Embedder, Embedding, SearchHit, SearchHits
from memorybank_search.fusion import Fusion

DEFAULT_CAPTURE = Path(tempfile.gettempdir()) / "memorybank-inclusion-capture.pkl"


@attrs.frozen
class Captured:
    """One question's inputs to the fusion stage, by position in its bank."""

    group: str
    half: int
    relevant: frozenset[int]
    paraphrase: bool
    near_miss: bool
    lexical: tuple[tuple[int, float, float | None, int | None], ...]
    """Per BM25 hit: its memory's position, score, coverage and terms held."""
    similarities: tuple[float, ...]
    centrality: tuple[float, ...]


@attrs.frozen
class Capture:
    """Everything `capture` wrote: the questions, and the vectors the searches used."""

    questions: list[Captured]
    bank_of: list[int]
    """Per question: its bank's position in `banks`."""
    queries: list[tuple[Any, Any]]
    """Per question: its vector, as an int8 row and its scale."""
    banks: list[tuple[Any, Any]]
    """Per bank: its memories' vectors, in the order of its memories, as an int8 matrix and their scales."""

    @classmethod
    def read(cls, path: Path) -> Capture:
        """What `capture` wrote to `path`."""
        questions, bank_of, queries, vectors = pickle.loads(path.read_bytes())  # noqa: S301 - our own file
        return cls([Captured(*item) for item in questions], bank_of, queries, vectors)


class _Keeping(Embedder):
    """The shipped embedder, keeping the vector of every text it embedded."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self.kept: dict[str, Embedding] = {}

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed(self, texts: Sequence[str]) -> list[Embedding]:
        vectors = self._inner.embed(texts)
        self.kept.update(zip(texts, vectors, strict=True))
        return vectors


def _int8(vectors: Sequence[Embedding]) -> tuple[Any, Any]:
    values = np.frombuffer(b"".join(vector.values for vector in vectors), dtype=np.int8)
    return values.reshape(len(vectors), -1).copy(), np.array([vector.scale for vector in vectors], dtype=np.float64)


_Inputs = tuple[Sequence[SearchHit], Mapping[str, float], Mapping[str, float]]


class _Recorder:
    """Stands in for `Fusion`: keeps the last inputs and ranks as the shipped rule does."""

    def __init__(self) -> None:
        self.last: _Inputs | None = None
        self._inner = Fusion()

    def rank(
        self,
        lexical: Sequence[SearchHit],
        similarities: Mapping[str, float],
        limit: int,
        *,
        centrality: Mapping[str, float] | None = None,
    ) -> SearchHits:
        self.last = (list(lexical), dict(similarities), dict(centrality or {}))
        return self._inner.rank(lexical, similarities, limit, centrality=centrality)

    def take(self) -> _Inputs | None:
        """The inputs of the last search since the last call (None: the engine asked nothing of the fusion)."""
        last, self.last = self.last, None
        return last


def capture(data: Path, out: Path) -> None:
    """Ask every question of every bank in-process; pickle what the fusion stage saw, and the vectors."""
    from adapters_embedding import default_embedder
    from memorybank import bootstrap
    from memorybank.settings import Settings
    from memorybank_core import ids
    from memorybank_core.bodies import JsonValue

    embedder = _Keeping(default_embedder())
    recorder = _Recorder()
    ports = bootstrap.Ports.in_memory(embedder=embedder, fusion=recorder)  # type: ignore[arg-type]
    bank = bootstrap.build(Settings.for_database("sqlite://", secret_screen=NO_SCREEN), ports=ports).services.bank
    captured: list[Captured] = []
    bank_of: list[int] = []
    queries: list[tuple[Any, Any]] = []
    vectors: list[tuple[Any, Any]] = []
    every: list[Bank] = banks(data, None)
    for number, one in enumerate(every):
        user = Principal(user_id=ids.new_id(ids.USER_PREFIX), organization_id=ids.new_id(ids.ORGANIZATION_PREFIX))
        memory_ids = [bank.save(user, JsonValue({"content": text})).id for text in one.memories]
        position = {memory_id: index for index, memory_id in enumerate(memory_ids)}
        for question in one.questions:
            recorder.take()
            embedder.kept.pop(question.text, None)
            bank.search(user, query=question.text, limit=LIMIT)
            seen = recorder.take()
            if seen is None:
                lexical: tuple[tuple[int, float, float | None, int | None], ...] = ()
                cosines: tuple[float, ...] = ()
                central: tuple[float, ...] = ()
            else:
                hits, similarities, centrality = seen
                lexical = tuple((position[hit.memory_id], hit.score, hit.coverage, hit.terms) for hit in hits)
                cosines = tuple(similarities[memory_id] for memory_id in memory_ids)
                central = tuple(centrality.get(memory_id, 0.0) for memory_id in memory_ids)
            captured.append(
                Captured(
                    one.group,
                    question.half,
                    question.relevant,
                    question.paraphrase,
                    question.near_miss,
                    lexical,
                    cosines,
                    central,
                )
            )
            bank_of.append(number)
            queries.append(_int8([embedder.kept.get(question.text) or embedder.embed([question.text])[0]]))
        engine: Any = ports.search_engine  # HybridSearch over InMemoryVectors
        stored = engine._vectors.vectors(user_id=user.user_id, model_id=embedder.model_id)
        vectors.append(_int8([stored[memory_id] for memory_id in memory_ids]))
        print(f"bank {number + 1} of {len(every)}: {len(one.memories)} memories", file=sys.stderr)
    # Plain tuples: the file does not depend on this module's name (`python -m` runs it as __main__).
    plain = [attrs.astuple(item, recurse=False) for item in captured]
    out.write_bytes(pickle.dumps((plain, bank_of, queries, vectors)))


def replay(captured: Sequence[Captured], fusion: Any) -> dict[tuple[str, int], Tally]:
    """Rank every captured question with `fusion`; tally as `benchmarks.precision` does."""
    tallies: dict[tuple[str, int], Tally] = {}
    for item in captured:
        hits = [
            SearchHit(memory_id=str(index), score=score, coverage=coverage, terms=terms)
            for index, score, coverage, terms in item.lexical
        ]
        similarities = {str(index): cosine for index, cosine in enumerate(item.similarities)}
        centrality = {str(index): value for index, value in enumerate(item.centrality)}
        ranked = fusion.rank(hits, similarities, LIMIT, centrality=centrality) if item.similarities else []
        returned = [int(hit.memory_id) for hit in ranked]
        tally = tallies.setdefault((item.group, item.half), Tally())
        tally.count(returned, item.relevant, paraphrase=item.paraphrase, near_miss=item.near_miss)
    return tallies


def main(argv: Sequence[str] | None = None) -> None:
    """`capture` or `replay` (module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.inclusion")
    parser.add_argument("action", choices=("capture", "replay"))
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=DEFAULT_CAPTURE)
    arguments = parser.parse_args(argv)
    if arguments.action == "capture":
        capture(arguments.data, arguments.out)
        return
    print(report({"hybrid": replay(Capture.read(arguments.out).questions, Fusion())}))


if __name__ == "__main__":
    main()
