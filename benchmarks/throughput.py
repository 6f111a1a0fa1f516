"""Throughput of a real `memorybank serve` under wrk, and single-request latency at scale.

    python -m benchmarks.throughput mix [--backends sqlite mariadb] [--workers 1 2] [--duration 10]
    python -m benchmarks.throughput mix --backends mariadb --workers 1 --profile docs/profiles/before.txt
    python -m benchmarks.throughput latency [--rows 1000000]

`mix` serves a database of 1,000 users with 100 memories each (100,000 rows; made once and kept:
`memorybank_bench_mix_100000` on MariaDB, /tmp/memorybank-bench/mix_100000.sqlite3), gives every
user a fresh token, starts `memorybank serve` with 1 or N workers, and runs `wrk` (16 connections,
2 threads, loopback only, a bounded duration) with benchmarks/mix.lua: 60 % search, 20 % list (20),
20 % save with 2 contexts, each request as a random one of the 1,000 users. It prints requests/s,
p50/p99 and how the two cores split between the app, the database server and wrk (CPU seconds
from /proc over the run; "other" is the rest of the machine: other sessions' work).

`--profile FILE` runs the server (one worker) under yappi's CPU clock instead, and writes where its
CPU time went (inclusive and self, per function) to FILE; its figures are slowed by the profiler.

`latency` times single requests, one at a time over one keep-alive connection, against the
scale benchmark's database (`python -m benchmarks.scale load --rows N` first): search for a rare and
a common word (20 results), list (20), save with 2 contexts; and in-process, loading 20 memories
with their contexts (`MemoryStore.get_many`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
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
from benchmarks.common import database_url, delete_saved_since, open_bank, run_header, time_calls
from benchmarks.corpus import COMMON, RARE, CorpusSpec, CorpusWriter
from benchmarks.http_overhead import KeepAliveClient
from benchmarks.wrk import WrkLoad
from harness.served import NO_RATE_LIMITS, REPO_ROOT, serving
from memorybank.portability import import_lines

MIX_USERS = 1000
MIX_ROWS = 100_000
MIX_SEED = 14
SQLITE_HOME = Path(tempfile.gettempdir()) / "memorybank-bench"
PROFILED_SERVE = "benchmarks.profiled_serve"
PROFILE_ENV = "MEMORYBANK_PROFILE_OUT"


# --- data --------------------------------------------------------------------------------------


def _mix_url(backend: str, rows: int) -> str:
    if backend == "mariadb":
        return database_url(f"mix_{rows}")
    SQLITE_HOME.mkdir(exist_ok=True)
    return f"sqlite:///{SQLITE_HOME / f'mix_{rows}.sqlite3'}"


def prepare_mix(backend: str, rows: int, tokens_file: Path) -> str:
    """Make (or keep) the mix database, give each user a fresh token, write the secrets; its URL."""
    url = _mix_url(backend, rows)
    # A MySQL database is migrated; an SQLite file is created ready.
    runtime = open_bank(url, migrate=url.startswith("mysql"))
    storage, tokens = runtime.storage, runtime.services.tokens
    try:
        with storage.engine.connect() as connection:
            present = connection.execute(sa.select(sa.func.count()).select_from(memory)).scalar_one()
        if present < rows:
            if present:
                raise SystemExit(f"{url}: holds {present} memories, fewer than {rows}; drop it and rerun")
            spec = CorpusSpec(users=MIX_USERS, memories_per_user=rows // MIX_USERS, seed=MIX_SEED)
            with tqdm(total=spec.rows, unit="memory", mininterval=5, file=sys.stderr) as bar:
                import_lines(CorpusWriter(spec).lines(), storage.store, batch_size=1000, progress=bar.update)
        # From a rebuilt index: deletes of runs before would slow every search (ADR 0047).
        storage.compact_search_index()
        kept = SQLITE_HOME / f"tokens_{backend}_{rows}.txt"
        if kept.is_file():
            secrets = kept.read_text().split()
            if len(secrets) == MIX_USERS and all(tokens.authenticate(secret) for secret in secrets[:5]):
                tokens_file.write_text(kept.read_text())
                return url
        with storage.engine.begin() as connection:
            # Tokens whose secrets are lost are useless: start from none.
            connection.execute(api_token.delete())
            owners = connection.execute(
                sa.select(memory.c.user_id, sa.func.min(memory.c.org_id))
                .group_by(memory.c.user_id)
                .order_by(memory.c.user_id)
                .limit(MIX_USERS)
            ).all()
        secrets = [tokens.issue(user_id=user_id, org_id=org_id).secret for user_id, org_id in owners]
    finally:
        runtime.close()
    tokens_file.write_text("\n".join(secrets) + "\n")
    SQLITE_HOME.mkdir(exist_ok=True)
    (SQLITE_HOME / f"tokens_{backend}_{rows}.txt").write_text(tokens_file.read_text())
    return url


# --- the load test ----------------------------------------------------------------------------


@attrs.frozen
class MixResult:
    """One wrk run against one server configuration."""

    backend: str
    workers: int
    load: WrkLoad


def run_mix(
    backend: str,
    url: str,
    tokens_file: Path,
    *,
    workers: int,
    duration: int,
    connections: int,
    profile: Path | None = None,
) -> MixResult:
    """Serve `url` with `workers` processes and put wrk's mixed load on it."""
    args = ["--workers", str(workers)] if workers != 1 else []
    env = {PROFILE_ENV: str(profile.resolve())} if profile is not None else {}
    module = PROFILED_SERVE if profile is not None else "memorybank"
    log = Path(tempfile.mkdtemp(prefix="memorybank-bench-")) / "serve.log"
    with serving(url, args=args, env=env, log=log, module=module) as server:
        load = wrk.measure(
            server.base_url,
            server.process.pid,
            tokens_file,
            database_url=url,
            duration=duration,
            connections=connections,
        )
    return MixResult(backend=backend, workers=workers, load=load)


