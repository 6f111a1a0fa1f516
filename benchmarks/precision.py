"""Precision beside recall, through HTTP: what each search engine returns for questions the bank can
answer, and for questions it cannot.

    python -m benchmarks.recall [--data ../shared/data/locomo/locomo10.json] [--conversations N]

One SQLite file, every memory saved through `memorybank serve --search hybrid` (so every memory has its
vector), then every question asked through that server and through `serve --search lexical` on the same
file. Three kinds of bank, one person each:

- **notes**: benchmarks/paraphrases.json's 60 personal memories and benchmarks/precision.json's 40 work
  notes (100 memories); its answerable questions (100 in other words, 30 in the memory's own words), its
  50 unanswerable questions, and 16 near misses (a subject the bank holds, not the answer).
- **notes among conversation**: the same 100 notes among LoCoMo turns, 1,000 memories in all, and the
  same questions.
- **LoCoMo**: each conversation's turns (369 to 689 memories) with its own questions (answerable: the
  evidence turns), and 40 questions of the next conversation (unanswerable: about other people's lives).

Each set is cut in two halves: items at even positions (LoCoMo: even conversations) are the half the
inclusion rule was tuned on, odd ones the held-out half. Per bank, half and engine it prints recall@5
and @10 (and of the questions sharing no word with their memory), the results per unanswerable
question (`limit=10`), the share of unanswerable questions answered with nothing, the results that are
not the answer beside a found one, and the results per near miss.

LoCoMo is CC BY-NC 4.0: read from ../shared, never copied here.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import attrs
import httpx2

from benchmarks.common import machine, table
from benchmarks.hybrid import PARAPHRASES, Account, client, migrate, new_account, save, search
from benchmarks.locomo import load
from harness.served import NO_RATE_LIMITS, serving
from memorybank_search import TextAnalyzer

PRECISION = Path(__file__).resolve().parent / "precision.json"
#: Results asked for per question: an agent's usual page, and recall@10's.
LIMIT = 10
#: The notes bank among conversation turns: this many memories in all.
MIXED_SIZE = 1000
#: Questions of the next conversation asked of each LoCoMo bank, as unanswerable ones.
CROSS_QUESTIONS = 40
ENGINES = (("hybrid", ("--search", "hybrid")), ("lexical", ("--search", "lexical")))
HALVES = ("tuning", "held-out")


@attrs.frozen
class Asked:
    """One question: the memories (by position in its bank) that answer it (none: unanswerable)."""

    text: str
    relevant: frozenset[int]
    half: int
    paraphrase: bool = False
    near_miss: bool = False


@attrs.frozen
class Bank:
    """One person's memories and the questions asked of them."""

    group: str
    memories: list[str]
    questions: list[Asked]


def notes_bank() -> Bank:
    """benchmarks/paraphrases.json's memories and precision.json's work notes, with every question about them."""
    analyzer = TextAnalyzer()
    personal = json.loads(PARAPHRASES.read_text())["items"]
    data = json.loads(PRECISION.read_text())
    pairs = [(item["memory"], item["question"]) for item in [*personal, *data["work_notes"]]]
    memories = [memory for memory, _ in pairs]
    position = {memory: index for index, memory in enumerate(memories)}
    questions = [
        Asked(
            question,
            frozenset({index}),
            index % 2,
            paraphrase=not set(analyzer.query_terms(question)) & set(analyzer.document_terms(memory)),
        )
        for index, (memory, question) in enumerate(pairs)
    ]
    for index, item in enumerate(data["answerable"]):
        memory, question = item["memory"], item["question"]
        paraphrase = not set(analyzer.query_terms(question)) & set(analyzer.document_terms(memory))
        questions.append(Asked(question, frozenset({position[memory]}), index % 2, paraphrase=paraphrase))
    questions += [Asked(text, frozenset(), index % 2) for index, text in enumerate(data["unanswerable"])]
    questions += [Asked(text, frozenset(), index % 2, near_miss=True) for index, text in enumerate(data["near_misses"])]
    return Bank("notes", memories, questions)


