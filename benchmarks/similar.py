"""Does a save's `similar` name the memory it replaces, and stay quiet for a save that replaces nothing?

    python -m benchmarks.similar [--lexical-only]
    python -m benchmarks.similar --backend mariadb --filler 500 --like 1000 64 32

The labelled set is tests/evals/update_pairs.json: 120 pairs of an old fact and the memory that replaces it
(a person moved, changed teams, renamed a service: 30 topics, 4 people), and 60 unrelated facts. Each
person's bank holds their 30 old facts and 30 of the unrelated ones; then each of their new facts is saved
(and deleted again) and `MemoryBank.similar` is asked, and so is each of the other 30 unrelated facts, which
replace nothing. For each engine (lexical BM25, hybrid with the shipped all-MiniLM-L6-v2 model) and each
threshold (`similar_min_share`, the share of the new memory's own score another needs), it prints:

- *replaced found*: how often the replaced memory is among `similar` (up to 3), out of 120;
- *replaced first*: how often it is the first;
- *unrelated flagged*: how often a save that replaces nothing gets any `similar` at all, out of 120.

In-memory engines, which rank exactly as the SQL ones (the ranking contract), so the figures are the
server's. Each engine's default threshold is marked (lexical: `use_cases.SIMILAR_MIN_SHARE`; hybrid:
`HybridSearch.similar_min_share`).

`--backend mariadb` (or `sqlite`) runs lexical and hybrid search (lexical only with `--lexical-only`) on the benchmark
server (or an SQLite file) instead, in a fresh database, with `--filler` more memories in each bank (a run of LoCoMo
turns of its own per person, up to 1,470: ordinary sentences that share the facts' common words), once for each
`--like` bound: how many memories a look-up reads, the best by the full-text index's relevance (InnoDB's, FTS5's;
`OwnerScopedSearch(like_candidates=...)`, ADR 0048). A bound of 1,000 reads every match of a bank of up to 1,000
matches, as every look-up did before. It prints each engine's default share only, and the median time of one look-up
(`MemoryBank.similar`, in process, every share's calls).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from adapters_mysql.owner_search import DEFAULT_LIKE_CANDIDATES
from benchmarks.common import (
    NO_SCREEN,
    Principal,
    bank_with,
    database_url,
    drop_database,
    open_bank,
    run_header,
    table,
)
from memorybank_core import Embedder, MemoryBank, RecordingEventSink, SaveRequest, SearchEngine, ids
from memorybank_core.use_cases import SIMILAR_MIN_SHARE
from memorybank_search.hybrid import HybridSearch
from memorybank_testing import InMemoryFactory

#: The labelled set ships with the tests (issue 29), which check docs/search.md's figures against it.
PAIRS = Path(__file__).resolve().parents[1] / "tests" / "evals" / "update_pairs.json"
#: Shares of the new memory's own score; hybrid's logistic scores need the ones near 1.
THRESHOLDS = (0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.9, 0.95, 0.96, 0.97, 0.98)
#: Unrelated facts that fill each bank; the rest are saved as new facts that replace nothing.
FILLER = 30
NAME = "similar"


@attrs.frozen
class Outcome:
    """What `similar` answered across the labelled set at one threshold."""

    found: int
    first: int
    pairs: int
    flagged: int
    unrelated: int
    look_up_ms: float = attrs.field(default=0.0, eq=False)
    """The median wall time of one `similar` call, every threshold's (a timing, so not compared)."""


