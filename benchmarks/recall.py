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
import sqlite3
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs

from benchmarks.common import (
    NO_SCREEN,
    Principal,
    bank_with,
    database_url,
    drop_database,
    machine,
    open_bank,
)
from benchmarks.locomo import DEFAULT_DATA, KS, Retriever, Turn, evaluate, load, report
from benchmarks.seed_search import SeedFulltextSearch, add_seed_index, fts5_query
from memorybank_core import MemoryBank, RecordingEventSink, ids
from memorybank_core.bodies import JsonValue


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


def retrievers(conversations: list[list[Turn]], *, mysql: bool, workdir: Path) -> Iterator[tuple[str, Retriever]]:
    """Each engine and baseline, built over the same turns."""
    memory_bank = bank_with(events=RecordingEventSink())
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
        fulltext_bank = bank_with(
            owner_runtime, search_engine=SeedFulltextSearch(owner.engine), events=RecordingEventSink()
        )
        yield "MySQL seed-literal FULLTEXT", searching(fulltext_bank, saved)
    yield "baseline: bm25s", bm25s_retriever(conversations)
    yield "baseline: SQLite FTS5 porter", fts5_porter_retriever(conversations)


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
        from benchmarks.hybrid import run_recall  # the command dispatches; hybrid imports benchmarks.locomo, not this

        run_recall(arguments.data, arguments.conversations)
        return
    if not arguments.engines:
        from benchmarks.precision import run  # the command dispatches; precision imports benchmarks.locomo, not this

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
