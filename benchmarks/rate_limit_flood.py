"""One user floods a real `memorybank serve`; another user's latency, and where the time goes.

The run, on one server (SQLite file, one worker, `--rate-limit search=600/minute`):

1. The limiter alone, in this process: `RateLimits.admit` per call, allowed and refused, on
   memory:// and (if reachable) Redis.
2. A quiet user searches at a steady 10 requests/s, with keep-alive, for each phase:
   - `baseline`: nobody else is there;
   - `flood-429`: a flooding user (wrk, 16 connections) hammers search after spending its budget,
     so every flood request is answered 429 by the limiter;
   - `flood-401`: the same flood with an unknown token: authentication runs and fails, the limiter
     is never reached;
   - `flood-healthz`: the same wrk flood on `/healthz`, which does no authentication and no
     rate limiting: what any flood at that rate costs, limiter or not;
   - `baseline-again`: nobody else, to see the machine's drift.
   For each phase: the quiet user's p50/p95, the flood's requests/s, and CPU (cores) used by the
   server and by wrk, read from /proc.

Figures depend on the machine and its load (the docs name both); compare phases of one run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

import attrs

from adapters_ratelimit import LimitsRateLimiter
from benchmarks.common import Timing, open_bank
from benchmarks.http_overhead import KeepAliveClient
from benchmarks.processes import children_cpu_seconds, cpu_seconds
from harness.served import serving
from memorybank_core import (
    Operation,
    RateLimitedError,
    RateLimitPolicy,
    RateLimits,
    TokenPrincipal,
)
from memorybank_core.bodies import JsonValue
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id

SEARCH_LIMIT = 600
ROUNDS = 2
QUIET_RATE = 10.0
QUIET_MEMORIES = 200
FLOOD_CONNECTIONS = 16
SEARCH_PATH = "/v1/memory/search?q=" + quote("harbour crane schedule")


@attrs.frozen
class Phase:
    """One phase of the run."""

    name: str
    quiet: Timing
    quiet_errors: int
    flood_rps: float
    flood_non_2xx: int
    server_cores: float
    wrk_cores: float


def limiter_cost(storage_url: str, *, calls: int) -> tuple[float, float]:
    """Microseconds per `admit` call: allowed (a fresh budget) and refused (an exhausted one)."""
    limits = RateLimits(
        limiter=LimitsRateLimiter(storage_url),
        policy=RateLimitPolicy.from_rules([f"search={calls * 10}/minute", "list=1/minute"]),
    )
    org = new_id(ORGANIZATION_PREFIX)
    allowed_user = TokenPrincipal(user_id=new_id(USER_PREFIX), organization_id=org, scopes=frozenset())
    refused_user = TokenPrincipal(user_id=new_id(USER_PREFIX), organization_id=org, scopes=frozenset())
    limits.admit(refused_user, Operation.LIST)
    started = time.perf_counter()
    for _ in range(calls):
        limits.admit(allowed_user, Operation.SEARCH)
    allowed = (time.perf_counter() - started) / calls * 1e6
    started = time.perf_counter()
    for _ in range(calls):
        with contextlib.suppress(RateLimitedError):
            limits.admit(refused_user, Operation.LIST)
    refused = (time.perf_counter() - started) / calls * 1e6
    return allowed, refused


def _seed(db_url: str) -> tuple[str, str]:
    """A quiet user with memories to search, and a flooding user; their tokens."""
    with open_bank(db_url) as runtime:
        services = runtime.services
        org = new_id(ORGANIZATION_PREFIX)
        quiet = TokenPrincipal(
            user_id=new_id(USER_PREFIX), organization_id=org, scopes=frozenset({"mcp:read", "mcp:write"})
        )
        words = ["harbour", "crane", "schedule", "ferry", "invoice", "berth", "tide", "cargo"]
        for n in range(QUIET_MEMORIES):
            content = f"Note {n}: the {words[n % 8]} {words[(n * 3) % 8]} moved to {words[(n * 5) % 8]} day {n % 28}"
            services.bank.save(quiet, JsonValue({"content": content, "tags": [words[n % 8]]}))
        quiet_secret = services.tokens.issue(user_id=quiet.user_id, org_id=org).secret
        flood_secret = services.tokens.issue(user_id=new_id(USER_PREFIX), org_id=org).secret
    return quiet_secret, flood_secret


def _quiet_user(base_url: str, secret: str, seconds: float) -> tuple[Timing, int]:
    """Search at QUIET_RATE for `seconds`; latencies of the successful answers, and the failed count."""
    samples: list[float] = []
    errors = 0
    interval = 1 / QUIET_RATE
    with KeepAliveClient(base_url, secret) as client:
        next_at = time.perf_counter()
        deadline = next_at + seconds
        while next_at < deadline:
            pause = next_at - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            started = time.perf_counter()
            try:
                client.request("GET", SEARCH_PATH, expect=200)
                samples.append((time.perf_counter() - started) * 1000)
            except RuntimeError:
                errors += 1
            next_at += interval
    return Timing(samples=tuple(samples)), errors


def _wrk(url: str, secret: str | None, seconds: float) -> subprocess.Popen[str]:
    wrk = shutil.which("wrk")
    if wrk is None:
        raise SystemExit("wrk is not installed: apt-get install wrk")
    headers = ["-H", f"Authorization: Bearer {secret}"] if secret else []
    return subprocess.Popen(  # noqa: S603 - a fixed command on loopback
        [wrk, "-t1", f"-c{FLOOD_CONNECTIONS}", f"-d{int(seconds)}s", "--timeout", "5s", *headers, url],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wrk_summary(output: str) -> tuple[float, int]:
    rps = re.search(r"Requests/sec:\s+([0-9.]+)", output)
    non_2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    return (float(rps.group(1)) if rps else 0.0), (int(non_2xx.group(1)) if non_2xx else 0)


def _phase(
    name: str, base_url: str, server_pid: int, quiet_secret: str, flood: tuple[str, str | None] | None, seconds: float
) -> Phase:
    children_before = children_cpu_seconds()
    server_before = cpu_seconds(server_pid)
    started = time.perf_counter()
    process = _wrk(base_url + flood[0], flood[1], seconds + 1) if flood else None
    if process is not None:
        time.sleep(0.5)  # let wrk open its connections before measuring
    quiet, errors = _quiet_user(base_url, quiet_secret, seconds)
    output = process.communicate(timeout=seconds + 60)[0] if process is not None else ""
    elapsed = time.perf_counter() - started
    server_cores = (cpu_seconds(server_pid) - server_before) / elapsed
    wrk_seconds = children_cpu_seconds() - children_before
    rps, non_2xx = _wrk_summary(output)
    return Phase(
        name=name,
        quiet=quiet,
        quiet_errors=errors,
        flood_rps=rps,
        flood_non_2xx=non_2xx,
        server_cores=server_cores,
        wrk_cores=wrk_seconds / elapsed,
    )


def _spend_budget(base_url: str, secret: str) -> None:
    with KeepAliveClient(base_url, secret) as client:
        for _ in range(SEARCH_LIMIT):
            client.request("GET", SEARCH_PATH, expect=200)
        client.request("GET", SEARCH_PATH, expect=429)


def run(storage_url: str, seconds: float, workdir: Path) -> list[Phase]:
    """Start the server, seed it, and run the phases ROUNDS times; each phase's median over the rounds."""
    db_url = f"sqlite:///{workdir / 'flood.sqlite3'}"
    quiet_secret, flood_secret = _seed(db_url)
    args = ["--rate-limit", f"search={SEARCH_LIMIT}/minute", "--rate-limit-storage", storage_url]
    floods: dict[str, tuple[str, str | None] | None] = {
        "baseline": None,
        "flood-429": (SEARCH_PATH, flood_secret),
        "flood-401": (SEARCH_PATH, "mbk_unknown-token-for-the-flood"),
        "flood-healthz": ("/healthz", None),
    }
    rounds: dict[str, list[Phase]] = {name: [] for name in floods}
    with serving(db_url, args=args, log=workdir / "serve.log") as server:
        _quiet_user(server.base_url, quiet_secret, 1.0)  # warm up
        _spend_budget(server.base_url, flood_secret)
        for _ in range(ROUNDS):
            for name, flood in floods.items():
                rounds[name].append(_phase(name, server.base_url, server.pid, quiet_secret, flood, seconds))
    return [_median(phases) for phases in rounds.values()]


