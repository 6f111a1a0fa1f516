"""LoCoMo for the recall benchmarks: its turns and questions (`load`), and how a retriever is scored on them
(`evaluate`, `report`). `benchmarks.recall` (the engines in process) and `benchmarks.hybrid` (lexical against hybrid,
served) both score with it, so neither imports the other for it.

LoCoMo is CC BY-NC 4.0 (non-commercial research use): it is read from ../shared, never copied here.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from benchmarks.common import table

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
