"""Recall and precision: does a question's memory come back, and does a question the bank cannot answer
come back empty?

    python -m benchmarks.recall [--data ../shared/data/locomo/locomo10.json] [--conversations N]
    python -m benchmarks.recall --engines [--no-mysql] [--conversations N]
    python -m benchmarks.recall --hybrid [--conversations N]

By default, lexical and hybrid search through HTTP, on labelled sets of answerable and unanswerable
questions (`benchmarks.precision`): recall@5 and @10, the results returned per unanswerable question,
the share answered with nothing, and the other results beside a found one.

`--engines`: recall on LoCoMo of every engine in-process. One user per conversation; every dialogue
turn is saved as one memory (`"Speaker: text"`, plus the shared photo's caption when there is one).
Each question with resolvable evidence is asked through `MemoryBank.search` of each engine, and, over
the very same turn texts in the same run, two public baselines: BM25 from `bm25s` (its English
stopwords, no stemming) and SQLite FTS5 with the `porter` tokenizer (one table per conversation, its
bm25 ranking). Prints recall@k and nDCG@10 overall and per question category.

`--hybrid`: LoCoMo recall of lexical against hybrid search through HTTP (`benchmarks.hybrid recall`).

LoCoMo is CC BY-NC 4.0 (non-commercial research use): it is read from ../shared, never copied here.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sqlite3
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from benchmarks.common import NO_SCREEN, Principal, database_url, drop_database, machine, open_bank, table
from benchmarks.seed_search import SeedFulltextSearch, add_seed_index, fts5_query
from memorybank_core import InMemoryStore, MemoryBank, RecordingEventSink, ids
from memorybank_core.bodies import JsonValue
from memorybank_search import InMemorySearch, OwnerIndexer

SHARED_DATA_ENV = "MEMORYBANK_BENCH_SHARED_DATA"
"""The public data sets' directory (`shared/data`), for a clone that does not sit beside `shared/`."""

DEFAULT_DATA = (
    Path(os.environ.get(SHARED_DATA_ENV) or Path(__file__).resolve().parents[2] / "shared" / "data")
    / "locomo"
    / "locomo10.json"
)
#: Category ids as the LoCoMo JSON numbers them (see the data's README).
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
KS = (1, 5, 10)
_EVIDENCE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")

#: Ranks turn ids for one conversation's question: (conversation index, question) -> turn ids, best first.
Retriever = Callable[[int, str], list[str]]


@attrs.frozen
class Turn:
    """One dialogue turn: its LoCoMo id (`D3:7`) and the text saved as a memory."""

    dia_id: str
    text: str


@attrs.frozen
class Question:
    """One question with the turns that answer it."""

    conversation: int
    text: str
    category: int
    evidence: frozenset[str]


def load(path: Path) -> tuple[list[list[Turn]], list[Question]]:
    """Every conversation's turns, and every question whose evidence names at least one known turn."""
    data = json.loads(path.read_text())
    conversations: list[list[Turn]] = []
    questions: list[Question] = []
    for index, sample in enumerate(data):
        turns = [turn for key, session in _sessions(sample["conversation"]) for turn in session]
        conversations.append(
            [Turn(dia_id=_normalize(t["dia_id"]) or t["dia_id"], text=_turn_text(t)) for t in turns if t.get("text")]
        )
        known = {turn.dia_id for turn in conversations[-1]}
        for qa in sample["qa"]:
            evidence = frozenset(
                e for item in qa.get("evidence", []) for part in str(item).split(";") if (e := _normalize(part))
            )
            evidence &= known
            if evidence:
                questions.append(Question(index, str(qa["question"]), int(qa["category"]), evidence))
    return conversations, questions


