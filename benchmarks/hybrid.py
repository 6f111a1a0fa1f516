"""Hybrid search against lexical search, through HTTP, in one run: recall, then speed.

    python -m benchmarks.hybrid recall [--data ../shared/data/locomo/locomo10.json] [--conversations N]
    python -m benchmarks.hybrid speed [--memories 1000] [--searches 200] [--workers 2]
    python -m benchmarks.hybrid split [--memories 1000] [--searches 200]

`recall` saves every LoCoMo turn (one user per conversation) and every memory of
benchmarks/paraphrases.json (one more user) through `memorybank serve --search hybrid` on a SQLite
file, then asks every question through that server and through `memorybank serve` (lexical) on the
very same database: recall@1/5/10 and nDCG@10 of both, the difference's 95 % interval (paired
bootstrap over questions), and the paraphrase set's recall@1/5. `python -m benchmarks.recall
--hybrid` runs it too.

`speed` fills one user with `--memories` memories on MariaDB (benchmarks.common), through
`serve --search hybrid --workers N`, timing each save; times `--searches` searches through it and
through a lexical server on the same data (ratio in one run); reports each worker's resident
memory and the model's load time in a fresh process.

`split` fills one user the same way but in-process (the bank and engines `serve --search hybrid`
builds, no HTTP), then times each stage of every search: the lexical half, reading the owner's
vectors, embedding the query, the cosines, the centralities, the fusion, and the rest of the bank's
search (loading the results). Its shares say where a hybrid search's time goes.

LoCoMo is CC BY-NC 4.0: read from ../shared, never copied here.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import attrs
import httpx2

from benchmarks.common import Timing, database_url, drop_database, machine, table
from benchmarks.locomo import DEFAULT_DATA, KS, Question, Retriever, Scores, Turn, evaluate, load, report
from benchmarks.processes import descendants
from harness.served import NO_RATE_LIMITS, REPO_ROOT, run_memorybank, serving
from memorybank_core.bodies import JsonValue
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id
from memorybank_core.use_cases import READ_SCOPE, WRITE_SCOPE

PARAPHRASES = Path(__file__).resolve().parent / "paraphrases.json"
_BOOTSTRAP_RESAMPLES = 2000


@attrs.frozen
class Account:
    """A user of the served bank: the bearer secret to call as them."""

    user_id: str
    secret: str


def new_account(db_url: str) -> Account:
    """A fresh user with a token (`memorybank token create`)."""
    user, org = new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX)
    created = run_memorybank(["token", "create", "--db", db_url, "--user", user, "--org", org], timeout=120)
    if created.returncode != 0:
        raise RuntimeError(created.stderr)
    return Account(user_id=user, secret=created.stdout.splitlines()[-1])


def migrate(db_url: str) -> None:
    """`memorybank migrate`, or the reason it failed."""
    done = run_memorybank(["migrate", "--db", db_url], timeout=300)
    if done.returncode != 0:
        raise RuntimeError(done.stderr)


@contextmanager
def client(base_url: str, account: Account) -> Iterator[httpx2.Client]:
    """An HTTP client calling `base_url` as `account` (one kept-alive connection)."""
    with httpx2.Client(base_url=base_url, headers={"Authorization": f"Bearer {account.secret}"}, timeout=60) as session:
        yield session


def save(session: httpx2.Client, content: str) -> str:
    """Save one memory; its id."""
    answer = session.post("/v1/memory", json={"content": content[:4000]})
    answer.raise_for_status()
    memory_id: str = answer.json()["memory"]["id"]
    return memory_id


def search(session: httpx2.Client, query: str, limit: int = 10) -> list[str]:
    """The ids a search returns, best first."""
    answer = session.get("/v1/memory/search", params={"q": query[:512], "limit": limit})
    answer.raise_for_status()
    return [result["id"] for result in answer.json()["results"]]


@attrs.frozen
class Corpus:
    """What `recall` saved: each conversation's account and turn id per memory id; the paraphrase user."""

    accounts: list[Account]
    turn_of: dict[str, str]
    paraphrase_account: Account
    paraphrase_ids: list[str]


def save_corpus(
    base_url: str, db_url: str, conversations: list[list[Turn]], paraphrases: list[dict[str, str]]
) -> Corpus:
    """Save every turn and every paraphrase memory through the server at `base_url`."""
    accounts = [new_account(db_url) for _ in conversations]
    turn_of: dict[str, str] = {}
    for account, turns in zip(accounts, conversations, strict=True):
        with client(base_url, account) as session:
            for turn in turns:
                turn_of[save(session, turn.text)] = turn.dia_id
    paraphrase_account = new_account(db_url)
    with client(base_url, paraphrase_account) as session:
        paraphrase_ids = [save(session, item["memory"]) for item in paraphrases]
    return Corpus(accounts, turn_of, paraphrase_account, paraphrase_ids)