def banks(data: Path, conversations_limit: int | None) -> list[Bank]:
    """The notes bank, the notes among conversation turns, and one bank per LoCoMo conversation."""
    notes = notes_bank()
    conversations, questions = load(data)
    if conversations_limit is not None:
        conversations = conversations[:conversations_limit]
        questions = [q for q in questions if q.conversation < conversations_limit]
    turns = [turn.text for conversation in conversations for turn in conversation]
    filler = turns[: max(0, MIXED_SIZE - len(notes.memories))]
    mixed = Bank("notes among conversation", [*notes.memories, *filler], notes.questions)
    found: list[Bank] = [notes, mixed]
    for index, conversation in enumerate(conversations):
        position = {turn.dia_id: number for number, turn in enumerate(conversation)}
        own = [
            Asked(q.text, frozenset(position[e] for e in q.evidence), index % 2)
            for q in questions
            if q.conversation == index
        ]
        others = [q.text for q in questions if q.conversation == (index + 1) % len(conversations)]
        if len(conversations) == 1:
            others = []
        step = max(1, len(others) // CROSS_QUESTIONS)
        cross = [Asked(text, frozenset(), index % 2) for text in others[::step][:CROSS_QUESTIONS]]
        found.append(Bank("LoCoMo", [turn.text for turn in conversation], own + cross))
    return found


@attrs.frozen
class Tally:
    """What one engine returned for one group of banks and one half."""

    answerable: list[tuple[bool, bool, bool, int | None]] = attrs.field(factory=list)
    """Per answerable question: found in the top 5, in the top 10, a paraphrase, the other results beside it."""
    unanswerable: list[int] = attrs.field(factory=list)
    near_misses: list[int] = attrs.field(factory=list)

    def count(self, returned: Sequence[int], relevant: frozenset[int], *, paraphrase: bool, near_miss: bool) -> None:
        """Count one question's results (memories by position in its bank): what answers it is `relevant`."""
        if near_miss:
            self.near_misses.append(len(returned))
        elif not relevant:
            self.unanswerable.append(len(returned))
        else:
            hits = [index in relevant for index in returned]
            others = len(returned) - sum(hits) if any(hits) else None
            self.answerable.append((any(hits[:5]), any(hits[:10]), paraphrase, others))

    def row(self, name: str) -> list[str]:
        """The table's cells."""
        found = self.answerable
        paraphrases = [top5 for top5, _, paraphrase, _ in found if paraphrase]
        beside = [others for _, top10, _, others in found if top10 and others is not None]
        return [
            name,
            str(len(found)),
            _share([top5 for top5, *_ in found]),
            _share([top10 for _, top10, *_ in found]),
            _share(paraphrases) if paraphrases else "—",
            _mean(beside),
            str(len(self.unanswerable)),
            _mean(self.unanswerable),
            _share([count == 0 for count in self.unanswerable]),
            _mean(self.near_misses) if self.near_misses else "—",
        ]


def _share(flags: Sequence[bool]) -> str:
    return f"{sum(flags) / len(flags):.3f}" if flags else "—"


def _mean(values: Sequence[int]) -> str:
    return f"{sum(values) / len(values):.2f}" if values else "—"


def ask(session: httpx2.Client, bank: Bank, ids: list[str], tallies: dict[tuple[str, int], Tally]) -> None:
    """Ask every question of `bank` through `session`; count into the tally of its group and half."""
    position = {memory_id: index for index, memory_id in enumerate(ids)}
    for question in bank.questions:
        returned = [position[memory_id] for memory_id in search(session, question.text, LIMIT)]
        tally = tallies.setdefault((bank.group, question.half), Tally())
        tally.count(returned, question.relevant, paraphrase=question.paraphrase, near_miss=question.near_miss)


def run(data: Path, conversations_limit: int | None) -> None:
    """Save every bank, ask every question through both engines, print the table."""
    every_bank = banks(data, conversations_limit)
    print(f"machine: {machine()}, load average {os.getloadavg()[0]:.2f} at the start", file=sys.stderr)
    results: dict[str, dict[tuple[str, int], Tally]] = {}
    with tempfile.TemporaryDirectory(prefix="memorybank-precision-") as workdir:
        db_url = f"sqlite:///{Path(workdir) / 'precision.sqlite3'}"
        migrate(db_url)
        accounts: list[Account] = [new_account(db_url) for _ in every_bank]
        saved: list[list[str]] = []
        for name, args in ENGINES:
            with serving(db_url, args=[*NO_RATE_LIMITS, *args]) as server:
                if not saved:
                    started = time.perf_counter()
                    for account, bank in zip(accounts, every_bank, strict=True):
                        with client(server.base_url, account) as session:
                            saved.append([save(session, text) for text in bank.memories])
                    count = sum(map(len, saved))
                    print(f"saved {count} memories in {time.perf_counter() - started:.0f} s", file=sys.stderr)
                tallies: dict[tuple[str, int], Tally] = {}
                for account, bank, ids in zip(accounts, every_bank, saved, strict=True):
                    with client(server.base_url, account) as session:
                        ask(session, bank, ids, tallies)
                results[name] = tallies
    print(report(results))


def report(results: dict[str, dict[tuple[str, int], Tally]]) -> str:
    """One table: per group of banks, per half, per engine."""
    rows: list[list[str]] = []
    groups = list(dict.fromkeys(group for tallies in results.values() for group, _ in tallies))
    for group in groups:
        for half, half_name in enumerate(HALVES):
            for engine, tallies in results.items():
                tally = tallies.get((group, half))
                if tally is not None:
                    rows.append(tally.row(f"{group}, {half_name}: {engine}"))
    header = [
        "bank, half: engine",
        "answerable",
        "recall@5",
        "recall@10",
        "paraphrases recall@5",
        "others beside a found one",
        "unanswerable",
        "results per unanswerable",
        "unanswerable with none",
        "results per near miss",
    ]
    return f"search limit {LIMIT}, through HTTP\n\n" + table(header, rows)
