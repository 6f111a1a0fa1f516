"""What a memory request costs beside a bare one, as ratios measured in one run (issue #24).

    python -m benchmarks.request_cost --backend mariadb --rows 10000
    python -m benchmarks.request_cost --backend sqlite --rows 10000

Absolute milliseconds move 2-3x between machines; ratios taken in one run, on one server and one
client, do not. The command:

1. loads (once, through the bulk import path, then kept) a database of `--rows` memories, 100 per
   user (`memorybank_bench_cost_N` on MariaDB, /tmp/memorybank-bench/cost_N.sqlite3), and gives
   every user a fresh token;
2. starts the real `memorybank serve` (1 worker; rate limits on, at limits this single client stays
   under, in memory unless $MEMORYBANK_RATE_LIMIT_STORAGE names Redis; quotas and the gate on) and
   times, interleaved call by call over one keep-alive connection: `GET /healthz` (the bare
   request), list (20), search for a rare and a common word (20 results), save with 2 contexts,
   the MCP rail's search (rare word) and save (a one-shot `tools/call` of `execute_capability`
   on `/mcp/agent`, answered in SSE, on a second keep-alive connection), the floor
   (`benchmarks.floor_app`) with each route's round trips; and in this process the same list use
   case (`MemoryBank.list` on the same database);
3. prints the ratio table with each target and PASS/MISS (the rail's at most 1.3 x REST), and our
   own code's cost per route (route p50 - its floor's) against half of the last round's (issue 32);
4. counts the database round trips each route costs, and the app's CPU per request (a second
   server, `benchmarks.counted_serve`), against issue 32's round-trip targets on MariaDB;
5. puts wrk's mixed load (benchmarks/mix.lua: 60 % search, 20 % list, 20 % save, random users) on
   `--workers 2`, then `GET /healthz` under the same wrk on the same server (its ceiling), and the
   floor app with a mixed request's round trips on as many workers, and prints throughput (against
   1,000 requests/s) and as a share of that ceiling, p99, and how the CPU split between the app's
   processes, the database server, wrk and the rest of the machine (from /proc over each run), per
   request too; and the mix's ceiling were the app's own code as cheap as the floor's (the database
   and wrk working as under the mix); then
   deletes what the mix saved, so a second run measures the same corpus.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from urllib.parse import urlencode

import attrs
import sqlalchemy as sa
from tqdm import tqdm

from adapters_mysql.schema import api_token, memory
from benchmarks import wrk
from benchmarks.common import Timing, database_url, delete_saved_since, open_bank, run_header
from benchmarks.corpus import COMMON, RARE, CorpusSpec, CorpusWriter
from benchmarks.counted_serve import COUNT_ENV, read_counts
from benchmarks.floor_app import floor_server
from benchmarks.http_overhead import KeepAliveClient
from benchmarks.processes import thread_cpu_seconds
from benchmarks.wrk import WrkLoad
from harness.served import REPO_ROOT, serving
from memorybank.portability import import_lines
from memorybank_core import MemoryBank, TokenPrincipal

MEMORIES_PER_USER = 100
SEED = 24
SQLITE_HOME = Path(tempfile.gettempdir()) / "memorybank-bench"
#: Rate limits stay on (every request is checked), at a level one benchmark client stays under.
LOAD_SLICES = 3
"""The mix and the bare request alternate in this many slices: a VM's speed drifts over minutes."""
GENEROUS_RULE = "*=1000000/minute"
"""Rate limits on, at a limit the single client stays under."""
GENEROUS_LIMITS = ("--rate-limit", GENEROUS_RULE)
COUNTED_SERVE = "benchmarks.counted_serve"
COUNTED_CALLS = 200
BARE = "GET /healthz"


# --- data --------------------------------------------------------------------------------------


def _url(backend: str, rows: int) -> str:
    if backend == "mariadb":
        return database_url(f"cost_{rows}")
    SQLITE_HOME.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{SQLITE_HOME / f'cost_{rows}.sqlite3'}"