class HttpRetriever:
    """A `Retriever` asking the server at `base_url` as each conversation's user; `close` ends its connections."""

    def __init__(self, base_url: str, corpus: Corpus) -> None:
        self._base_url = base_url
        self._corpus = corpus
        self._sessions: dict[int, httpx2.Client] = {}
        # Each question is asked once: the recall table and the bootstrap read the same ranking.
        self._asked: dict[tuple[int, str], list[str]] = {}

    def __call__(self, conversation: int, question: str) -> list[str]:
        key = (conversation, question)
        if key not in self._asked:
            self._asked[key] = self._ask(conversation, question)
        return self._asked[key]

    def _ask(self, conversation: int, question: str) -> list[str]:
        if conversation not in self._sessions:
            account = self._corpus.accounts[conversation]
            self._sessions[conversation] = httpx2.Client(
                base_url=self._base_url, headers={"Authorization": f"Bearer {account.secret}"}, timeout=60
            )
        ranked = search(self._sessions[conversation], question, max(KS))
        return [self._corpus.turn_of[memory_id] for memory_id in ranked]

    def close(self) -> None:
        """Close every connection."""
        for session in self._sessions.values():
            session.close()


def paraphrase_recall(base_url: str, corpus: Corpus, paraphrases: list[dict[str, str]]) -> dict[int, float]:
    """Recall@1 and @5 of the paraphrase set: does each question's own memory come back?"""
    hits = dict.fromkeys((1, 5), 0)
    with client(base_url, corpus.paraphrase_account) as session:
        for memory_id, item in zip(corpus.paraphrase_ids, paraphrases, strict=True):
            ranked = search(session, item["question"], 5)
            for k in hits:
                hits[k] += memory_id in ranked[:k]
    return {k: count / len(paraphrases) for k, count in hits.items()}


def per_question_hits(retrieve: Retriever, questions: Sequence[Question], k: int) -> list[int]:
    """1 where a question's evidence is in the top `k`, else 0."""
    return [int(any(turn in q.evidence for turn in retrieve(q.conversation, q.text)[:k])) for q in questions]


def paired_interval(better: Sequence[int], base: Sequence[int], seed: int = 7) -> tuple[float, float, float]:
    """Mean difference and its 95 % bootstrap interval, resampling questions (paired)."""
    differences = [a - b for a, b in zip(better, base, strict=True)]
    rng = random.Random(seed)
    size = len(differences)
    means = sorted(sum(rng.choices(differences, k=size)) / size for _ in range(_BOOTSTRAP_RESAMPLES))
    return sum(differences) / size, means[int(0.025 * len(means))], means[int(0.975 * len(means)) - 1]


def run_recall(data: Path, conversations_limit: int | None) -> None:
    """The recall half (see the module)."""
    conversations, questions = load(data)
    if conversations_limit is not None:
        conversations = conversations[:conversations_limit]
        questions = [q for q in questions if q.conversation < conversations_limit]
    paraphrases = json.loads(PARAPHRASES.read_text())["items"]
    print(f"machine: {machine()}, load average {os.getloadavg()[0]:.2f} at the start", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="memorybank-hybrid-") as workdir:
        db_url = f"sqlite:///{Path(workdir) / 'recall.sqlite3'}"
        migrate(db_url)
        results: dict[str, Scores] = {}
        hits: dict[str, list[int]] = {}
        paraphrase: dict[str, dict[int, float]] = {}
        for name, args in (
            ("hybrid (serve --search hybrid)", ("--search", "hybrid")),
            ("lexical (serve --search lexical)", ("--search", "lexical")),
        ):
            with serving(db_url, args=[*NO_RATE_LIMITS, *args]) as server:
                if not results:
                    started = time.perf_counter()
                    corpus = save_corpus(server.base_url, db_url, conversations, paraphrases)
                    print(
                        f"saved {len(corpus.turn_of)} turns in {time.perf_counter() - started:.0f} s", file=sys.stderr
                    )
                retrieve = HttpRetriever(server.base_url, corpus)
                try:
                    results[name] = evaluate(retrieve, questions)
                    hits[name] = per_question_hits(retrieve, questions, 10)
                finally:
                    retrieve.close()
                paraphrase[name] = paraphrase_recall(server.base_url, corpus, paraphrases)
    print(report(results))
    hybrid, lexical = hits.values()
    mean, low, high = paired_interval(hybrid, lexical)
    print(f"\nrecall@10 hybrid - lexical: {mean:+.3f} [95 % CI {low:+.3f}, {high:+.3f}] (paired bootstrap)\n")
    rows = [[name, f"{scores[1]:.3f}", f"{scores[5]:.3f}"] for name, scores in paraphrase.items()]
    print(f"paraphrase set ({len(paraphrases)} questions sharing no content word with their memory)\n")
    print(table(["engine", "recall@1", "recall@5"], rows))