def _median(phases: list[Phase]) -> Phase:
    def mid(values: list[float]) -> float:
        return statistics.median(values)

    return Phase(
        name=phases[0].name,
        quiet=Timing(samples=tuple(sample for phase in phases for sample in phase.quiet.samples)),
        quiet_errors=sum(phase.quiet_errors for phase in phases),
        flood_rps=mid([phase.flood_rps for phase in phases]),
        flood_non_2xx=sum(phase.flood_non_2xx for phase in phases),
        server_cores=mid([phase.server_cores for phase in phases]),
        wrk_cores=mid([phase.wrk_cores for phase in phases]),
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Print the limiter's cost and the four phases as Markdown."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.rate_limit_flood", description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each phase (default: 5)")
    parser.add_argument("--storage", default="memory://", help="the server's --rate-limit-storage (default: memory://)")
    parser.add_argument(
        "--redis",
        default=os.environ.get("MEMORYBANK_TEST_REDIS_URL", "redis://127.0.0.1:6379/0"),
        help="the Redis for the limiter's own cost (default: $MEMORYBANK_TEST_REDIS_URL or the local one)",
    )
    args = parser.parse_args(argv)

    load = os.getloadavg()
    print(f"{platform.node()}: {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print("\nThe limiter alone (`RateLimits.admit`, one user limit, in this process):\n")
    print("| storage | allowed µs/call | refused µs/call |")
    print("|---|---:|---:|")
    for label, url, calls in (("memory://", "memory://", 20_000), ("Redis (loopback)", args.redis, 2_000)):
        try:
            allowed, refused = limiter_cost(url, calls=calls)
        except Exception as error:  # a benchmark reports and goes on
            print(f"| {label} | unavailable ({type(error).__name__}) | |")
            continue
        print(f"| {label} | {allowed:.1f} | {refused:.1f} |")

    with tempfile.TemporaryDirectory(prefix="memorybank-flood-") as directory:
        phases = run(args.storage, args.seconds, Path(directory))
    base = phases[0].quiet
    print(
        f"\nQuiet user: search at {QUIET_RATE:.0f}/s over keep-alive, {args.seconds:.0f} s per phase, "
        f"{ROUNDS} rounds (quiet percentiles over both; other figures their median); flood: "
        f"wrk -t1 -c{FLOOD_CONNECTIONS}; server: 1 worker, SQLite, --rate-limit search={SEARCH_LIMIT}/minute, "
        f"--rate-limit-storage {args.storage}\n"
    )
    print(
        "| phase | quiet p50 ms | quiet p95 ms | p50 / baseline p50 | quiet errors | flood req/s | flood non-2xx "
        "| server cores | wrk cores | server µs per flood request |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for phase in phases:
        per_request = f"{phase.server_cores / phase.flood_rps * 1e6:.0f}" if phase.flood_rps else "-"
        print(
            f"| {phase.name} | {phase.quiet.p50:.1f} | {phase.quiet.p95:.1f} | {phase.quiet.p50 / base.p50:.2f} "
            f"| {phase.quiet_errors} | {phase.flood_rps:.0f} | {phase.flood_non_2xx} | {phase.server_cores:.2f} "
            f"| {phase.wrk_cores:.2f} | {per_request} |"
        )


if __name__ == "__main__":
    main()