def _spec(rows: int) -> CorpusSpec:
    return CorpusSpec(users=max(1, rows // MEMORIES_PER_USER), memories_per_user=MEMORIES_PER_USER, seed=SEED)


@attrs.frozen
class Prepared:
    """The database, every user's bearer secret, and the measured user's."""

    url: str
    secrets: list[str]
    measured_secret: str
    measured: TokenPrincipal


def prepare(backend: str, rows: int) -> Prepared:
    """Make (or keep) the database of `rows` memories, compact its search index, and issue every user a fresh token
    (the old ones go)."""
    url = _url(backend, rows)
    # An SQLite file is created ready; a MariaDB database is migrated (a no-op when it is at head).
    with open_bank(url, migrate=backend == "mariadb") as runtime:
        storage = runtime.storage
        with storage.engine.connect() as connection:
            present = connection.execute(sa.select(sa.func.count()).select_from(memory)).scalar_one()
        spec = _spec(rows)
        if present < spec.rows:
            if present:
                raise SystemExit(f"{url}: holds {present} memories, fewer than {spec.rows}; drop it and rerun")
            with tqdm(total=spec.rows, unit="memory", mininterval=5, file=sys.stderr) as bar:
                import_lines(CorpusWriter(spec).lines(), storage.store, batch_size=1000, progress=bar.update)
        # Every run starts from a rebuilt index: the deletes of earlier runs' saves would otherwise slow each search
        # more than the last (InnoDB checks every full-text query against every deleted row, benchmarks.fulltext_churn).
        storage.compact_search_index()
        with storage.engine.begin() as connection:
            connection.execute(api_token.delete())
            owners = connection.execute(
                sa.select(memory.c.user_id, sa.func.min(memory.c.org_id))
                .group_by(memory.c.user_id)
                .order_by(memory.c.user_id)
            ).all()
        tokens = runtime.services.tokens
        secrets = {user_id: tokens.issue(user_id=user_id, org_id=org_id).secret for user_id, org_id in owners}
    measured_user = CorpusWriter(spec).measured_user
    org_id = next(org for user, org in owners if user == measured_user)
    principal = TokenPrincipal(
        user_id=measured_user, organization_id=org_id, scopes=frozenset({"mcp:read", "mcp:write"})
    )
    return Prepared(url=url, secrets=list(secrets.values()), measured_secret=secrets[measured_user], measured=principal)


# --- single requests, interleaved --------------------------------------------------------------


LIST = "HTTP list (20)"
SEARCH_RARE = f"HTTP search, rare word ({RARE})"
SEARCH_COMMON = f"HTTP search, common word ({COMMON})"
SAVE = "HTTP save, 2 contexts"
IN_PROCESS_LIST = "in-process list (20), MemoryBank.list"
MCP_SEARCH = f"MCP search, rare word ({RARE})"
MCP_SAVE = "MCP save, 2 contexts"
MCP_ACCEPT = "application/json, text/event-stream"
RAIL = "/mcp/agent"
#: The rail's calls beside the same REST request (issue 32's target: at most 1.3 x).
MCP_BESIDE_REST = ((MCP_SEARCH, SEARCH_RARE), (MCP_SAVE, SAVE))
MCP_TARGET = 1.3
#: Round trips to MariaDB each route may make (issue 32).
ROUND_TRIP_TARGETS = {LIST: 2, SEARCH_RARE: 3, SEARCH_COMMON: 3, SAVE: 4}
#: Route p50 - floor p50 on MariaDB in the last round's two quiet runs (commit 9177533, docs/benchmarks.md):
#: the target is half of it.
LAST_ROUND_OWN_COST_MS = {LIST: (2.59, 3.57), SEARCH_RARE: (4.50, 5.83), SAVE: (3.79, 5.09)}
MIX_TARGET_PER_SECOND = 1000


#: What the timed saves say: corpus-like text, a different memory each (not 600 copies of one probe: since issue 29
#: a save looks up its similar memories, and a bank of copies made every timed save weigh hundreds of them).
_PROBES = CorpusWriter(CorpusSpec(users=1, seed=SEED + 1)).probe_sentences(4096)


def _save_body(number: int) -> bytes:
    return json.dumps(
        {
            "content": _PROBES[number % len(_PROBES)],
            "contexts": [{"snippet": "first", "conversation_id": "c1"}, {"snippet": "second"}],
        }
    ).encode()


def _rpc(arguments: dict[str, object]) -> bytes:
    """A one-shot `tools/call` of `execute_capability`, as an agent sends it."""
    params = {"name": "execute_capability", "arguments": arguments}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode()


def _rpc_result(answer: bytes) -> dict[str, object]:
    """The structured content of a tool result, from its one SSE event (or plain JSON)."""
    text = answer.decode()
    data = next((line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")), text)
    result = json.loads(data)["result"]
    if result.get("isError"):
        raise RuntimeError(f"the rail answered an error: {data[:200]}")
    structured: dict[str, object] = result["structuredContent"]
    return structured


def _calls(
    client: KeepAliveClient,
    rail: KeepAliveClient,
    bank: MemoryBank,
    principal: TokenPrincipal,
    saved: list[str],
) -> dict[str, Callable[[], object]]:
    def search(word: str) -> Callable[[], object]:
        path = "/v1/memory/search?" + urlencode({"q": word, "limit": 20})
        return lambda: client.request("GET", path, expect=200)

    def save() -> None:
        answer = client.request("POST", "/v1/memory", _save_body(len(saved)), expect=201)
        saved.append(json.loads(answer)["memory"]["id"])

    def rail_search() -> None:
        _rpc_result(
            rail.request("POST", RAIL, _rpc({"name": "getMemorySearch", "query": {"q": RARE, "limit": 20}}), expect=200)
        )

    def rail_save() -> None:
        body = json.loads(_save_body(len(saved)))
        structured = _rpc_result(rail.request("POST", RAIL, _rpc({"name": "postMemory", "body": body}), expect=200))
        saved.append(structured["body"]["memory"]["id"])  # type: ignore[index]

    return {
        BARE: lambda: client.request("GET", "/healthz", expect=200),
        LIST: lambda: client.request("GET", "/v1/memory?limit=20", expect=200),
        SEARCH_RARE: search(RARE),
        SEARCH_COMMON: search(COMMON),
        SAVE: save,
        MCP_SEARCH: rail_search,
        MCP_SAVE: rail_save,
        IN_PROCESS_LIST: lambda: bank.list(principal, limit=20),
    }


FLOOR_BARE = "floor: GET /healthz"
"""The floor app's own bare request: beside ours, what memorybank's middleware adds to a bare request."""


def floor_name(round_trips: int) -> str:
    """The floor's row for a route of `round_trips` database round trips."""
    return f"floor: one hop + {round_trips} round trips"


def measure_requests(
    prepared: Prepared, *, iterations: int, budget_seconds: float, floors: Sequence[int] = ()
) -> dict[str, Timing]:
    """p50s of the bare request, the memory routes, the in-process list and the floor with each of
    `floors` round trips (benchmarks.floor_app), interleaved call by call."""
    saved: list[str] = []
    samples: dict[str, list[float]] = {}
    with (
        # The in-process list is the server's use case on the same database, built as `serve` builds it.
        open_bank(prepared.url) as runtime,
        serving(prepared.url, args=GENEROUS_LIMITS) as server,
        KeepAliveClient(server.base_url, prepared.measured_secret) as client,
        KeepAliveClient(server.base_url, prepared.measured_secret, accept=MCP_ACCEPT) as rail,
        floor_server(prepared.url) as floor,
        KeepAliveClient(floor.base_url, "") as floor_client,
    ):
        calls = _calls(client, rail, runtime.services.bank, prepared.measured, saved)
        for trips in floors:
            path = f"/floor?trips={trips}"
            calls[floor_name(trips)] = partial(floor_client.request, "GET", path, expect=200)
        if floors:
            calls[FLOOR_BARE] = partial(floor_client.request, "GET", "/healthz", expect=200)
        for call in calls.values():
            for _ in range(5):
                call()
        samples = {name: [] for name in calls}
        started = time.perf_counter()
        order = list(calls.items())
        shuffler = random.Random(SEED)
        for _ in range(iterations):
            # Call by call, so every route sees the same moments of a shared machine's load; in a new
            # order each round, so no route always follows the same one (a server idle since its last
            # call wakes slower than one that just answered).
            shuffler.shuffle(order)
            for name, call in order:
                before = time.perf_counter()
                call()
                samples[name].append((time.perf_counter() - before) * 1000)
            if time.perf_counter() - started > budget_seconds:
                break
        # Leave the corpus as it was.
        for memory_id in saved:
            client.request("DELETE", f"/v1/memory/{memory_id}", expect=204)
    return {name: Timing(tuple(values)) for name, values in samples.items()}


@attrs.frozen
class Target:
    """One line of the ratio table."""

    what: str
    measured: str
    target: str
    met: bool


def ratio_targets(timings: dict[str, Timing]) -> list[Target]:
    """The issue's single-request targets, from one run's p50s."""
    bare = timings[BARE].p50
    targets = []
    for name, most in ((LIST, 3.0), (SEARCH_RARE, 4.0), (SEARCH_COMMON, 4.0), (SAVE, 4.0)):
        ratio = timings[name].p50 / bare
        targets.append(Target(f"{name} p50 / bare p50", f"{ratio:.2f} x", f"≤ {most:g} x", ratio <= most))
    added = timings[LIST].p50 - timings[IN_PROCESS_LIST].p50
    targets.append(
        Target(
            "HTTP list p50 - in-process list p50, in bare p50s",
            f"{added / bare:.2f} x ({added:.2f} ms)",
            "≤ 1.5 x",
            added <= 1.5 * bare,
        )
    )
    for rail_call, rest_call in MCP_BESIDE_REST:
        ratio = timings[rail_call].p50 / timings[rest_call].p50
        targets.append(
            Target(f"{rail_call} p50 / {rest_call} p50", f"{ratio:.2f} x", f"≤ {MCP_TARGET:g} x", ratio <= MCP_TARGET)
        )
    return targets


def own_cost_targets(timings: dict[str, Timing], costs: dict[str, RouteCost]) -> list[Target]:
    """Route p50 - its floor's p50 (our own code's cost) against half of the last round's (MariaDB)."""
    targets = []
    for name, (low, high) in LAST_ROUND_OWN_COST_MS.items():
        floor = timings.get(floor_name(round(costs[name].round_trips)))
        if floor is None:
            continue
        own = timings[name].p50 - floor.p50
        targets.append(
            Target(
                f"{name}: route p50 - floor p50",
                f"{own:.2f} ms",
                f"≤ half of {low:.2f}-{high:.2f} ms ({low / 2:.2f}-{high / 2:.2f})",
                own <= high / 2,
            )
        )
    return targets


def round_trip_targets(costs: dict[str, RouteCost]) -> list[Target]:
    """Round trips per route against the issue's targets (MariaDB)."""
    return [
        Target(f"{name}: round trips", f"{costs[name].round_trips:g}", f"≤ {most}", costs[name].round_trips <= most)
        for name, most in ROUND_TRIP_TARGETS.items()
    ]


def print_targets(targets: Sequence[Target]) -> None:
    """A target table."""
    print("| target | measured | target | |")
    print("|---|---|---|---|")
    for target in targets:
        print(f"| {target.what} | {target.measured} | {target.target} | {'PASS' if target.met else 'MISS'} |")


def print_requests(timings: dict[str, Timing], targets: Sequence[Target]) -> None:
    """The p50 table and the ratio table."""
    bare = timings[BARE].p50
    print("| request | p50 ms | p95 ms | p50 / bare |")
    print("|---|---|---|---|")
    for name, timing in timings.items():
        print(f"| {name} | {timing.p50:.2f} | {timing.p95:.2f} | {timing.p50 / bare:.2f} x |")
    print()
    print_targets(targets)


def print_floor(timings: dict[str, Timing], costs: dict[str, RouteCost]) -> None:
    """Each route beside the floor of its round trips: what the stack costs, and what the app adds; beside it, where a
    request's CPU went (counted apart, `count_round_trips`): the app's, and the database server's own work for it."""
    bare = timings[BARE].p50
    print(
        "| route | round trips | floor p50 / bare | route p50 / bare | route p50 - floor p50 | app CPU ms "
        "| database CPU ms |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, cost in costs.items():
        floor = timings.get(floor_name(round(cost.round_trips)))
        if name == BARE or floor is None:
            continue
        route = timings[name].p50
        print(
            f"| {name} | {cost.round_trips:.0f} | {floor.p50 / bare:.2f} x | {route / bare:.2f} x "
            f"| {route - floor.p50:.2f} ms | {cost.cpu_ms:.2f} | {cost.database_cell} |"
        )


# --- round trips -------------------------------------------------------------------------------


@attrs.frozen
class RouteCost:
    """What one request of a route costs the server: database round trips, and the app's CPU."""

    round_trips: float
    cpu_ms: float
    """The server process's CPU per request (its threads' run time, from /proc, in nanoseconds), the vector
    thread's included."""
    after_round_trips: float = 0.0
    """Round trips of the thread writing the vectors of long saves after they answered (hybrid, ADR 0045)."""
    database_cpu_ms: float | None = None
    """The database server's CPU per request (its threads' run time), when it runs on this machine: its own work
    for the route, which no change to the app's code removes."""

    @property
    def database_cell(self) -> str:
        """The database's CPU as a table shows it: SQLite's is the app's own."""
        return f"{self.database_cpu_ms:.2f}" if self.database_cpu_ms is not None else "in the app"


def count_round_trips(prepared: Prepared, *, calls: int = COUNTED_CALLS) -> dict[str, RouteCost]:
    """Database round trips and app CPU per request, route by route, on a server that counts round trips.

    CPU time, unlike wall time, hardly moves with what else the machine runs: it says where a
    request's cost is even on a loaded machine.
    """
    saved: list[str] = []
    counts: dict[str, RouteCost] = {}
    database_pid = wrk.database_server_pid(prepared.url)

    def database_seconds() -> float:
        return thread_cpu_seconds(database_pid) if database_pid is not None else 0.0

    with tempfile.TemporaryDirectory(prefix="memorybank-bench-") as directory:
        count_file = Path(directory) / "count"
        with (
            open_bank(prepared.url) as runtime,
            serving(
                prepared.url, args=GENEROUS_LIMITS, module=COUNTED_SERVE, env={COUNT_ENV: str(count_file)}
            ) as server,
            KeepAliveClient(server.base_url, prepared.measured_secret) as client,
            KeepAliveClient(server.base_url, prepared.measured_secret, accept=MCP_ACCEPT) as rail,
        ):
            for name, call in _calls(client, rail, runtime.services.bank, prepared.measured, saved).items():
                if name == IN_PROCESS_LIST:
                    continue
                for _ in range(3):
                    call()  # warm: the pool's connection, the token cache
                before, cpu_before = _settled(count_file, server.process.pid), thread_cpu_seconds(server.process.pid)
                database_before = database_seconds()
                for _ in range(calls):
                    call()
                after = _settled(
                    count_file, server.process.pid
                )  # the route's vectors written after its answers count with it
                counts[name] = RouteCost(
                    round_trips=(after[0] - before[0]) / calls,
                    cpu_ms=(thread_cpu_seconds(server.process.pid) - cpu_before) * 1000 / calls,
                    after_round_trips=(after[1] - before[1]) / calls,
                    database_cpu_ms=(
                        (database_seconds() - database_before) * 1000 / calls if database_pid is not None else None
                    ),
                )
            # A fresh connection: the server may have closed the first one while the rail's calls ran.
            with KeepAliveClient(server.base_url, prepared.measured_secret) as cleaner:
                for memory_id in saved:
                    cleaner.request("DELETE", f"/v1/memory/{memory_id}", expect=204)
    return counts


def _settled(count_file: Path, pid: int, *, pause: float = 0.3, limit: float = 15.0) -> tuple[int, int]:
    """The counted server's totals once it is idle: no round trip of its vector thread and no CPU spent over
    `pause` seconds (a hybrid server writes long saves' vectors after they answered: their work is the saves', not
    the next route's; embedding a batch spends CPU with no round trip)."""
    counts, cpu, deadline = read_counts(count_file), thread_cpu_seconds(pid), time.monotonic() + limit
    while time.monotonic() < deadline:
        time.sleep(pause)
        now, spent = read_counts(count_file), thread_cpu_seconds(pid)
        if now[1] == counts[1] and spent - cpu < _IDLE_CPU_SECONDS:
            return now
        counts, cpu = now, spent
    return counts


#: CPU a server spends in `_settled`'s pause when idle (its event loop, the pool's keep-alive): under a millisecond.
_IDLE_CPU_SECONDS = 0.002


def print_round_trips(costs: dict[str, RouteCost], backend: str) -> None:
    """The round-trip and CPU table."""
    unit = "statements (SQLite: in-process, no network)" if backend == "sqlite" else "round trips to MariaDB"
    bare = costs[BARE].cpu_ms or float("nan")
    print(
        f"| route | {unit} per request | after the answer (vector thread) | app CPU ms per request | CPU / bare "
        "| database CPU ms per request |"
    )
    print("|---|---|---|---|---|---|")
    for name, cost in costs.items():
        print(
            f"| {name} | {cost.round_trips:g} | {cost.after_round_trips:g} | {cost.cpu_ms:.2f} | "
            f"{cost.cpu_ms / bare:.1f} x | {cost.database_cell} |"
        )
    print("\n(App CPU includes the vector thread's: what a hybrid save costs the worker, before and after it answers.)")


# --- mixed load against the bare ceiling --------------------------------------------------------


@attrs.frozen
class LoadRun:
    """One wrk run (the mix, or the bare request) and what it measured."""

    what: str
    load: WrkLoad


#: The floor's round trips under load: a mixed request's, rounded (list 2, search 3, save 3).
LOAD_FLOOR_ROUND_TRIPS = 3
FLOOR_LOAD = f"floor: one hop + {LOAD_FLOOR_ROUND_TRIPS} round trips"


def measure_load(
    prepared: Prepared, *, workers: int, duration: int, connections: int, slices: int = LOAD_SLICES
) -> tuple[LoadRun, LoadRun, LoadRun]:
    """The mix, the bare request and the floor (benchmarks.floor_app with a mixed request's round trips) under the
    same wrk, each on `--workers N`, alternating in `slices` slices of `duration / slices` seconds each, so all see
    the same moments of the machine."""
    seconds = max(1, round(duration / slices))
    loads = (("mix 60/20/20", ()), (BARE, wrk.BARE_MODE), (FLOOR_LOAD, wrk.floor_mode(LOAD_FLOOR_ROUND_TRIPS)))
    taken: dict[str, list[WrkLoad]] = {what: [] for what, _mode in loads}
    started_at = datetime.now(UTC)
    with tempfile.TemporaryDirectory(prefix="memorybank-bench-") as directory:
        tokens_file = Path(directory) / "tokens.txt"
        tokens_file.write_text("\n".join(prepared.secrets) + "\n")
        with (
            serving(prepared.url, args=[*GENEROUS_LIMITS, "--workers", str(workers)]) as server,
            floor_server(prepared.url, workers=workers) as floor,
        ):
            for number in range(slices):
                for what, mode in loads:
                    on_floor = what == FLOOR_LOAD
                    url, pid = (floor.base_url, floor.pid) if on_floor else (server.base_url, server.process.pid)
                    load = wrk.measure(
                        url,
                        pid,
                        tokens_file,
                        database_url=prepared.url,
                        duration=seconds,
                        connections=connections,
                        mode=mode,
                        warm=number == 0,
                    )
                    taken[what].append(load)
    delete_saved_since(prepared.url, started_at)
    mix, bare, floor_run = (LoadRun(what, wrk.combined(taken[what])) for what, _mode in loads)
    return mix, bare, floor_run


def app_budget_ms(mix: LoadRun, *, cores: int, per_second: float = MIX_TARGET_PER_SECOND) -> float:
    """The app's CPU per request that `cores` cores leave at `per_second` requests/s of the mix, the database's and
    wrk's work per request as under the mix."""
    return 1000 * cores / per_second - mix.load.database_ms - mix.load.wrk_ms


def ceiling_per_second(mix: LoadRun, floor: LoadRun, *, cores: int) -> float:
    """The mix's requests/s on `cores` cores were memorybank's app code as cheap as the floor's (its CPU per request
    the floor's), the database's and wrk's work per request as the mix's: what no change to the app can pass
    without a database that works less per request (or more cores)."""
    per_request = floor.load.app_ms + mix.load.database_ms + mix.load.wrk_ms
    return 1000 * cores / per_request if per_request else float("nan")


def load_targets(mix: LoadRun, bare: LoadRun) -> list[Target]:
    """The issues' load targets."""
    share = mix.load.per_second / bare.load.per_second
    p99_ms = mix.load.p99_ms
    per_second = mix.load.per_second
    return [
        Target(
            "mix requests/s", f"{per_second:,.0f}", f"≥ {MIX_TARGET_PER_SECOND:,}", per_second >= MIX_TARGET_PER_SECOND
        ),
        Target("mix requests/s / bare requests/s", f"{100 * share:.1f} %", "≥ 35 %", share >= 0.35),
        Target("mix p99", f"{p99_ms:.1f} ms", "≤ 50 ms", p99_ms <= 50),
    ]


def print_load(
    runs: Sequence[LoadRun], targets: Sequence[Target], *, workers: int, duration: int, connections: int
) -> None:
    """The load table, where each request's CPU went, the ceiling the database leaves, and the targets."""
    print(
        f"wrk -t2 -c{connections}, `serve --workers {workers}` and the floor app with as many workers, the mix, the "
        f"bare request and the floor alternating in {LOAD_SLICES} slices, {duration} s of each in all; CPU in cores "
        "busy over the runs; p50 and p99 the median of the slices'"
    )
    print()
    print("| load | requests/s | p50 ms | p99 ms | errors | app | database | wrk | other |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        m = r.load
        print(
            f"| {r.what} | {m.per_second:,.0f} | {m.p50_ms:.1f} | {m.p99_ms:.1f} | {m.errors} | {m.app_cores:.2f} "
            f"| {m.database_cores:.2f} | {m.wrk_cores:.2f} | {m.other_cores:.2f} |"
        )
    print()
    print("CPU per request under load, ms (cores busy / requests per second)")
    print()
    print("| load | app | database | wrk | all |")
    print("|---|---|---|---|---|")
    for r in runs:
        m = r.load
        print(f"| {r.what} | {m.app_ms:.2f} | {m.database_ms:.2f} | {m.wrk_ms:.2f} | {m.all_ms:.2f} |")
    mix, floor = runs[0], next(r for r in runs if r.what == FLOOR_LOAD)
    cores = os.cpu_count() or 1
    print()
    print(
        f"the mix's ceiling on this machine's {cores} cores were memorybank's app code as cheap as the floor's "
        f"({floor.load.app_ms:.2f} ms a request), with its database work ({mix.load.database_ms:.2f} ms) and wrk's "
        f"as under the mix: {ceiling_per_second(mix, floor, cores=cores):,.0f} requests/s; at "
        f"{MIX_TARGET_PER_SECOND:,} requests/s the app may spend {app_budget_ms(mix, cores=cores):.2f} ms of CPU "
        f"a request, and spends {mix.load.app_ms:.2f}"
    )
    print()
    print_targets(targets)


# --- command line ----------------------------------------------------------------------------


@contextmanager
def _in_repository() -> Iterator[None]:
    # `serving` runs `python -m memorybank` from the checkout; wrk's script path is absolute.
    previous = Path.cwd()
    os.chdir(REPO_ROOT)
    try:
        yield
    finally:
        os.chdir(previous)


def main(argv: Sequence[str] | None = None) -> None:
    """Measure and print the ratio table, the round trips and the load table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.request_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("mariadb", "sqlite"), default="mariadb")
    parser.add_argument("--rows", type=int, default=10_000, help="memories in the database (default: 10000)")
    parser.add_argument("--iterations", type=int, default=300, help="calls of each request (default: 300)")
    parser.add_argument("--budget", type=float, default=120, help="seconds at most for the single requests")
    parser.add_argument("--workers", type=int, default=2, help="workers for the mixed load (default: 2)")
    parser.add_argument(
        "--duration",
        type=int,
        default=12,
        help="seconds of wrk load for the mix, and again for the bare request (default: 12)",
    )
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--no-load", action="store_true", help="skip the mixed load (no wrk needed)")
    args = parser.parse_args(argv)
    with _in_repository():
        prepared = prepare(args.backend, args.rows)
        print(run_header(f"request cost, {args.backend}, {args.rows:,} memories ({MEMORIES_PER_USER} per user)"))
        print(f"command: python -m benchmarks.request_cost --backend {args.backend} --rows {args.rows}")
        print()
        costs = count_round_trips(prepared)
        floors = sorted({round(cost.round_trips) for cost in costs.values() if cost.round_trips})
        timings = measure_requests(prepared, iterations=args.iterations, budget_seconds=args.budget, floors=floors)
        print(
            f"single requests, one keep-alive connection, 1 worker, interleaved call by call, "
            f"{len(timings[BARE].samples)} calls each"
        )
        print()
        print_requests(timings, ratio_targets(timings))
        print()
        print(
            "the floor (benchmarks/floor_app.py): the same uvicorn and Starlette, one thread-pool hop and "
            "N `SELECT 1` round trips, nothing of memorybank's; timed in the same interleaved loop"
        )
        print()
        print_floor(timings, costs)
        if args.backend == "mariadb":
            print()
            print_targets(own_cost_targets(timings, costs))
        print()
        print_round_trips(costs, args.backend)
        if args.backend == "mariadb":
            print()
            print_targets(round_trip_targets(costs))
        if not args.no_load:
            print()
            mix, bare, floor = measure_load(
                prepared, workers=args.workers, duration=args.duration, connections=args.connections
            )
            print_load(
                [mix, bare, floor],
                load_targets(mix, bare),
                workers=args.workers,
                duration=args.duration,
                connections=args.connections,
            )


if __name__ == "__main__":
    main()