def _rss_megabytes(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def model_load_seconds() -> float:
    """Import the runtime, check the files and load the model in a fresh process, as a worker does."""
    code = (
        "import time; started = time.perf_counter(); from adapters_embedding import default_embedder; "
        "default_embedder(); print(time.perf_counter() - started)"
    )
    done = subprocess.run(  # noqa: S603 - our own interpreter and code
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    return float(done.stdout.strip())


def _speed_inputs(data: Path, memories: int, searches: int) -> tuple[list[str], list[str]]:
    """`memories` LoCoMo turns for the one user (repeated when there are fewer) and `searches` questions."""
    conversations, questions = load(data)
    texts = [turn.text for turns in conversations for turn in turns][:memories]
    while len(texts) < memories:
        texts += texts[: memories - len(texts)]
    return texts, [q.text for q in questions][:searches]


def run_speed(memories: int, searches: int, workers: int, data: Path) -> None:
    """The speed half (see the module)."""
    texts, queries = _speed_inputs(data, memories, searches)
    print(f"machine: {machine()}, load average {os.getloadavg()[0]:.2f} at the start", file=sys.stderr)
    drop_database("hybrid_speed")
    db_url = database_url("hybrid_speed")
    try:
        migrate(db_url)
        owner, other = new_account(db_url), new_account(db_url)
        rows: list[list[str]] = []
        measured: dict[str, tuple[Timing, Timing]] = {}
        rss: list[float] = []
        for name, args in (("hybrid", ("--search", "hybrid")), ("lexical", ("--search", "lexical"))):
            server_args = [*NO_RATE_LIMITS, "--workers", str(workers), *args]
            with serving(db_url, args=server_args) as server:
                saves: list[float] = []
                with client(server.base_url, owner if name == "hybrid" else other) as session:
                    for text in texts if name == "hybrid" else texts[:200]:
                        started = time.perf_counter()
                        save(session, text)
                        saves.append((time.perf_counter() - started) * 1000)
                with client(server.base_url, owner) as session:
                    for query in queries[:5]:
                        search(session, query)
                    timings: list[float] = []
                    for query in queries:
                        started = time.perf_counter()
                        search(session, query)
                        timings.append((time.perf_counter() - started) * 1000)
                if name == "hybrid":
                    rss = [_rss_megabytes(pid) for pid in descendants(server.pid)]
                measured[name] = (Timing(tuple(saves)), Timing(tuple(timings)))
        for name, (saved, searched) in measured.items():
            rows.append([name, f"{searched.p50:.1f}", f"{searched.p95:.1f}", f"{saved.p50:.1f}", f"{saved.p95:.1f}"])
        hybrid_search, lexical_search = measured["hybrid"][1], measured["lexical"][1]
        print(
            f"MariaDB, serve --workers {workers}, one user with {memories} memories, {len(queries)} LoCoMo questions "
            "(sequential, one client)\n"
        )
        print(table(["search", "search p50 ms", "search p95 ms", "save p50 ms", "save p95 ms"], rows))
        print(
            f"\nhybrid / lexical search p50: {hybrid_search.p50 / lexical_search.p50:.2f}x; "
            f"save p50: {measured['hybrid'][0].p50 / measured['lexical'][0].p50:.2f}x"
        )
        print(f"resident memory per process of the hybrid server (MB): {', '.join(f'{value:.0f}' for value in rss)}")
        print(f"model load in a fresh process (import, sha256 checks, session): {model_load_seconds():.2f} s")
    finally:
        drop_database("hybrid_speed")


@attrs.frozen
class _Caller:
    user_id: str
    organization_id: str
    scopes: frozenset[str] = frozenset({READ_SCOPE, WRITE_SCOPE})


class _Timed:
    """`inner` with its method `method` timed into `spent` (milliseconds per call)."""

    def __init__(self, inner: Any, method: str, spent: list[float]) -> None:
        self._inner, self._method, self._spent = inner, method, spent

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if name != self._method:
            return found
        return _timed(found, self._spent)


def _timed(function: Any, spent: list[float]) -> Any:
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent.append((time.perf_counter() - started) * 1000)

    return timed


def run_split(memories: int, searches: int, data: Path) -> None:
    """The split of one hybrid search into its stages (see the module)."""
    from memorybank import bootstrap
    from memorybank.cli import build_parser
    from memorybank.settings import Settings
    from memorybank_search import hybrid as hybrid_module

    texts, queries = _speed_inputs(data, memories, searches)
    print(f"machine: {machine()}, load average {os.getloadavg()[0]:.2f} at the start", file=sys.stderr)
    drop_database("hybrid_split")
    db_url = database_url("hybrid_split")
    try:
        migrate(db_url)
        settings = Settings.resolve(build_parser({}).parse_args(["serve", "--db", db_url, "--search", "hybrid"]), {})
        with bootstrap.build(settings) as runtime:
            bank = runtime.services.bank
            caller = _Caller(new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX))
            for text in texts:
                bank.save(caller, JsonValue({"content": text}))
            for query in queries[:5]:
                bank.search(caller, query=query)
            stages: dict[str, list[float]] = {
                name: [] for name in ("lexical", "read vectors", "embed query", "cosines", "centralities", "fusion")
            }
            # The engine `serve` built (behind its retrying wrapper), its parts timed in place.
            engine: Any = cast(Any, runtime.storage.search_engine).inner
            engine.lexical = _Timed(engine.lexical, "search", stages["lexical"])
            engine._vectors = _Timed(engine._vectors, "vectors", stages["read vectors"])
            engine.embedder = _Timed(engine.embedder, "embed_query", stages["embed query"])
            engine._fusion = _Timed(engine._fusion, "rank", stages["fusion"])
            untimed_cosines = hybrid_module.cosines
            hybrid_module.cosines = _timed(untimed_cosines, stages["cosines"])
            untimed_centralities = hybrid_module.centralities
            hybrid_module.centralities = _timed(untimed_centralities, stages["centralities"])
            totals: list[float] = []
            rest: list[float] = []
            try:
                for query in queries:
                    before = {name: len(spent) for name, spent in stages.items()}
                    started = time.perf_counter()
                    bank.search(caller, query=query)
                    totals.append((time.perf_counter() - started) * 1000)
                    timed = sum(sum(spent[before[name] :]) for name, spent in stages.items())
                    rest.append(totals[-1] - timed)
            finally:
                hybrid_module.cosines = untimed_cosines
                hybrid_module.centralities = untimed_centralities
    finally:
        drop_database("hybrid_split")
    mean_total = sum(totals) / len(totals)
    rows = []
    for name, spent in [*stages.items(), ("the rest (the bank, loading the results)", rest)]:
        # A stage's mean over every search (a search that skipped it counts 0), so the shares add up.
        mean = sum(spent) / len(totals)
        p50 = Timing(tuple(spent)).p50 if spent else 0.0
        rows.append([name, f"{p50:.2f}", f"{mean:.2f}", f"{100 * mean / mean_total:.0f} %"])
    print(
        f"MariaDB, in-process (no HTTP), one user with {memories} memories, {len(queries)} LoCoMo questions; "
        f"one hybrid search: p50 {Timing(tuple(totals)).p50:.1f} ms, mean {mean_total:.1f} ms\n"
    )
    print(table(["stage", "p50 ms", "mean ms", "share of the mean"], rows))


def main(argv: Sequence[str] | None = None) -> None:
    """Command line."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.hybrid", description=__doc__)
    parser.add_argument("what", choices=("recall", "speed", "split"))
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="locomo10.json (read, never copied)")
    parser.add_argument("--conversations", type=int, default=None, help="recall: only the first N conversations")
    parser.add_argument("--memories", type=int, default=1000, help="speed, split: memories of the measured user")
    parser.add_argument("--searches", type=int, default=200, help="speed, split: searches timed (per engine)")
    parser.add_argument("--workers", type=int, default=2, help="speed: serve --workers")
    arguments = parser.parse_args(argv)
    if arguments.what == "recall":
        run_recall(arguments.data, arguments.conversations)
    elif arguments.what == "split":
        run_split(arguments.memories, arguments.searches, arguments.data)
    else:
        run_speed(arguments.memories, arguments.searches, arguments.workers, arguments.data)


if __name__ == "__main__":
    main()
