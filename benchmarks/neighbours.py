"""Can an inclusion rule read from the owner's own bank around the query meet issue 31's targets? An
exploration on `python -m benchmarks.inclusion capture`'s file (its fusion inputs and vectors):

    python -m benchmarks.inclusion capture [--data ../shared/data/locomo/locomo10.json]
    python -m benchmarks.neighbours [--out FILE]

It prints

- **the ceiling**: how often all-MiniLM-L6-v2 puts the answer of a paraphrase (a question sharing no word
  with its memory) among its 5 nearest memories at all, ranked by cosine, by the shipped discounted cosine,
  and by CSLS (the hubness correction of cross-lingual retrieval: 2 cos - each side's mean cosine with its
  k nearest);
- **the gate bound**: a rule that returns a memory only when some score of it clears a threshold leaves an
  unanswerable question empty only when no memory clears it, and finds a paraphrase only when its answer
  does. So, per score, at the threshold that lets 90 % of the paraphrases' answers through, the share of
  unanswerable questions whose best memory clears it too is the least share any such rule answers with
  something. Scores: the standing (z-score against the bank), the rank gap, CSLS, the margin over the
  memory's k-th nearest neighbour, the reverse rank of the query among the memory's neighbours, and the
  best two-score linear gates fitted on the tuning half (then checked on the held-out half);
- **the sweep**: whole rules of each family (word matches as shipped), the best on the tuning half among
  those meeting every other target there, with both halves' figures.

Parameters are chosen on the tuning halves only.
"""

from __future__ import annotations

import argparse
import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from benchmarks.inclusion import DEFAULT_CAPTURE, Capture, Captured, replay
from benchmarks.precision import LIMIT, Tally, report
from memorybank_core import SearchHit
from memorybank_search.fusion import Fusion, Standing

KS = (1, 3, 5, 10)
#: Issue 31's bar for the paraphrases' recall@5.
PARAPHRASE_TARGET = 0.9


@attrs.frozen
class Question:
    """One captured question with every per-memory feature the rules read (arrays over its bank)."""

    item: Captured
    cos: Any
    adjusted: Any
    z: Any
    needed: float
    reverse: Any
    """Per memory: how many of its own neighbours are closer to it than the query (0: the query is its nearest)."""
    kth: dict[int, Any]
    """Per k: each memory's cosine with its k-th nearest other memory."""
    csls: dict[int, Any]
    words: dict[int, tuple[float, bool]]
    """Per BM25 hit: bm25 / max, and whether the shipped rule's word test passes with no meaning."""


def load(capture: Capture) -> list[Question]:
    """Every captured question with its features."""
    per_bank: list[tuple[Any, Any, dict[int, Any], dict[int, Any]]] = []
    for values, scales in capture.banks:
        matrix = values.astype(np.float64) * scales[:, None]
        similar = matrix @ matrix.T
        np.fill_diagonal(similar, -np.inf)
        ordered = -np.sort(-similar, axis=1)  # each row's neighbours, nearest first
        # A bank smaller than k (a toy one) reads its farthest neighbour instead.
        reach = {k: max(1, min(k, len(matrix) - 1)) for k in KS}
        kth = {k: ordered[:, reach[k] - 1] for k in KS}
        mean_k = {k: ordered[:, : reach[k]].mean(axis=1) for k in KS}
        per_bank.append((matrix, similar, kth, mean_k))
    fusion = Fusion()
    found: list[Question] = []
    for item, number in zip(capture.questions, capture.bank_of, strict=True):
        _, similar, kth, mean_k = per_bank[number]
        if not item.similarities:
            continue
        cos = np.array(item.similarities)
        central = np.array(item.centrality)
        adjusted = cos - (central - central.mean())
        standing = Standing.of({str(index): value for index, value in enumerate(adjusted.tolist())})
        z, needed = (adjusted - standing.mean) / standing.deviation, standing.needed
        reverse = (similar > cos[:, None]).sum(axis=1)
        csls = {}
        for k in KS:
            top = np.sort(cos)[::-1][:k].mean()
            csls[k] = 2 * cos - mean_k[k] - top
        best = max((score for _, score, _, _ in item.lexical), default=0.0)
        words: dict[int, tuple[float, bool]] = {}
        for index, score, coverage, terms in item.lexical:
            if best <= 0:
                break
            hit = SearchHit(memory_id=str(index), score=score, coverage=coverage, terms=terms)
            words[index] = (score / best, fusion._words_answer(hit, float(z[index])))
        found.append(Question(item, cos, adjusted, z, needed, reverse, kth, csls, words))
    return found