def load(path: Path = PAIRS) -> dict[str, Any]:
    """The labelled set."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def measure(data: dict[str, Any], embedder: Embedder | None, thresholds: Sequence[float]) -> dict[float, Outcome]:
    """Run the labelled set through a fresh in-memory bank (lexical, or hybrid with `embedder`)."""
    backend = InMemoryFactory(embedder).fresh()
    bank = bank_with(store=backend.store, search_engine=backend.search_engine, events=RecordingEventSink())
    people = sorted({pair["person"] for pair in data["pairs"]})
    users = {person: fill(bank, data, person, ()) for person in people}
    return ask(bank, data, users, thresholds)


def fill(bank: MemoryBank, data: dict[str, Any], person: str, filler: Sequence[str]) -> tuple[Principal, list[str]]:
    """A new user with `person`'s old facts, the first unrelated facts and `filler` saved; the old facts' ids."""
    user = Principal(user_id=ids.new_id(ids.USER_PREFIX), organization_id=ids.new_id(ids.ORGANIZATION_PREFIX))
    old_ids = [
        bank.save(user, SaveRequest.parse({"content": p["old"]})).id for p in data["pairs"] if p["person"] == person
    ]
    for text in [*data["unrelated"][:FILLER], *filler]:
        bank.save(user, SaveRequest.parse({"content": text}))
    return user, old_ids


def ask(
    bank: MemoryBank,
    data: dict[str, Any],
    users: dict[str, tuple[Principal, list[str]]],
    thresholds: Sequence[float],
) -> dict[float, Outcome]:
    """Save each new fact and each remaining unrelated fact into its person's bank, ask `similar` at every
    threshold, and delete it again."""
    unrelated: list[str] = data["unrelated"]
    found = dict.fromkeys(thresholds, 0)
    first = dict.fromkeys(thresholds, 0)
    flagged = dict.fromkeys(thresholds, 0)
    checked = 0
    timings: list[float] = []
    for person, (user, old_ids) in users.items():
        pairs = [pair for pair in data["pairs"] if pair["person"] == person]
        for pair, old_id in zip(pairs, old_ids, strict=True):
            new = bank.save(user, SaveRequest.parse({"content": pair["new"]}))
            for threshold in thresholds:
                bank.similar_min_share = threshold
                started = time.perf_counter()
                named = [result.memory.id for result in bank.similar(user, new)]
                timings.append(time.perf_counter() - started)
                found[threshold] += old_id in named
                first[threshold] += named[:1] == [old_id]
            bank.delete(user, memory_id=new.id)
        for text in unrelated[FILLER:]:
            new = bank.save(user, SaveRequest.parse({"content": text}))
            checked += 1
            for threshold in thresholds:
                bank.similar_min_share = threshold
                started = time.perf_counter()
                flagged[threshold] += bool(bank.similar(user, new))
                timings.append(time.perf_counter() - started)
            bank.delete(user, memory_id=new.id)
    return {
        threshold: Outcome(
            found=found[threshold],
            first=first[threshold],
            pairs=len(data["pairs"]),
            flagged=flagged[threshold],
            unrelated=checked,
            look_up_ms=statistics.median(timings) * 1000 if timings else 0.0,
        )
        for threshold in thresholds
    }


def measure_sql(
    backend: str,
    data: dict[str, Any],
    thresholds: Sequence[float],
    filler: int,
    bounds: Sequence[int],
    locomo_path: Path | None = None,
    *,
    hybrid: bool = False,
) -> dict[int, dict[float, Outcome]]:
    """Search on `backend` (the benchmark server, or an SQLite file), lexical or `hybrid` with the shipped model, each
    bank with `filler` LoCoMo turns more (a run of turns of its own per person); once per look-up bound."""
    from benchmarks import locomo
    from memorybank.settings import SearchChoice

    conversations, _questions = locomo.load(locomo_path or locomo.DEFAULT_DATA)
    turns = [turn.text for conversation in conversations for turn in conversation]
    people = sorted({pair["person"] for pair in data["pairs"]})
    with tempfile.TemporaryDirectory() as directory:
        url = database_url(NAME) if backend == "mariadb" else f"sqlite:///{directory}/similar.sqlite3"
        search = SearchChoice(mode="hybrid" if hybrid else "lexical")
        try:
            with open_bank(url, migrate=backend == "mariadb", secret_screen=NO_SCREEN, search=search) as runtime:
                bank = bank_with(runtime, events=RecordingEventSink())
                # Each person's own run of turns, as many as there are (LoCoMo has 5,882).
                users = {
                    person: fill(bank, data, person, turns[index * filler : (index + 1) * filler])
                    for index, person in enumerate(people)
                }
                outcomes = {}
                for bound in bounds:
                    storage = runtime.storage
                    engine: SearchEngine = type(storage.lexical_search)(
                        storage.engine, storage.indexer, like_candidates=bound
                    )
                    if storage.embedder is not None:
                        engine = HybridSearch(engine, storage.vectors, storage.embedder)
                    bounded = bank_with(runtime, search_engine=engine, events=RecordingEventSink())
                    outcomes[bound] = ask(bounded, data, users, thresholds)
                return outcomes
        finally:
            if backend == "mariadb":
                drop_database(NAME)


def _share(count: int, total: int) -> str:
    return f"{count}/{total} ({count / total:.0%})"


def rows(engine: str, outcomes: dict[float, Outcome], default: float) -> list[list[str]]:
    """One table row per threshold."""
    return [
        [
            engine,
            f"{threshold:g}" + (" (default)" if threshold == default else ""),
            _share(outcome.found, outcome.pairs),
            _share(outcome.first, outcome.pairs),
            _share(outcome.flagged, outcome.unrelated),
        ]
        for threshold, outcome in outcomes.items()
    ]


def main(argv: Sequence[str] | None = None) -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.similar", description=__doc__.split("\n\n")[0])
    parser.add_argument("--lexical-only", action="store_true", help="skip hybrid search (no model needed)")
    parser.add_argument("--backend", choices=("memory", "mariadb", "sqlite"), default="memory")
    parser.add_argument("--filler", type=int, default=500, help="SQL backends: LoCoMo turns more in each bank")
    parser.add_argument("--like", type=int, nargs="+", default=[1000, DEFAULT_LIKE_CANDIDATES], help="SQL: bounds")
    parser.add_argument("--data", type=Path, default=None, help="SQL: locomo10.json (read, never copied)")
    arguments = parser.parse_args(argv)
    data = load()
    if arguments.backend != "memory":
        print(run_header(f"similar on save, {arguments.backend}, {arguments.filler} LoCoMo turns more in each bank"))
        found = []
        engines = [("lexical", False, SIMILAR_MIN_SHARE)]
        if not arguments.lexical_only:
            engines.append(("hybrid", True, HybridSearch.similar_min_share))
        for name, hybrid, default in engines:
            bounded = measure_sql(
                arguments.backend, data, THRESHOLDS, arguments.filler, arguments.like, arguments.data, hybrid=hybrid
            )
            # Each engine's default share only: the bound is the question here, not the share.
            found += [
                [row[0], f"{bound:,}", *row[1:], f"{outcomes[default].look_up_ms:.2f}"]
                for bound, outcomes in bounded.items()
                for row in rows(name, {default: outcomes[default]}, default)
            ]
        headers = [
            "engine",
            "look-up reads at most",
            "threshold",
            "replaced found",
            "replaced first",
            "unrelated flagged",
            "one look-up, p50 ms",
        ]
        print(table(headers, found))
        return
    print(run_header(f"similar on save: {len(data['pairs'])} update pairs, {len(data['unrelated'])} unrelated facts"))
    found = rows("lexical", measure(data, None, THRESHOLDS), SIMILAR_MIN_SHARE)
    if not arguments.lexical_only:
        import adapters_embedding  # the semantic extra, only here

        embedder = adapters_embedding.default_embedder()
        found += rows("hybrid", measure(data, embedder, THRESHOLDS), HybridSearch.similar_min_share)
    print(table(["engine", "threshold", "replaced found", "replaced first", "unrelated flagged"], found))


if __name__ == "__main__":
    main()
