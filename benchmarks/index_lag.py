"""How soon another connection finds a committed save by its words, on MariaDB, and whether it keeps finding it
(docs/storage.md, ADR 0046).

    python -m benchmarks.index_lag [--saves 400] [--long-saves 60] [--rounds 200]

SQLite writes its full-text index in the save's transaction; InnoDB adds a committed row's words to its full-text
cache moments after the commit returned. On the benchmark server, into a fresh database: one storage saves
memories of three sizes (a sentence; about 2,000 words; Han text at the index bound, 20,480 terms), and right
after each save returns another storage, with connections of its own, searches a word of it. A save not found at
once is looked for again every millisecond: the table gives how many were missed at once and the longest wait.

A second table: in rounds, one storage saves eight memories of 280 words that all hold one new word, and another
searches that word without pause for the next 30 ms. InnoDB moves the words of recent saves from its full-text cache
to its index tables (a sync, every 800 KB the cache grows by default); a search in those milliseconds misses the
saves being moved. The table counts the searches that found fewer than the eight, and the longest run of them.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Sequence
from datetime import UTC, datetime

from benchmarks.common import database_url, drop_database, run_header, table
from memorybank import bootstrap
from memorybank.settings import Settings
from memorybank_core import Memory, SaveRequest, ids, limits
from memorybank_core.entities import Source

OWNER = "usr_01h455vb4pex5vsknk084sn02q"
ORG = "org_01h455vb4pex5vsknk084sn02q"
#: A search not answered with the save within this long counts as never found.
GIVE_UP_SECONDS = 5.0
#: How long each round of the second table searches after its saves.
WATCH_SECONDS = 0.03
#: Saves per round, and the filler words each holds.
ROUND_SAVES, ROUND_WORDS = 8, 280


def _han(size: int, rng: random.Random) -> str:
    return "".join(chr(0x4E00 + rng.randrange(3000)) for _ in range(size))


def _texts(size: str, n: int, rng: random.Random) -> tuple[str, tuple[str, ...]]:
    """Content and snippets of the `n`th save of `size`: its word `zeppelin<n>` ends the content."""
    word = f"zeppelin{n}"
    if size == "a sentence":
        return f"the lighthouse keeper logged the storm {word}", ()
    if size == "about 2,000 words":
        words = " ".join(f"harbor{rng.randrange(100_000)}" for _ in range(2_000))
        return f"{words[: limits.CONTENT.max - 20]} {word}", ()
    snippets = tuple(_han(limits.SNIPPET.max, rng) for _ in range(limits.CONTEXTS_MAX))
    return f"{_han(limits.CONTENT.max - len(word) - 1, rng)} {word}", snippets


def _memory(content: str, snippets: Sequence[str]) -> Memory:
    body: dict[str, object] = {"content": content}
    if snippets:
        body["contexts"] = [{"snippet": snippet} for snippet in snippets]
    request = SaveRequest.parse(body)
    return request.to_memory(
        memory_id=ids.new_id(ids.MEMORY_PREFIX),
        user_id=OWNER,
        org_id=ORG,
        source=Source.CHAT,
        created_at=datetime.now(UTC),
        context_ids=[ids.new_id(ids.CONTEXT_PREFIX) for _ in request.contexts],
    )


def measure(url: str, size: str, saves: int, seed: int) -> list[object]:
    """One row of the table: `saves` saves of `size`, each searched by another connection as it returns."""
    rng = random.Random(seed)
    missed, longest, never = 0, 0.0, 0
    with (
        bootstrap.build(Settings.for_database(url)) as writer,
        bootstrap.build(Settings.for_database(url)) as reader,
    ):
        for n in range(saves):
            memory = _memory(*_texts(size, n, rng))
            writer.storage.store.add(user_id=OWNER, memory=memory)
            returned, looks = time.perf_counter(), 0
            while True:
                looks += 1
                hits = reader.storage.search_engine.search(user_id=OWNER, query=f"zeppelin{n}", limit=5)
                found = any(hit.memory_id == memory.id for hit in hits)
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
    with (
        bootstrap.build(Settings.for_database(url)) as writer,
        bootstrap.build(Settings.for_database(url)) as reader,
    ):
        for round_number in range(rounds):
            word = f"kettle{round_number}"
            for _ in range(ROUND_SAVES):
                fillers = " ".join(f"meadow{rng.randrange(10**9)}" for _ in range(ROUND_WORDS))
                writer.storage.store.add(user_id=OWNER, memory=_memory(f"{word} {fillers}", ()))
            run, watch_until = 0, time.perf_counter() + WATCH_SECONDS
            while time.perf_counter() < watch_until:
                searches += 1
                found = len(reader.storage.search_engine.search(user_id=OWNER, query=word, limit=ROUND_SAVES))
                run = run + 1 if found < ROUND_SAVES else 0
                short += found < ROUND_SAVES
                longest_run = max(longest_run, run)
    return [rounds, searches, short, longest_run]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--saves", type=int, default=400, help="saves of a sentence and of 2,000 words")
    parser.add_argument("--long-saves", type=int, default=60, help="saves at the index bound")
    parser.add_argument("--rounds", type=int, default=200, help="rounds of eight saves, then 30 ms of searches")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    name = "index_lag"
    drop_database(name)
    url = database_url(name)
    try:
        with bootstrap.build(Settings.for_database(url), migrating=True) as migrating:
            migrating.storage.migrate()
        rows = [
            measure(url, "a sentence", args.saves, args.seed),
            measure(url, "about 2,000 words", args.saves, args.seed),
            measure(url, "Han text at the index bound (20,480 terms)", args.long_saves, args.seed),
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