Rule = Callable[[Question], Any]
"""Per question: a boolean array, which memories the rule returns by meaning."""


def run(questions: Iterable[Question], meaning: Rule) -> dict[tuple[str, int], Tally]:
    """Rank every question: the meaning matches of `meaning`, the word matches as shipped, ordered as shipped
    (standing + 3 · bm25 / max)."""
    tallies: dict[tuple[str, int], Tally] = {}
    for question in questions:
        item = question.item
        included = meaning(question)
        score = question.z
        lexical = np.zeros(len(score))
        keep = included.copy()
        for index, (share, answers) in question.words.items():
            lexical[index] = share
            if answers:
                keep[index] = True
        total = score + 3.0 * lexical
        chosen = np.flatnonzero(keep)
        returned = chosen[np.argsort(-total[chosen], kind="stable")][:LIMIT].tolist()
        tally = tallies.setdefault((item.group, item.half), Tally())
        tally.count(returned, item.relevant, paraphrase=item.paraphrase, near_miss=item.near_miss)
    return tallies


@attrs.frozen
class Figures:
    """The targets' figures for one group and half."""

    paraphrase_recall5: float
    recall10: float
    per_unanswerable: float
    empty_share: float
    beside: float


def figures(tally: Tally) -> Figures:
    found = tally.answerable
    paraphrases = [top5 for top5, _, paraphrase, _ in found if paraphrase]
    beside = [others for _, top10, _, others in found if top10 and others is not None]
    un = tally.unanswerable
    return Figures(
        sum(paraphrases) / len(paraphrases) if paraphrases else float("nan"),
        sum(t for _, t, _, _ in found) / len(found) if found else float("nan"),
        sum(un) / len(un) if un else float("nan"),
        sum(1 for count in un if count == 0) / len(un) if un else float("nan"),
        sum(beside) / len(beside) if beside else 0.0,
    )


def ceiling(questions: Sequence[Question]) -> str:
    """How often the model's top 5 (raw cosine, and each discount) holds the answer of a paraphrase at all."""
    lines = ["ceiling: the answer of a paraphrase among the model's nearest memories"]
    rankings: list[tuple[str, Callable[[Question], Any]]] = [
        ("cosine", lambda q: q.cos),
        ("cosine less centrality (shipped)", lambda q: q.adjusted),
        *((f"CSLS k={k}", _csls(k)) for k in KS),
    ]
    for name, score in rankings:
        for group in ("notes", "notes among conversation"):
            for half in (0, 1):
                flags1, flags5, flags10 = [], [], []
                for q in questions:
                    item = q.item
                    if item.group != group or item.half != half or not item.paraphrase or not item.relevant:
                        continue
                    order = np.argsort(-score(q), kind="stable")
                    rank = min(int(np.flatnonzero(order == index)[0]) for index in item.relevant)
                    flags1.append(rank < 1)
                    flags5.append(rank < 5)
                    flags10.append(rank < 10)
                if not flags5:
                    continue
                lines.append(
                    f"{name:34s} {group:26s} {('tuning', 'held-out')[half]:8s} paraphrases {len(flags5):3d}:"
                    f" top1 {np.mean(flags1):.3f} top5 {np.mean(flags5):.3f} top10 {np.mean(flags10):.3f}"
                )
    return "\n".join(lines)


def _csls(k: int) -> Callable[[Question], Any]:
    return lambda q: q.csls[k]


def _z(values: Any) -> Any:
    return (values - values.mean()) / (values.std() or 1e-9)