def _sessions(conversation: Mapping[str, Any]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    for key, value in conversation.items():
        if re.fullmatch(r"session_\d+", key) and isinstance(value, list):
            yield key, value


def _normalize(raw: str) -> str | None:
    # Lenient, as the data's README advises: `D:11:26` -> D11:26, `D30:05` -> D30:5, `D` -> None.
    found = _EVIDENCE.search(raw)
    return f"D{int(found.group(1))}:{int(found.group(2))}" if found else None


def _turn_text(turn: Mapping[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


@attrs.frozen
class Saved:
    """Turns saved into a bank: the user of each conversation, and the turn id of each memory."""

    users: list[Principal]
    turn_of: dict[str, str]


def save_turns(bank: MemoryBank, conversations: list[list[Turn]]) -> Saved:
    """Save every turn through `bank`, one user per conversation."""
    users = [
        Principal(user_id=ids.new_id(ids.USER_PREFIX), organization_id=ids.new_id(ids.ORGANIZATION_PREFIX))
        for _ in conversations
    ]
    turn_of: dict[str, str] = {}
    for user, turns in zip(users, conversations, strict=True):
        for turn in turns:
            turn_of[bank.save(user, JsonValue({"content": turn.text[:8000]})).id] = turn.dia_id
    return Saved(users=users, turn_of=turn_of)


def searching(bank: MemoryBank, saved: Saved) -> Retriever:
    """Ask `bank` (whose store holds `saved`) as each conversation's user."""

    def retrieve(conversation: int, question: str) -> list[str]:
        results = bank.search(saved.users[conversation], query=question[:512], limit=max(KS))
        return [saved.turn_of[result.memory.id] for result in results]

    return retrieve


def bm25s_retriever(conversations: list[list[Turn]]) -> Retriever:
    """The `bm25s` library's BM25 (its defaults, English stopwords), one index per conversation."""
    import bm25s

    indexes = []
    for turns in conversations:
        retriever = bm25s.BM25()
        retriever.index(
            bm25s.tokenize([t.text for t in turns], stopwords="en", show_progress=False), show_progress=False
        )
        indexes.append(retriever)

    def retrieve(conversation: int, question: str) -> list[str]:
        tokens = bm25s.tokenize([question], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        turns = conversations[conversation]
        k = min(max(KS), len(turns))
        found, scores = indexes[conversation].retrieve(tokens, k=k, show_progress=False)
        return [turns[int(i)].dia_id for i, s in zip(found[0], scores[0], strict=True) if s > 0]

    return retrieve


def fts5_porter_retriever(conversations: list[list[Turn]]) -> Retriever:
    """SQLite FTS5 with `porter unicode61`, one table per conversation, ranked by its bm25."""
    connection = sqlite3.connect(":memory:")
    for index, turns in enumerate(conversations):
        connection.execute(
            f"CREATE VIRTUAL TABLE c{index} USING fts5(dia_id UNINDEXED, text, tokenize='porter unicode61')"
        )
        rows = [(t.dia_id, t.text) for t in turns]
        connection.executemany(f"INSERT INTO c{index} VALUES (?, ?)", rows)  # noqa: S608 - our table name

    def retrieve(conversation: int, question: str) -> list[str]:
        expression = fts5_query(question)
        if expression is None:
            return []
        # The table name is ours (c + an index); the expression is bound.
        statement = f"SELECT dia_id FROM c{conversation} WHERE c{conversation} MATCH ? ORDER BY rank LIMIT ?"  # noqa: S608
        return [row[0] for row in connection.execute(statement, (expression, max(KS)))]

    return retrieve


@attrs.frozen
class Scores:
    """recall@k and nDCG@10 of one retriever, overall and per category."""

    recall: Mapping[tuple[str, int], float]
    ndcg: Mapping[str, float]
    counts: Mapping[str, int]


def evaluate(retrieve: Retriever, questions: Sequence[Question]) -> Scores:
    """Ask every question; average the hits per category and overall."""
    hits: dict[tuple[str, int], float] = defaultdict(float)
    ndcg: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for question in questions:
        ranked = retrieve(question.conversation, question.text)
        for group in ("overall", CATEGORIES[question.category]):
            counts[group] += 1
            for k in KS:
                hits[(group, k)] += any(turn in question.evidence for turn in ranked[:k])
            ndcg[group] += _ndcg(ranked[:10], question.evidence)
    return Scores(
        recall={key: value / counts[key[0]] for key, value in hits.items()},
        ndcg={group: value / counts[group] for group, value in ndcg.items()},
        counts=dict(counts),
    )


def _ndcg(ranked: Sequence[str], relevant: frozenset[str]) -> float:
    dcg = sum(1 / math.log2(rank + 2) for rank, turn in enumerate(ranked) if turn in relevant)
    ideal = sum(1 / math.log2(rank + 2) for rank in range(min(len(relevant), len(ranked) or 10, 10)))
    return dcg / ideal if ideal else 0.0


def retrievers(conversations: list[list[Turn]], *, mysql: bool, workdir: Path) -> Iterator[tuple[str, Retriever]]:
    """Each engine and baseline, built over the same turns."""
    indexer = OwnerIndexer()
    store = InMemoryStore()
    memory_bank = MemoryBank(store=store, search_engine=InMemorySearch(store, indexer), events=RecordingEventSink())
    yield "in-memory reference", searching(memory_bank, save_turns(memory_bank, conversations))
    sqlite_bank = open_bank(
        f"sqlite:///{workdir / 'recall.sqlite3'}", events=RecordingEventSink(), secret_screen=NO_SCREEN
    ).services.bank
    yield "SQLite owner-scoped", searching(sqlite_bank, save_turns(sqlite_bank, conversations))
    if mysql:
        drop_database("recall")
        owner_runtime = open_bank(
            database_url("recall"), migrate=True, events=RecordingEventSink(), secret_screen=NO_SCREEN
        )
        owner = owner_runtime.storage
        add_seed_index(owner.engine)
        owner_bank = owner_runtime.services.bank
        saved = save_turns(owner_bank, conversations)
        yield "MySQL owner-scoped", searching(owner_bank, saved)
        # The same rows, searched by the seed-literal engine.
        fulltext_bank = MemoryBank(
            store=owner.store, search_engine=SeedFulltextSearch(owner.engine), events=RecordingEventSink()
        )
        yield "MySQL seed-literal FULLTEXT", searching(fulltext_bank, saved)
    yield "baseline: bm25s", bm25s_retriever(conversations)
    yield "baseline: SQLite FTS5 porter", fts5_porter_retriever(conversations)


def report(results: Mapping[str, Scores]) -> str:
    """Markdown: overall recall@k and nDCG@10 per retriever, then recall@10 per category."""
    overall = [
        [name, *(f"{s.recall[('overall', k)]:.3f}" for k in KS), f"{s.ndcg['overall']:.3f}"]
        for name, s in results.items()
    ]
    first = next(iter(results.values()))
    groups = [CATEGORIES[c] for c in (4, 1, 2, 3, 5) if CATEGORIES[c] in first.counts]
    by_category = [[name, *(f"{s.recall[(g, 10)]:.3f}" for g in groups)] for name, s in results.items()]
    ndcg_by_category = [[name, *(f"{s.ndcg[g]:.3f}" for g in groups)] for name, s in results.items()]
    counts = ", ".join(f"{g} {first.counts[g]}" for g in groups)
    return (
        f"{first.counts['overall']} questions ({counts})\n\n"
        + table(["engine", *(f"recall@{k}" for k in KS), "nDCG@10"], overall)
        + "\n\nrecall@10 by category\n\n"
        + table(["engine", *groups], by_category)
        + "\n\nnDCG@10 by category\n\n"
        + table(["engine", *groups], ndcg_by_category)
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Command line."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.recall", description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="locomo10.json (read, never copied)")
    parser.add_argument("--no-mysql", action="store_true", help="--engines: skip the two MySQL engines")
    parser.add_argument("--conversations", type=int, default=None, help="use only the first N conversations")
    parser.add_argument(
        "--engines", action="store_true", help="instead, LoCoMo recall of every engine in-process, beside baselines"
    )
    parser.add_argument(
        "--hybrid",
        action="store_true",
        help="instead, LoCoMo recall of lexical against hybrid search through `memorybank serve` (benchmarks.hybrid)",
    )
    arguments = parser.parse_args(argv)
    if arguments.hybrid:
        from benchmarks.hybrid import run_recall  # it imports this module

        run_recall(arguments.data, arguments.conversations)
        return
    if not arguments.engines:
        from benchmarks.precision import run  # it imports this module

        run(arguments.data, arguments.conversations)
        return
    conversations, questions = load(arguments.data)
    if arguments.conversations is not None:
        conversations = conversations[: arguments.conversations]
        questions = [q for q in questions if q.conversation < arguments.conversations]
    print(f"machine: {machine()}; {sum(map(len, conversations))} turns", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="memorybank-recall-") as workdir:
        results = {
            name: evaluate(retrieve, questions)
            for name, retrieve in retrievers(conversations, mysql=not arguments.no_mysql, workdir=Path(workdir))
        }
    print(report(results))


if __name__ == "__main__":
    main()
