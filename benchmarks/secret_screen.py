"""The save path's secret screen: false positives on ordinary memories, and what it adds to a save.

    python -m benchmarks.secret_screen [--data ../shared/data/locomo/locomo10.json] [--saves 2000]

False positives: every LoCoMo turn (as `benchmarks.recall` reads them), every non-blank line of README.md
and docs/, the synthetic corpus of the other benchmarks (`benchmarks.corpus`), both sides of the paraphrase
set (benchmarks/paraphrases.json) and the harmless table of harness/secret_cases.py go through
`DetectSecretsScreen.find`; each flagged text is printed by its place and kind (never its text). The
real-shaped credentials of the same table are the other side: how many are found. Cost: the screen alone
on LoCoMo turns and on memories at the content bound (`limits.CONTENT.max`, 8,000 characters), wall and
CPU time, then `MemoryBank.save` of LoCoMo turns with the screen and without, into an in-memory store and
into SQLite files, interleaved save by save in one run, so the difference and the ratio are read on the
same machine at the same moment.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from itertools import cycle, islice
from pathlib import Path

from adapters_secrets import DetectSecretsScreen
from benchmarks.common import Principal, bank_with, machine, open_bank, table
from benchmarks.corpus import CorpusSpec, CorpusWriter
from benchmarks.hybrid import PARAPHRASES
from benchmarks.locomo import DEFAULT_DATA, load
from harness.secret_cases import harmless, secrets
from memorybank_core import RecordingEventSink, SaveRequest, SecretScreen, ids, limits

REPO_ROOT = Path(__file__).resolve().parents[1]


def docs_lines() -> list[tuple[str, str]]:
    """(page:line, text) of every non-blank line of README.md and the pages under docs/."""
    pages = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]
    return [
        (f"{page.relative_to(REPO_ROOT)}:{number}", line)
        for page in pages
        for number, line in enumerate(page.read_text().splitlines(), start=1)
        if line.strip()
    ]


def corpus_texts() -> list[tuple[str, str]]:
    """(corpus line n, content) of the synthetic corpus the other benchmarks load (20 users, 2,000 lines)."""
    return [
        (f"corpus line {n}", json.loads(line)["content"])
        for n, line in enumerate(CorpusWriter(CorpusSpec(users=20, seed=5)).lines())
    ]


def paraphrase_texts() -> list[tuple[str, str]]:
    """(paraphrase n memory|question, text): both sides of each item of benchmarks/paraphrases.json."""
    items = json.loads(PARAPHRASES.read_text())["items"]
    return [(f"paraphrase {n} {side}", item[side]) for n, item in enumerate(items) for side in ("memory", "question")]


def ordinary_texts() -> list[tuple[str, list[tuple[str, str]]]]:
    """The sets of ordinary text besides LoCoMo (which needs the shared data), by name: none may be flagged."""
    return [
        ("README and docs lines", docs_lines()),
        ("synthetic corpus (benchmarks.corpus)", corpus_texts()),
        ("paraphrases (benchmarks/paraphrases.json)", paraphrase_texts()),
        ("harmless table (tests/secrets)", [(case.name, case.text) for case in harmless()]),
    ]


def flagged(screen: SecretScreen, texts: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """(where, kinds) of each text the screen finds anything in."""
    found = []
    for where, text in texts:
        kinds = sorted({finding.kind for finding in screen.find(text)})
        if kinds:
            found.append((where, ",".join(kinds)))
    return found


def _ms(call: Callable[[], object], clock: Callable[[], float] = time.perf_counter) -> float:
    started = clock()
    call()
    return (clock() - started) * 1000


def _percentiles(samples: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, round(0.99 * len(ordered)) - 1)]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.secret_screen", description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo's locomo10.json")
    parser.add_argument("--saves", type=int, default=2000, help="saves timed with and without the screen (each)")
    args = parser.parse_args(argv)
    screen = DetectSecretsScreen()

    conversations, _ = load(args.data)
    turns = [(f"conversation {n} {turn.dia_id}", turn.text) for n, turns in enumerate(conversations) for turn in turns]
    sets = [("LoCoMo turns", turns), *ordinary_texts()]
    print(f"# Secret screen ({machine()})\n")
    print("## False positives (ordinary text flagged)\n")
    rows = []
    for name, named_texts in sets:
        hits = flagged(screen, named_texts)
        rows.append((name, len(named_texts), len(hits)))
        for where, kinds in hits:
            print(f"- {name}: {where} flagged as {kinds}")
    print(table(("set", "texts", "flagged"), rows))
    missed = [case.name for case in secrets() if case.kind not in {f.kind for f in screen.find(case.text)}]
    print(f"\nReal-shaped credentials found with their kind: {len(secrets()) - len(missed)} of {len(secrets())}")
    for name in missed:
        print(f"- missed: {name}")

    print("\n## Cost\n")
    texts = [text for _, text in turns]
    long_texts: list[str] = []
    joined = " ".join(texts)
    for start in range(0, min(len(joined), 200 * limits.CONTENT.max), limits.CONTENT.max):
        long_texts.append(joined[start : start + limits.CONTENT.max].strip())
    turn_ms = [_ms(partial(screen.find, text)) for text in texts]
    long_ms = [_ms(partial(screen.find, text)) for text in long_texts]
    # CPU time too: on a shared machine the wall clock also counts the time other processes ran.
    turn_cpu = statistics.median(_ms(partial(screen.find, text), time.process_time) for text in texts)
    long_cpu = statistics.median(_ms(partial(screen.find, text), time.process_time) for text in long_texts)
    average = statistics.mean(len(text) for text in texts)

    user = Principal(user_id=ids.new_id(ids.USER_PREFIX), organization_id=ids.new_id(ids.ORGANIZATION_PREFIX))
    requests = [SaveRequest.parse({"content": text}) for text in islice(cycle(texts), args.saves)]
    cost: list[tuple[object, ...]] = [
        (f"screen alone, LoCoMo turn (mean {average:.0f} chars)", len(texts), *map(_fmt, _percentiles(turn_ms)), ""),
        ("same, CPU time", len(texts), _fmt(turn_cpu), "", ""),
        (f"screen alone, {limits.CONTENT.max}-char memory", len(long_texts), *map(_fmt, _percentiles(long_ms)), ""),
        ("same, CPU time", len(long_texts), _fmt(long_cpu), "", ""),
    ]
    added: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as workdir:
        for store_name in ("in-memory", "SQLite"):
            samples = _paired_saves(store_name, Path(workdir), screen, user, requests)
            screened, unscreened = _percentiles(samples["screened"]), _percentiles(samples["unscreened"])
            differences = [a - b for a, b in zip(samples["screened"], samples["unscreened"], strict=True)]
            added[store_name] = statistics.median(differences)
            ratio = f"{screened[0] / unscreened[0]:.2f}x"
            cost.append((f"save into {store_name}, screened", len(requests), *map(_fmt, screened), ratio))
            cost.append((f"save into {store_name}, unscreened", len(requests), *map(_fmt, unscreened), "1.00x"))
    print(table(("what", "count", "p50 ms", "p99 ms", "p50 ratio"), cost))
    for store_name, difference in added.items():
        print(f"\nThe screen adds {difference:.3f} ms to a save into {store_name} (median of paired differences).")


def _paired_saves(
    store_name: str, workdir: Path, screen: SecretScreen, user: Principal, requests: Sequence[SaveRequest]
) -> dict[str, list[float]]:
    """Each request saved by a screened bank and an unscreened one, one after the other, timed in ms."""
    banks = {}
    for label, wired in (("screened", screen), ("unscreened", None)):
        if store_name == "in-memory":
            banks[label] = bank_with(events=RecordingEventSink(), secret_screen=wired)  # None: the setting's (off)
            continue
        # As `serve --secret-screen refuse|off` builds it.
        runtime = open_bank(
            f"sqlite:///{workdir / label}.sqlite3",
            events=RecordingEventSink(),
            secret_screen="refuse" if wired is not None else "off",
        )
        banks[label] = runtime.services.bank
    samples: dict[str, list[float]] = {"screened": [], "unscreened": []}
    for request in requests[:20]:  # warm-up
        for bank in banks.values():
            bank.save(user, request)
    order = list(banks.items())
    for request in requests:
        # Interleaved, so both see the same load on a shared machine; whichever goes first alternates, so
        # neither always writes right after the other's commit.
        order.reverse()
        for label, bank in order:
            samples[label].append(_ms(partial(bank.save, user, request)))
    return samples


def _fmt(value: float) -> str:
    return f"{value:.3f}"


if __name__ == "__main__":
    main()
