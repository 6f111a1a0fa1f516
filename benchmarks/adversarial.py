"""The slowest inputs we know for each route within the bounds, beside each route's typical cost (ADR 0031).

    python -m benchmarks.adversarial [--backend sqlite|mariadb] [--seed 27] [--fuzz-evaluations 150]
                                     [--repeats 5] [--no-embedder]

Inputs, all within the bounds (`memorybank_core.limits`: content 8,000 characters, 16 snippets of 4,000, 32 tags
of 64, a body of at most 1 MiB, a query of 512):

- **typical**: a LoCoMo-sized memory (one turn as content, the next as its snippet), and the same prose filling
  every field to its bound (the synthetic corpus of `benchmarks.corpus`, so no data set is needed);
- **known shapes** (`SHAPES`): issue 27's reproductions (the unit ``pwd=` `` repeated to fill content and 16
  snippets; two backticks) and, per test of the screen, the unit that made it slowest before ADR 0031 (a keyword
  every few characters, `eyJ`, `sk-`, `A.`, `mysql -p`, zero-width spaces, ...), and Han prose whose bigrams do not
  repeat (the search index's heaviest text, ADR 0040);
- **fuzzed**: a seeded hill-climb per component (the secret screen, the search analyzer, the JSON decoder, the
  hybrid embedder): it repeats a unit of a few tokens (keywords, operators, quotes, anchors, invisible and
  look-alike characters) to fill one field, keeps the units that cost that component most, mutates them, and after
  `--fuzz-evaluations` tries hands its slowest unit on as a whole save filled with it.

Each input goes through each route in-process, one at a time: the REST save and the MCP rail's `postMemory`
(`memorybank serve`'s app over an SQLite file, or MariaDB with `--backend mariadb`, with its secret screen),
`memorybank import`'s judgement of a line (parse + screen), and the search route with each input's first 512
characters as the query, over a bank of 300 ordinary memories of its own. The figure is CPU time of this process
(`time.process_time`, every thread; MariaDB's own CPU is not in it), the minimum of `--repeats` runs, and its ratio
to the route's typical input. The targets: the worst
save at most 5x a typical save at the bounds, and no request within the bounds over 50 ms of CPU.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import UTC, datetime
from itertools import cycle, islice
from pathlib import Path
from typing import Any

import attrs

from adapters_mysql.deferred_vectors import THREAD_NAME as VECTOR_THREAD
from adapters_secrets import DetectSecretsScreen
from benchmarks.common import database_url, drop_database, run_header, table
from benchmarks.corpus import CorpusSpec, CorpusWriter
from memorybank_core import SaveRequest, ids, limits
from memorybank_core.entities import Source
from memorybank_core.errors import InvalidInputError
from memorybank_core.ports import ScreenBudget
from memorybank_core.secret_screening import find_secrets
from memorybank_core.strict_json import strict_json
from memorybank_search import OwnerIndexer
from memorybank_search.indexer import embedding_text

#: The per-request CPU ceiling of the issue: no request within the bounds may cost more.
CEILING_MS = 50.0
#: The worst save may cost at most this many times a typical save at the bounds.
WORST_RATIO = 5.0
#: A save's whole text, as the bounds allow it.
CONTENT, SNIPPET, SNIPPETS = limits.CONTENT.max, limits.SNIPPET.max, limits.CONTEXTS_MAX


@attrs.frozen
class Save:
    """One save's texts: what a route receives (as JSON) and each component reads."""

    name: str
    content: str
    snippets: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()

    def body(self) -> dict[str, Any]:
        """The save's JSON body."""
        body: dict[str, Any] = {"content": self.content}
        if self.tags:
            body["tags"] = list(self.tags)
        if self.snippets:
            body["contexts"] = [{"snippet": snippet} for snippet in self.snippets]
        return body

    def characters(self) -> int:
        """How many characters of text the save holds."""
        return len(self.content) + sum(map(len, self.snippets)) + sum(map(len, self.tags))