def shipped_like(
    margin: float, offset: float, floor: float = 0.15, score: str = "z", reverse: int | None = None
) -> Rule:
    """The shipped rule's shape over a chosen score: the query's best reaches needed + `margin`; a member reaches
    needed + `offset`, its cosine `floor`, and (when given) the query is among its `reverse` nearest neighbours."""

    def rule(q: Question) -> Any:
        values = q.z if score == "z" else _z(q.csls[int(score[4:])])
        included = (values.max() >= q.needed + margin) & (values >= q.needed + offset) & (q.cos >= floor)
        if reverse is not None:
            included &= q.reverse <= reverse
        return included

    return rule


def mutual(gate: float, k: int, reverse: int, floor: float = 0.15) -> Rule:
    """Mutual nearest neighbours: the query's best z reaches needed + `gate`; a member is among the query's `k`
    nearest (discounted cosine) and the query among its `reverse` + 1 nearest."""

    def rule(q: Question) -> Any:
        if q.z.max() < q.needed + gate:
            return np.zeros(len(q.z), dtype=bool)
        order = np.argsort(-q.adjusted, kind="stable")
        near = np.zeros(len(q.z), dtype=bool)
        near[order[:k]] = True
        return near & (q.reverse <= reverse) & (q.cos >= floor)

    return rule


def kth_margin(k: int, margin: float, zmin: float, floor: float = 0.15) -> Rule:
    """The query is closer to a member than the member's k-th nearest memory by `margin`, and it stands `zmin`."""

    def rule(q: Question) -> Any:
        return (q.cos - q.kth[k] >= margin) & (q.z >= zmin) & (q.cos >= floor)

    return rule


def gated_best(weight: float, gate: float, within: float, most: int) -> Rule:
    """A two-feature gate (best z less `weight` · log(1 + the best's reverse rank) reaches needed + `gate`);
    then the members within `within` deviations of the best, at most `most`."""

    def rule(q: Question) -> Any:
        best = int(np.argmax(q.z))
        if q.z[best] - weight * math.log1p(int(q.reverse[best])) < q.needed + gate:
            return np.zeros(len(q.z), dtype=bool)
        order = np.argsort(-q.z, kind="stable")
        top = np.zeros(len(q.z), dtype=bool)
        top[order[:most]] = True
        return top & (q.z >= q.z[best] - within) & (q.cos >= 0.15)

    return rule


def families() -> dict[str, list[tuple[str, Rule]]]:
    """Every rule tried, by family, with its parameters."""
    steps = [x / 4 for x in range(-8, 5)]
    return {
        "standing (shipped shape, re-tuned)": [
            (f"margin {m:+.2f} offset {o:+.2f} floor {f}", shipped_like(m, o, f))
            for m in steps
            for o in steps
            if o <= m
            for f in (0.1, 0.15, 0.2)
        ],
        "CSLS standing": [
            (f"{s} margin {m:+.2f} offset {o:+.2f}", shipped_like(m, o, 0.15, s))
            for s in ("csls3", "csls10")
            for m in steps
            for o in steps
            if o <= m
        ],
        "standing + reverse rank": [
            (f"margin {m:+.2f} offset {o:+.2f} reverse ≤ {r}", shipped_like(m, o, 0.15, "z", r))
            for m in steps
            for o in steps
            if o <= m
            for r in (0, 1, 2, 4, 8)
        ],
        "mutual nearest neighbours": [
            (f"gate {g:+.2f} k {k} reverse ≤ {r}", mutual(g, k, r))
            for g in steps
            for k in (1, 2, 3, 5)
            for r in (0, 1, 2, 3, 5, 8)
        ],
        "margin over the k-th neighbour": [
            (f"k {k} margin {m:+.2f} z ≥ {z}", kth_margin(k, m, z))
            for k in KS
            for m in (-0.1, -0.05, -0.02, 0.0, 0.02, 0.05, 0.1)
            for z in (1.5, 2.0, 2.5, 3.0)
        ],
        "gate on best z and its reverse rank, then near the best": [
            (f"weight {w} gate {g:+.2f} within {d} most {n}", gated_best(w, g, d, n))
            for w in (0.0, 0.5, 1.0)
            for g in steps
            for d in (0.5, 1.0, 2.0)
            for n in (3, 5)
        ],
    }


