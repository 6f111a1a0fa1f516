"""How soon another connection finds a committed save by its words, on MariaDB, and whether it keeps finding it
(docs/storage.md, ADR 0046).

    python -m benchmarks.index_lag [--saves 400] [--long-saves 60] [--rounds 200]

SQLite writes its full-text index in the save's transaction; InnoDB adds a committed row's words to its full-text
cache moments after the commit returned. On the benchmark server, into a fresh database: one bank (built as `serve`
builds it) saves memories of three sizes (a sentence; invented words filling the content's 8,000 characters; Han
text at the index bound, 20,480 terms), and right after each save returns another bank, with connections of its own,
searches a word of it. A save not found at once is looked for again every millisecond: the table gives how many were
missed at once and the longest wait.

A second table: in rounds, one bank saves eight memories of 280 words that all hold one new word, and another
searches that word without pause for the next 30 ms. InnoDB moves the words of recent saves from its full-text cache
to its index tables (a sync, every 800 KB the cache grows by default); a search in those milliseconds misses the
saves being moved. The table counts the searches that found fewer than the eight, and the longest run of them.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Sequence

from benchmarks.common import Principal, database_url, drop_database, open_bank, run_header, table
from memorybank.bootstrap import Runtime
from memorybank_core import limits
from memorybank_core.bodies import JsonValue

OWNER = Principal(user_id="usr_01h455vb4pex5vsknk084sn02q", organization_id="org_01h455vb4pex5vsknk084sn02q")
#: A search not answered with the save within this long counts as never found.
GIVE_UP_SECONDS = 5.0
#: How long each round of the second table searches after its saves.
WATCH_SECONDS = 0.03
#: Saves per round, and the filler words each holds.
ROUND_SAVES, ROUND_WORDS = 8, 280
#: The memories of the first table, by what they hold.
SENTENCE = "a sentence"
FULL_CONTENT = "invented words filling the content (8,000 characters)"
AT_THE_BOUND = "Han text at the index bound (20,480 terms)"


def _han(size: int, rng: random.Random) -> str:
    return "".join(chr(0x4E00 + rng.randrange(3000)) for _ in range(size))


def _body(size: str, n: int, rng: random.Random) -> dict[str, object]:
    """The `n`th save of `size`: its word `zeppelin<n>` ends the content."""
    word = f"zeppelin{n}"
    if size == SENTENCE:
        return {"content": f"the lighthouse keeper logged the storm {word}"}
    if size == FULL_CONTENT:
        words = " ".join(f"harbor{rng.randrange(100_000)}" for _ in range(limits.CONTENT.max // 7))
        return {"content": f"{words[: limits.CONTENT.max - len(word) - 1].rstrip()} {word}"}
    snippets = [{"snippet": _han(limits.SNIPPET.max, rng)} for _ in range(limits.CONTEXTS_MAX)]
    return {"content": f"{_han(limits.CONTENT.max - len(word) - 1, rng)} {word}", "contexts": snippets}


def _found(reader: Runtime, query: str, limit: int) -> list[str]:
    return [result.memory.id for result in reader.services.bank.search(OWNER, query=query, limit=limit)]


def measure(url: str, size: str, saves: int, seed: int) -> list[object]:
    """One row of the table: `saves` saves of `size`, each searched by another bank as it returns."""
    rng = random.Random(seed)
    missed, longest, never = 0, 0.0, 0
    with open_bank(url) as writer, open_bank(url) as reader:
        for n in range(saves):
            saved = writer.services.bank.save(OWNER, JsonValue(_body(size, n, rng)))
            returned, looks = time.perf_counter(), 0
            while True:
                looks += 1
                found = saved.id in _found(reader, f"zeppelin{n}", 5)
                waited = time.perf_counter() - returned
                if found or waited > GIVE_UP_SECONDS:
                    break
                time.sleep(0.001)
            if looks > 1:
                missed += 1
                longest = max(longest, waited)
            never += not found
    return [size, saves, missed, f"{longest * 1000:.1f}", never]


def watch(url: str, rounds: int, seed: int) -> list[object]:
    """The second table's row: searches right after each round's saves that found fewer than the round's saves."""
    rng = random.Random(seed)
    searches = short = longest_run = 0
    with open_bank(url) as writer, open_bank(url) as reader:
        for round_number in range(rounds):
            word = f"kettle{round_number}"
            for _ in range(ROUND_SAVES):
                fillers = " ".join(f"meadow{rng.randrange(10**9)}" for _ in range(ROUND_WORDS))
                writer.services.bank.save(OWNER, JsonValue({"content": f"{word} {fillers}"}))
            run, watch_until = 0, time.perf_counter() + WATCH_SECONDS
            while time.perf_counter() < watch_until:
                searches += 1
                found = len(_found(reader, word, ROUND_SAVES))
                run = run + 1 if found < ROUND_SAVES else 0
                short += found < ROUND_SAVES
                longest_run = max(longest_run, run)
    return [rounds, searches, short, longest_run]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--saves", type=int, default=400, help="saves of a sentence and of a full content")
    parser.add_argument("--long-saves", type=int, default=60, help="saves at the index bound")
    parser.add_argument("--rounds", type=int, default=200, help="rounds of eight saves, then 30 ms of searches")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    name = "index_lag"
    drop_database(name)
    url = database_url(name)
    try:
        open_bank(url, migrate=True).close()
        rows = [
            measure(url, SENTENCE, args.saves, args.seed),
            measure(url, FULL_CONTENT, args.saves, args.seed),
            measure(url, AT_THE_BOUND, args.long_saves, args.seed),
        ]
        watched = watch(url, args.rounds, args.seed)
    finally:
        drop_database(name)
    print(run_header("A save, then another connection's search for a word of it, on the benchmark server."))
    headers = ["memory", "saves", "not found by the first search", "longest wait until found, ms", "never found"]
    print(table(headers, rows))
    print()
    watched_for = f"{WATCH_SECONDS * 1000:.0f} ms"
    print(f"Eight saves of {ROUND_WORDS} words holding one new word, then that word searched for {watched_for}:")
    headers = ["rounds", "searches", "found fewer than the eight", "longest run of such searches"]
    print(table(headers, [watched]))


if __name__ == "__main__":
    main()