def filled(unit: str, size: int) -> str:
    """`unit` repeated to `size` characters, trimmed so that it neither starts nor ends with blanks (the bound
    counts the trimmed text)."""
    text = (unit * (size // max(len(unit), 1) + 1))[:size]
    return text.strip() or "x"


def filling(name: str, unit: str) -> Save:
    """A save whose content and 16 snippets are `unit` repeated to their bounds: issue 27's shape."""
    return Save(name, filled(unit, CONTENT), tuple(filled(unit, SNIPPET) for _ in range(SNIPPETS)))


def han_prose(size: int, seed: int = 27) -> str:
    """`size` characters of Han text in no repeating order (3,000 ideographs, a comma or a full stop now and then):
    CJK text as a person writes it, where nearly every bigram is new, unlike a short unit repeated."""
    rng = random.Random(seed)
    return "".join(
        rng.choice("\u3001\u3002") if rng.random() < 0.08 else chr(0x4E00 + rng.randrange(3000)) for _ in range(size)
    )


#: The units that made each test of the screen slowest before ADR 0031, and issue 27's two reproductions.
SHAPES: tuple[tuple[str, str], ...] = (
    ("issue 27: pwd=` (one backtick)", "pwd=`"),
    ("issue 27: pwd=`` (two backticks)", "pwd=``"),
    ("a keyword glued to keywords", "keypwd"),
    ("an unquoted secret name every 6 characters", "$pwd=>"),
    ("quoted values after names", "pwd='a b"),
    ("a JWT's start, over and over", "eyJ"),
    ("an OpenAI key's start, over and over", "Ask-"),
    ("a URL scheme that never ends", "A."),
    ("mysql -p, over and over", "mysql -p/"),
    ("zero-width spaces between everything", "a\u200b"),
    ("look-alike letters", "\u0410K1a"),
    ("random-looking tokens", "aA1bB2cC3dD4eE5fF6gG7 "),
    ("AWS key ids", "AKIAABCDEFGHIJ012345 "),
    # After ADR 0040: the analyzer's heaviest text is CJK whose bigrams do not repeat (two terms a character).
    ("Han prose (bigrams that do not repeat)", han_prose(CONTENT)),
)

#: The longest unit the fuzzer tries.
_UNIT_MAX = 40
#: What the fuzzer builds units from: whatever the screen's patterns, the analyzer and the JSON decoder react to.
TOKENS = (
    *("a", "A", "0", "_", "-", ".", ":", "/", "@", "=", "`", "'", '"', " ", "\n", "\t", "$", "!", ",", ";", "(", "+"),
    *("aws", "key", "pwd", "pass", "token", "secret", "password", "://", "-us", "eyJ", "AKIA", "xox", "sk-", "ghp_"),
    *("BEGIN", "-----", "mysql", " -p", "hf_", "T3BlbkFJ", "_authToken", "//", "==", "=>", "end", "{", "}", "[", "]"),
    *("\\", "\u200b", "\u00ad", "\u0410", "\uff21", "\uff20", "\u00e9", "\u0301", "\ufb01", "\U0001d400", "東京"),
    *("ab12", "Zz9", "I'm", "it's", "x" * 8, "1" * 9),
)


@attrs.frozen
class Route:
    """One way a request reaches the bank, and how to measure one input through it."""

    name: str
    cost: Callable[[Save], str]
    """Runs the input once and returns what the route answered (a status or an outcome)."""
    save: bool = False
    """Whether the route saves (REST and the rail): the 5x target is the worst save's over a typical save's."""


def vector_thread_seconds() -> dict[int, float]:
    """CPU seconds so far of each thread writing vectors after their saves answered, by thread id."""
    return {
        thread.ident: time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
        for thread in threading.enumerate()
        if thread.name == VECTOR_THREAD and thread.ident is not None and thread.is_alive()
    }


def _request_seconds(call: Callable[[], object]) -> tuple[float, float, object]:
    """One call's CPU seconds on the request's side (this process, less the vector thread's) and the vector
    thread's, with the call's result."""
    before, started = vector_thread_seconds(), time.process_time()
    result = call()
    spent, after = time.process_time() - started, vector_thread_seconds()
    behind = sum(seconds - before.get(ident, 0.0) for ident, seconds in after.items())
    return spent - behind, behind, result


def cpu_ms(call: Callable[[], object], repeats: int) -> tuple[float, object]:
    """The minimum CPU time of `repeats` calls, in milliseconds, and the last call's result. The CPU of the thread
    writing vectors after their saves answered (ADR 0045) is not the request's: `behind_ms` measures it."""
    best, result = float("inf"), None
    for _ in range(repeats):
        spent, _behind, result = _request_seconds(call)
        best = min(best, spent * 1000)
    return best, result


def behind_ms(call: Callable[[], object], repeats: int) -> float:
    """The median CPU milliseconds of the vector thread per call (a call that waits for it to finish)."""
    return statistics.median(_request_seconds(call)[1] * 1000 for _ in range(repeats))


def cpu_and_wall_ms(call: Callable[[], object], repeats: int) -> tuple[float, float]:
    """The minimum CPU time and the median wall time of `repeats` calls, in milliseconds: the wall time holds the
    database server's work, which a process's CPU time does not."""
    cpu, walls = float("inf"), []
    for _ in range(repeats):
        started, clock = time.process_time(), time.perf_counter()
        call()
        walls.append((time.perf_counter() - clock) * 1000)
        cpu = min(cpu, (time.process_time() - started) * 1000)
    return cpu, statistics.median(walls)


# --- the components the fuzzer searches ----------------------------------------------------------------------


_SCREEN = DetectSecretsScreen()
_INDEXER = OwnerIndexer()


def screen(save: Save) -> str:
    """The secret screen over a whole save, with one budget, as the save path runs it."""
    try:
        found = find_secrets(
            _SCREEN, content=save.content, tags=save.tags, snippets=save.snippets, budget=ScreenBudget()
        )
    except InvalidInputError as error:
        return type(error).__name__
    return f"{len(found)} found"


def analyzer(save: Save) -> str:
    """The search analyzer's document of the save (what the store indexes)."""
    return f"{_INDEXER.document(_memory(save)).doc_length} terms"


def json_decoder(save: Save) -> str:
    """The strict JSON decoder over the save's body as a client sends it (non-ASCII escaped)."""
    strict_json(json.dumps(save.body()).encode())
    return "decoded"


def _memory(save: Save) -> Any:
    request = SaveRequest.parse(save.body())
    return request.to_memory(
        memory_id=ids.new_id(ids.MEMORY_PREFIX),
        user_id="usr_01h455vb4pex5vsknk084sn02q",
        org_id="org_01h455vb4pex5vsknk084sn02q",
        source=Source.CHAT,
        created_at=_now(),
        context_ids=[ids.new_id(ids.CONTEXT_PREFIX) for _ in request.contexts],
    )


def _now() -> datetime:
    return datetime.now(UTC)


def embedder_component() -> Callable[[Save], str] | None:
    """The hybrid embedder over the save's embedding text, or None when its packages are not installed."""
    try:
        from adapters_embedding import default_embedder  # optional extra
    except ImportError:
        return None
    try:
        model = default_embedder()
    except (ImportError, OSError):
        return None

    def embed(save: Save) -> str:
        model.embed([embedding_text(_memory(save))])
        return "embedded"

    return embed


def fuzz(component: Callable[[Save], str], *, seed: int, evaluations: int, field: int = CONTENT) -> tuple[str, float]:
    """The unit (repeated to fill one field of `field` characters) that cost `component` most, and that cost.

    A seeded hill-climb: the known shapes and random units first, then mutations (a token replaced, added or
    removed; two units joined) of the slowest ones kept, `evaluations` tries in all.
    """
    rng = random.Random(seed)

    def cost(unit: str) -> float:
        save = Save("fuzz", filled(unit, field))
        try:
            return cpu_ms(lambda: component(save), 1)[0]
        except InvalidInputError:
            return 0.0  # refused by validation before the component's work (a blank text)

    pool: dict[str, float] = {}
    # Short units only: a long known shape (Han prose) is measured as it is, not mutated.
    seeds = [unit for _, unit in SHAPES if len(unit) <= _UNIT_MAX] + [
        "".join(rng.choices(TOKENS, k=rng.randint(1, 5))) for _ in range(20)
    ]
    for unit in seeds[: max(evaluations // 2, 1)]:
        pool[unit] = cost(unit)
    tries = 0
    while len(pool) < evaluations and tries < evaluations * 20:
        tries += 1
        kept = sorted(pool, key=pool.__getitem__, reverse=True)[:8]
        child = _mutated(rng.choice(kept), kept, rng)
        if child not in pool and child.strip():
            pool[child] = cost(child)
    # The slowest few again, with repeats: one run's figure on a shared machine is noisy.
    finalists = sorted(pool, key=pool.__getitem__, reverse=True)[:3]
    again = {unit: min(cost(unit) for _ in range(3)) for unit in finalists}
    worst = max(again, key=again.__getitem__)
    return worst, again[worst]


def _mutated(unit: str, kept: Sequence[str], rng: random.Random) -> str:
    choice = rng.randrange(4)
    if choice == 0:
        return unit + rng.choice(TOKENS)
    if choice == 1 and len(unit) > 1:
        cut = rng.randrange(len(unit))
        return unit[:cut] + unit[cut + 1 :]
    if choice == 2:
        cut = rng.randrange(len(unit) + 1)
        return unit[:cut] + rng.choice(TOKENS) + unit[cut:]
    return (unit + rng.choice(kept))[:_UNIT_MAX]


# --- the routes ------------------------------------------------------------------------------------------------


@contextmanager
def served(
    backend: str = "sqlite", name: str = "adversarial", *, hybrid: bool = False
) -> Iterator[tuple[Any, dict[str, str], Any]]:
    """`memorybank serve`'s app over a fresh database, in-process, a bearer token's headers and the runtime: an
    SQLite file, or with `backend` "mariadb" the database `name` (under $MEMORYBANK_BENCH_DB_PREFIX) on the
    benchmark server, created empty and dropped afterwards. `hybrid`: search as `serve` does by default."""
    from starlette.testclient import TestClient  # the server's packages, only when measuring

    from memorybank import bootstrap
    from memorybank.settings import RateLimitChoice, SearchChoice, Settings

    with tempfile.TemporaryDirectory(prefix="memorybank-adversarial-") as directory:
        if backend == "mariadb":
            drop_database(name)
            url = database_url(name)
            with bootstrap.build(Settings.for_database(url), migrating=True) as migrating:
                migrating.storage.migrate()
        else:
            url = f"sqlite:///{Path(directory) / 'bank.sqlite3'}"
        # The routes' own cost, unlimited: the rate limits are off, as the inputs under test are many.
        settings = Settings.for_database(
            url,
            rate_limits=RateLimitChoice(storage_url="memory://", rules=("*=off",)),
            search=SearchChoice(mode="hybrid" if hybrid else "lexical"),
        )
        runtime = bootstrap.build(settings, serving=True)  # the app's lifespan closes it
        token = runtime.services.tokens.issue(
            user_id="usr_01h455vb4pex5vsknk084sn02q", org_id="org_01h455vb4pex5vsknk084sn02q"
        )
        # The rail serves loopback names only on a loopback bind, as `memorybank serve` does.
        try:
            with TestClient(runtime.app, base_url="http://127.0.0.1:8080", raise_server_exceptions=False) as client:
                yield client, {"Authorization": f"Bearer {token.secret}"}, runtime
        finally:
            if backend == "mariadb":
                drop_database(name)


def hybrid_served(embed: object, backend: str, name: str) -> AbstractContextManager[tuple[Any, dict[str, str], Any]]:
    """`served` with hybrid search when the embedder is measured (`embed`), else nothing."""
    return served(backend, name, hybrid=True) if embed is not None else nullcontext((None, {}, None))


def rest_save(client: Any, headers: dict[str, str]) -> Callable[[Save], str]:
    """`POST /v1/memory`."""
    sending = {**headers, "Content-Type": "application/json"}

    def save(item: Save) -> str:
        response = client.post("/v1/memory", content=_encoded(item), headers=sending)
        # Only a refusal's small body is read: decoding a created memory is the client's work, not the route's.
        error = response.json().get("error", "") if response.status_code >= 400 else ""
        return f"{response.status_code} {error}".strip()

    return save


def rail_save(client: Any, headers: dict[str, str]) -> Callable[[Save], str]:
    """`postMemory` through the MCP rail (`/mcp/agent`, one stateless JSON-RPC POST)."""
    accept = {**headers, "Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

    def save(item: Save) -> str:
        answer = client.post("/mcp/agent", content=_rail_message(item), headers=accept).content
        # The flag is found, not decoded: the tool's text (the answer once more, as a JSON string) comes first, and
        # its quotes are escaped, so the first unescaped `"isError":` is the result's own.
        if b'"isError":false' in answer[: answer.find(b'"structuredContent"')]:
            return "saved"
        data = answer.decode().rsplit("data: ", 1)[-1]
        try:
            result = json.loads(data).get("result", {})
        except ValueError:
            return "no JSON-RPC answer"
        return str(json.loads(result["content"][0]["text"].split("\n", 1)[0]).get("error", "tool error"))

    return save


@functools.cache
def _encoded(item: Save) -> bytes:
    """The save's JSON body, encoded once: the figure is the route's CPU, not the client's encoding of a 300 KB body
    (the client shares this process)."""
    return json.dumps(item.body()).encode()


@functools.cache
def _rail_message(item: Save) -> bytes:
    """The save as a one-shot `tools/call` of `execute_capability`, encoded once."""
    arguments = {"name": "postMemory", "body": item.body()}
    params = {"name": "execute_capability", "arguments": arguments}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode()


def import_line(item: Save) -> str:
    """`memorybank import`'s judgement of one line: parse it, then screen it (nothing is written)."""
    from memorybank.portability import parse_line
    from memorybank_core.secret_screening import secrets_in_memory

    line = json.dumps(
        {"user_id": "usr_01h455vb4pex5vsknk084sn02q", "org_id": "org_01h455vb4pex5vsknk084sn02q", **item.body()}
    )
    memory = parse_line(line, now=_now)
    found = secrets_in_memory(_SCREEN, memory)
    return ",".join(sorted({problem.kind for problem in found})) or "imported"


def rest_search(client: Any, headers: dict[str, str]) -> Callable[[Save], str]:
    """`GET /v1/memory/search?q=` with the input's content cut to the query bound."""

    def search(item: Save) -> str:
        query = item.content[: limits.QUERY.max].strip() or "x"
        return str(client.get("/v1/memory/search", params={"q": query}, headers=headers).status_code)

    return search


# --- the run -----------------------------------------------------------------------------------------------------


def typical_bank() -> Iterator[Save]:
    """Ordinary memories of one person (the synthetic corpus's lines), for the searches to run over."""
    for line in CorpusWriter(CorpusSpec(users=2)).lines():
        yield Save("corpus", json.loads(line)["content"])


def typical_saves() -> tuple[Save, Save]:
    """A LoCoMo-sized save (a sentence and a snippet), and the same kind of prose filling every field."""
    prose = " ".join(json.loads(line)["content"] for line in islice(CorpusWriter(CorpusSpec(users=2)).lines(), 400))
    small = Save("typical: one sentence and a snippet", prose[:150].strip(), (prose[150:300].strip(),))
    sentences = cycle(prose.split(". "))
    texts: list[str] = []
    for size in (CONTENT, *([SNIPPET] * SNIPPETS)):
        text = ""
        while len(text) < size:
            text += next(sentences) + ". "
        texts.append(text[:size].strip())
    return small, Save("typical at the bounds: prose in every field", texts[0], tuple(texts[1:]))


#: A person's memory in English that a hybrid save embeds in its request (56 of the model's tokens, at most 64 are:
#: ADR 0045), where the synthetic corpus's invented words make even the small typical save long for the model.
ENGLISH = Save(
    "English: a sentence, a snippet and two tags (embedded in the request)",
    "Priya prefers the quarterly planning review on Thursday mornings, after the sales numbers are in, and wants the "
    "agenda a day ahead.",
    (
        "Can we move the quarterly review to Thursday morning? I would like the agenda the day before, with the sales "
        "numbers in it.",
    ),
    ("planning", "meetings"),
)

#: How many earlier copies of itself a save's bank holds in the table of the look-up's growth.
COPIES = (0, 5, 20)


def copies_rows(args: argparse.Namespace, items: Sequence[Save]) -> list[list[object]]:
    """Per input, a REST save's and a search's CPU and wall ms (the search asks with the input's first 512
    characters) as the bank holds `COPIES` earlier copies of it, and the CPU each copy adds: what a bank of large
    memories of the same words adds to a request (ADR 0044)."""
    rows: list[list[object]] = []
    with served(args.backend, "adversarial_copies") as (client, headers, _runtime):
        save, search = rest_save(client, headers), rest_search(client, headers)
        for item in items:
            held = 0
            saves: list[tuple[float, float]] = []
            searches: list[tuple[float, float]] = []
            for count in COPIES:
                while held < count:
                    save(item)
                    held += 1
                searches.append(cpu_and_wall_ms(functools.partial(search, item), args.repeats))
                saves.append(cpu_and_wall_ms(functools.partial(save, item), args.repeats))
                held += args.repeats
            for route, figures in (("REST save", saves), ("REST search of its words", searches)):
                slope = (figures[-1][0] - figures[1][0]) / (COPIES[-1] - COPIES[1])
                cells = [f"{cpu:.2f} / {wall:.1f}" for cpu, wall in figures]
                rows.append([item.name, route, *cells, f"{slope:.2f}"])
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    """Print each route's worst known input beside its typical one."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--fuzz-evaluations", type=int, default=150, help="tries per component (default 150)")
    parser.add_argument("--repeats", type=int, default=5, help="runs per figure; the minimum is kept (default 5)")
    parser.add_argument("--no-embedder", action="store_true", help="leave the hybrid embedder out")
    parser.add_argument(
        "--backend",
        choices=("sqlite", "mariadb"),
        default="sqlite",
        help="the routes' database: an SQLite file (default) or MariaDB at $MEMORYBANK_BENCH_MYSQL_URL",
    )
    args = parser.parse_args(argv)
    print(
        run_header(
            f"python -m benchmarks.adversarial --backend {args.backend}: CPU ms of this process per input, "
            "minimum of repeats"
        )
    )

    small, bounded = typical_saves()
    _SCREEN.find("\u0410")  # load the look-alike table once, as a server's first non-ASCII save would
    components: dict[str, Callable[[Save], str]] = {
        "secret screen": screen,
        "search analyzer": analyzer,
        "JSON decoder": json_decoder,
    }
    embed = None if args.no_embedder else embedder_component()
    if embed is not None:
        components["hybrid embedder"] = embed

    print("\n## Components: typical at the bounds, each known shape, and the fuzzer's slowest unit\n")
    fuzzed: list[Save] = []
    rows: list[list[object]] = []
    for name, component in components.items():
        typical_ms, _ = cpu_ms(functools.partial(component, bounded), args.repeats)
        evaluations = args.fuzz_evaluations if name != "hybrid embedder" else max(args.fuzz_evaluations // 5, 10)
        unit, _ = fuzz(component, seed=args.seed, evaluations=evaluations)
        found = filling(f"fuzzed for the {name}: {unit!r}", unit)
        fuzzed.append(found)
        worst = max(
            (
                (cpu_ms(functools.partial(component, save), args.repeats), save)
                for save in [*(filling(label, unit) for label, unit in SHAPES), found]
            ),
            key=lambda measured: measured[0][0],
        )
        (worst_ms, answer), save = worst
        rows.append([name, f"{typical_ms:.2f}", save.name, f"{worst_ms:.2f}", f"{worst_ms / typical_ms:.1f}x", answer])
    print(table(["component", "typical at the bounds", "worst input", "worst", "ratio", "answer"], rows))

    inputs = [small, bounded, ENGLISH, *(filling(label, unit) for label, unit in SHAPES), *fuzzed]
    print("\n## Routes: every input, CPU ms (ratio to the typical save at the bounds)\n")
    route_rows: list[list[object]] = []
    behind: list[list[object]] = []
    over: list[str] = []
    summary: list[list[object]] = []
    with (
        served(args.backend, "adversarial_rest") as (client, headers, _rest),
        served(args.backend, "adversarial_rail") as (rail_client, rail_headers, _rail),
        served(args.backend, "adversarial_search") as (search_client, search_headers, _search),
        hybrid_served(embed, args.backend, "adversarial_hybrid") as (hybrid_client, hybrid_headers, hybrid),
        hybrid_served(embed, args.backend, "adversarial_hybrid_search") as (finder, finder_headers, finder_runtime),
    ):
        # Searches run on their own bank of ordinary memories: the input under test is the query, not what the
        # other routes stored.
        for save in islice(typical_bank(), 300):
            search_client.post("/v1/memory", json=save.body(), headers=search_headers)
        routes = [
            Route("REST save", rest_save(client, headers), save=True),
            Route("MCP rail postMemory", rail_save(rail_client, rail_headers), save=True),
            Route("import line (parse + screen)", import_line),
            Route("REST search (q = the content's first 512)", rest_search(search_client, search_headers)),
        ]
        if embed is not None:
            # The server's default search: a save embeds a short text itself and leaves a long one's vector to the
            # worker's vector thread (ADR 0045), whose CPU is the last table's, not the request's.
            # As for lexical search, hybrid search runs on a bank of its own: ordinary memories, with their vectors.
            for save in islice(typical_bank(), 300):
                finder.post("/v1/memory", json=save.body(), headers=finder_headers)
            # Their vectors first: a vector thread still writing them would be counted as the saves' measured next.
            finder_runtime.storage.deferred_vectors.drain(300)
            hybrid_save = rest_save(hybrid_client, hybrid_headers)
            written_after = hybrid.storage.deferred_vectors

            def save_then_vector(item: Save) -> str:
                answer = hybrid_save(item)
                written_after.drain()
                return answer

            routes += [
                Route("REST save, hybrid", save_then_vector, save=True),
                Route("REST search, hybrid", rest_search(finder, finder_headers)),
            ]
        for route in routes:
            if route.save:
                # Each save route has a bank of its own that holds every input `--repeats` times before it is timed:
                # both routes are measured over the same bank, and a save's `similar` look-up weighs its earlier
                # copies (a person saving again what they saved before, when the look-up matters), not none.
                for item in inputs:
                    for _ in range(args.repeats):
                        route.cost(item)
            measured = [(item, *cpu_ms(functools.partial(route.cost, item), args.repeats)) for item in inputs]
            base_small, base = measured[0][1], measured[1][1]
            if route.name == "REST save, hybrid":
                for item, ms, _answer in measured:
                    later = behind_ms(functools.partial(route.cost, item), args.repeats)
                    behind.append([item.name, f"{ms:.2f}", f"{later:.2f}"])
            for item, ms, answer in measured:
                route_rows.append([route.name, item.name, f"{ms:.2f}", f"{ms / base:.1f}x", answer])
                if ms > CEILING_MS:
                    over.append(f"{route.name}: {item.name} ({ms:.1f} ms)")
            worst_item, worst_ms, _ = max(measured[2:], key=lambda entry: entry[1])
            summary.append(
                [
                    route.name,
                    f"{base_small:.2f}",
                    f"{base:.2f}",
                    worst_item.name,
                    f"{worst_ms:.2f}",
                    f"{worst_ms / base:.1f}x",
                    f"{worst_ms / base_small:.1f}x",
                ]
            )
    print(table(["route", "input", "CPU ms", "x typical at the bounds", "answer"], route_rows))
    print(f"\nEach save route's bank held every input {args.repeats} times before it was timed.")
    if behind:
        print("\n## Hybrid: what the worker's vector thread spends after a save answered (ADR 0045)\n")
        print(table(["input", "the save's request, CPU ms", "its vector, written after, CPU ms"], behind))
    print("\n## A save and a search over more copies of the input (a save's `similar` look-up is a search)\n")
    han = next(item for item in inputs if item.name.startswith("Han prose"))
    growth = copies_rows(args, [bounded, han])
    columns = [f"{count} copies: CPU / wall" for count in COPIES]
    print(table(["input", "request", *columns, "CPU ms per copy from 5 to 20"], growth))
    print("\n## Summary: each route's worst input beside its typical ones\n")
    print(
        table(
            ["route", "typical (small)", "typical at the bounds", "worst input", "worst", "x bounds", "x small"],
            summary,
        )
    )
    # Every saving route: the REST save and the rail's postMemory (the rail's name does not say "save").
    saving = {route.name for route in routes if route.save}
    ratio = max(float(str(row[5]).rstrip("x")) for row in summary if row[0] in saving)
    print(
        f"\nworst save / typical save at the bounds: {ratio:.1f}x (target <= {WORST_RATIO:.0f}x); "
        f"requests over {CEILING_MS:.0f} ms of CPU: {', '.join(over) if over else 'none'}"
    )


if __name__ == "__main__":
    main()