def print_mix(results: Sequence[MixResult], *, duration: int, connections: int, rows: int) -> None:
    """The mix table."""
    print(
        run_header(f"wrk -t2 -c{connections} -d{duration}s, benchmarks/mix.lua (60 % search / 20 % list / 20 % save)")
    )
    print(f"{MIX_USERS} users, {rows // MIX_USERS} memories each ({rows} rows before the run's saves)")
    print()
    print(
        "| backend | workers | requests/s | p50 ms | p90 ms | p99 ms | errors "
        "| CPU cores: app | database | wrk | other |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        m = r.load
        print(
            f"| {r.backend} | {r.workers} | {m.per_second:,.0f} | {m.p50_ms:.1f} | {m.p90_ms:.1f} | {m.p99_ms:.1f} "
            f"| {m.errors} | {m.app_cores:.2f} | {m.database_cores:.2f} | {m.wrk_cores:.2f} | {m.other_cores:.2f} |"
        )


# --- single-request latency at scale ---------------------------------------------------------


@attrs.frozen
class Latency:
    """p50/p95 of one operation, in milliseconds."""

    what: str
    p50: float
    p95: float


@contextmanager
def _measured_user_token(url: str, seed: int) -> Iterator[tuple[str, str, list[str]]]:
    """A token for the corpus's measured user, its id and 20 of its memory ids; the token is revoked after."""
    user_id = CorpusWriter(CorpusSpec(users=1, seed=seed)).measured_user
    runtime = open_bank(url)  # checked ready
    storage = runtime.storage
    try:
        with storage.engine.connect() as connection:
            found = connection.execute(
                sa.select(memory.c.id, memory.c.org_id).where(memory.c.user_id == user_id).limit(20)
            ).all()
        if not found:
            raise SystemExit(f"{url}: the measured user has no memories; run `python -m benchmarks.scale load` first")
        tokens = runtime.services.tokens
        issued = tokens.issue(user_id=user_id, org_id=found[0].org_id)
        try:
            yield issued.secret, user_id, [row.id for row in found]
        finally:
            tokens.revoke(issued.token.id)
    finally:
        runtime.close()


def measure_latency(rows: int, *, iterations: int, mix: bool = False) -> list[Latency]:
    """Single-request latencies through `memorybank serve` (one worker) on the `rows` scale (or mix) database."""
    url = database_url(f"mix_{rows}" if mix else str(rows))
    latencies: list[Latency] = []
    with _measured_user_token(url, MIX_SEED if mix else CorpusSpec(users=1).seed) as (secret, user_id, memory_ids):
        storage = open_bank(url).storage
        try:
            # From a rebuilt index: the saves each run deletes would otherwise slow the next run's searches (ADR 0047).
            storage.compact_search_index()
            # On one connection, as a request runs it (its unit of work): the query and the mapping.
            with storage.unit_of_work():
                timing = time_calls(
                    lambda: storage.store.get_many(user_id=user_id, memory_ids=memory_ids),
                    repeats=iterations,
                    budget_seconds=20,
                )
        finally:
            storage.close()
        latencies.append(
            Latency("in-process: load 20 memories with contexts (get_many, in a unit of work)", timing.p50, timing.p95)
        )
        with serving(url, args=NO_RATE_LIMITS) as server, KeepAliveClient(server.base_url, secret) as client:
            for label, word in (("rare word", RARE), ("common word", COMMON)):
                path = "/v1/memory/search?" + urlencode({"q": word, "limit": 20})
                timing = time_calls(
                    partial(client.request, "GET", path, expect=200), repeats=iterations, budget_seconds=20
                )
                latencies.append(Latency(f"HTTP search, {label} ({word}), 20 results", timing.p50, timing.p95))
            timing = time_calls(
                lambda: client.request("GET", "/v1/memory?limit=20", expect=200), repeats=iterations, budget_seconds=20
            )
            latencies.append(Latency("HTTP list, 20", timing.p50, timing.p95))
            saved: list[str] = []

            def save() -> None:
                body = json.dumps(
                    {
                        "content": f"Latency probe {len(saved)} about the lighthouse deployment",
                        "contexts": [{"snippet": "first", "conversation_id": "c1"}, {"snippet": "second"}],
                    }
                ).encode()
                saved.append(json.loads(client.request("POST", "/v1/memory", body, expect=201))["memory"]["id"])

            timing = time_calls(save, repeats=iterations, budget_seconds=20)
            latencies.append(Latency("HTTP save with 2 contexts", timing.p50, timing.p95))
            # Leave the scale corpus as it was.
            for memory_id in saved:
                client.request("DELETE", f"/v1/memory/{memory_id}", expect=204)
    return latencies


def print_latency(rows: int, latencies: Sequence[Latency], iterations: int) -> None:
    """The latency table."""
    print(run_header(f"single requests, one keep-alive connection, {iterations} calls each (fewer if slow)"))
    print(f"MariaDB database of {rows:,} memories, its measured user (100 memories)")
    print()
    print("| what | p50 ms | p95 ms |")
    print("|---|---|---|")
    for latency in latencies:
        print(f"| {latency.what} | {latency.p50:.2f} | {latency.p95:.2f} |")


# --- command line ----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> None:
    """Run the chosen measurement and print its table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.throughput", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    mix = commands.add_parser("mix", help="requests/s under wrk's mixed load")
    mix.add_argument("--backends", nargs="+", choices=("sqlite", "mariadb"), default=["sqlite", "mariadb"])
    mix.add_argument("--workers", nargs="+", type=int, default=[1, 2])
    mix.add_argument("--duration", type=int, default=10, help="seconds of load per run (default: 10)")
    mix.add_argument("--connections", type=int, default=16)
    mix.add_argument("--rows", type=int, default=MIX_ROWS, help=f"rows in the mix database (default: {MIX_ROWS})")
    mix.add_argument("--profile", type=Path, help="profile the server (one worker) and write the summary here")
    latency = commands.add_parser("latency", help="single-request latency at scale")
    latency.add_argument("--rows", type=int, default=1_000_000)
    latency.add_argument("--iterations", type=int, default=300)
    latency.add_argument(
        "--mix", action="store_true", help="use the mix database (its user 0) instead of the scale one"
    )
    args = parser.parse_args(argv)
    os.chdir(REPO_ROOT)

    if args.command == "latency":
        latencies = measure_latency(args.rows, iterations=args.iterations, mix=args.mix)
        print_latency(args.rows, latencies, args.iterations)
        return
    results = []
    with tempfile.TemporaryDirectory(prefix="memorybank-bench-") as directory:
        tokens_file = Path(directory) / "tokens.txt"
        for backend in args.backends:
            url = prepare_mix(backend, args.rows, tokens_file)
            started_at = datetime.now(UTC)
            for workers in [1] if args.profile else args.workers:
                results.append(
                    run_mix(
                        backend,
                        url,
                        tokens_file,
                        workers=workers,
                        duration=args.duration,
                        connections=args.connections,
                        profile=args.profile,
                    )
                )
            # The next run's banks are this run's corpus again, not grown by its saves.
            delete_saved_since(url, started_at)
    print_mix(results, duration=args.duration, connections=args.connections, rows=args.rows)
    if args.profile:
        print(f"\nprofile written to {args.profile} (the figures above are slowed by the profiler)")


if __name__ == "__main__":
    main()