def sweep(questions: Sequence[Question]) -> str:
    """Per family: the rule with the best tuning paraphrase recall among those meeting every other target on the
    tuning half; its figures on both halves."""
    tuning = [q for q in questions if q.item.half == 0 and q.item.group in ("notes", "LoCoMo")]
    lines = []
    for family, rules in families().items():
        best: tuple[Any, ...] | None = None
        for name, rule in rules:
            tallies = run(tuning, rule)
            notes = figures(tallies[("notes", 0)])
            locomo = figures(tallies[("LoCoMo", 0)])
            if notes.per_unanswerable > 1 or notes.empty_share < 0.5 or notes.beside > 2 or locomo.recall10 < 0.669:
                continue
            key = (notes.paraphrase_recall5, notes.empty_share, -notes.per_unanswerable)
            if best is None or key > best[0]:
                best = (key, name, rule)
        if best is None:
            lines.append(f"{family}: no variant meets the other targets on the tuning half")
            continue
        _, name, rule = best
        lines.append(f"### {family}: {name}")
        lines.append(report({"rule": run(questions, rule)}).split("\n\n", 1)[1])
    return "\n".join(lines)


#: Per question, one number from its bank around it; higher: more likely answerable.
GATE_SCORES: dict[str, Callable[[Question], float]] = {
    "best standing (shipped z)": lambda q: float(q.z.max()),
    "best cosine": lambda q: float(q.cos.max()),
    "best discounted cosine": lambda q: float(q.adjusted.max()),
    "rank gap (z1 - z2)": lambda q: float(np.diff(np.sort(q.z)[-2:])[0]),
    "best CSLS k=1": lambda q: float(q.csls[1].max()),
    "best CSLS k=3": lambda q: float(q.csls[3].max()),
    "best CSLS k=10": lambda q: float(q.csls[10].max()),
    "best z of CSLS k=3": lambda q: float(_z(q.csls[3]).max()),
    "best z of CSLS k=10": lambda q: float(_z(q.csls[10]).max()),
    "best margin over 1st neighbour": lambda q: float((q.cos - q.kth[1]).max()),
    "best margin over 3rd neighbour": lambda q: float((q.cos - q.kth[3]).max()),
    "best margin over 10th neighbour": lambda q: float((q.cos - q.kth[10]).max()),
    "best reverse rank (negated)": lambda q: -float(q.reverse.min()),
    "best z - 0.5 log(1 + reverse rank)": lambda q: float((q.z - 0.5 * np.log1p(q.reverse)).max()),
}


#: The word evidence, for the linear discriminant beside the scores above.
WORD_SCORES: dict[str, Callable[[Question], float]] = {
    "word matches": lambda q: float(len(q.words)),
    "best word share": lambda q: max((share for share, _ in q.words.values()), default=0.0),
    "word matches kept": lambda q: float(sum(kept for _, kept in q.words.values())),
}


def _answer_rank(q: Question) -> int:
    order = np.argsort(-q.adjusted, kind="stable")
    return min(int(np.flatnonzero(order == index)[0]) for index in q.item.relevant)


def _gate_sets(questions: Sequence[Question], half: int) -> tuple[Any, Any, int]:
    """The notes' paraphrases whose answer the shipped ranking puts in its top 5, the unanswerable questions
    (the gate scores, then the word scores: one row each), and how many paraphrases 90 % is."""
    notes = [q for q in questions if q.item.group == "notes" and q.item.half == half]
    paraphrases = [q for q in notes if q.item.relevant and q.item.paraphrase]
    findable = [q for q in paraphrases if _answer_rank(q) < 5]
    unanswerable = [q for q in notes if not q.item.relevant and not q.item.near_miss]
    scores = [*GATE_SCORES.values(), *WORD_SCORES.values()]
    return (
        np.array([[score(q) for score in scores] for q in findable]).reshape(-1, len(scores)),
        np.array([[score(q) for score in scores] for q in unanswerable]).reshape(-1, len(scores)),
        math.ceil(PARAPHRASE_TARGET * len(paraphrases)),
    )


def gate_bound(questions: Sequence[Question]) -> str:
    """Per gate score and half: the share of unanswerable questions it answers when 90 % of the paraphrases pass."""
    lines = [
        "gate bound (notes): unanswerable questions clearing the threshold that lets 90 % of the paraphrases through"
    ]
    halves = [_gate_sets(questions, half) for half in (0, 1)]
    for column, name in enumerate(GATE_SCORES):
        cells = []
        for findable, unanswerable, needed in halves:
            if len(findable) < needed or not len(unanswerable):
                cells.append("the ceiling is below 90 %")
                continue
            threshold = np.sort(findable[:, column])[::-1][needed - 1]
            cells.append(f"{np.mean(unanswerable[:, column] >= threshold):.0%}")
        lines.append(f"  {name:36s} tuning {cells[0]:>5s}  held-out {cells[1]:>5s}")
    (tune_f, tune_u, tune_need), (held_f, held_u, held_need) = halves
    if len(tune_f) < tune_need or len(held_f) < held_need or not len(tune_u) or not len(held_u):
        return "\n".join(lines)
    centre = np.concatenate([tune_f, tune_u]).mean(axis=0)
    spread = np.concatenate([tune_f, tune_u]).std(axis=0) + 1e-9
    tune_f, tune_u, held_f, held_u = ((side - centre) / spread for side in (tune_f, tune_u, held_f, held_u))

    def held(weights: Any) -> str:
        threshold = _answered(tune_f, tune_u, tune_need, weights)[0]
        return (
            f"held-out {np.sum(held_f @ weights >= threshold)} of the paraphrases pass ({held_need} needed),"
            f" {np.mean(held_u @ weights >= threshold):.0%} of the unanswerable answered"
        )

    names = list(GATE_SCORES)
    fitted: list[tuple[float, str, Any]] = []
    for first, second in itertools.combinations(range(len(names)), 2):
        for angle in np.linspace(0, 2 * math.pi, 360, endpoint=False):
            weights = np.zeros(tune_f.shape[1])
            weights[first], weights[second] = math.cos(angle), math.sin(angle)
            fitted.append((0.0, f"{names[first]} & {names[second]}, {math.degrees(angle):.0f}°", weights))
    fitted = sorted((_answered(tune_f, tune_u, tune_need, weights)[1], name, weights) for _, name, weights in fitted)
    best = [(name, weights) for share, name, weights in fitted if share == fitted[0][0]]
    lines.append(
        f"the best two-score linear gates fitted on the tuning half ({len(best)} answer {fitted[0][0]:.0%} of its"
        " unanswerable questions), on the held-out half:"
    )
    lines += [f"  {name}: {held(weights)}" for name, weights in best]
    lines.append("ridge-regularised linear discriminant over every score and the word evidence, fitted on tuning:")
    for ridge in (0.1, 1.0, 10.0):
        within = np.concatenate([tune_f - tune_f.mean(axis=0), tune_u - tune_u.mean(axis=0)])
        weights = np.linalg.solve(np.cov(within.T) + ridge * np.eye(tune_f.shape[1]), tune_f.mean(0) - tune_u.mean(0))
        share = _answered(tune_f, tune_u, tune_need, weights)[1]
        lines.append(f"  ridge {ridge}: tuning {share:.0%} of the unanswerable answered; {held(weights)}")
    return "\n".join(lines)


def _answered(findable: Any, unanswerable: Any, needed: int, weights: Any) -> tuple[float, float]:
    """The threshold on `weights` that lets `needed` of the findable paraphrases through, and the share of the
    unanswerable questions it lets through too."""
    threshold = float(np.sort(findable @ weights)[::-1][needed - 1])
    return threshold, float(np.mean(unanswerable @ weights >= threshold))


def main(argv: Sequence[str] | None = None) -> None:
    """Print the ceiling, the gate bound and the sweep (module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.neighbours")
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_CAPTURE, help="the file `benchmarks.inclusion capture` wrote"
    )
    capture = Capture.read(parser.parse_args(argv).out)
    questions = load(capture)
    print(ceiling(questions))
    print(gate_bound(questions))
    print(report({"hybrid (shipped, replayed)": replay(capture.questions, Fusion())}))
    print(sweep(questions))


if __name__ == "__main__":
    main()
