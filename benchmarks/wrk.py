"""wrk's load (benchmarks/mix.lua) on a served memorybank, and who used the cores meanwhile.

`measure` warms the server with a short run, then runs wrk for `duration` seconds and reads from /proc
how the CPU split between the app (every process of the server), the database server, wrk and the rest
of the machine (other sessions' work on a shared machine).
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

import attrs

from benchmarks.processes import children_cpu_seconds, descendants, listening_pid, snapshot

LUA_SCRIPT = Path(__file__).with_name("mix.lua")
_ERRORS = ("connect", "read", "write", "status", "timeout")


@attrs.frozen
class WrkLoad:
    """One measured wrk run: throughput, latency and cores busy on average over the run."""

    requests: int
    seconds: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    errors: int
    """Socket errors and responses that were not 2xx."""
    app_cores: float
    database_cores: float
    wrk_cores: float
    other_cores: float

    @property
    def per_second(self) -> float:
        """Requests per second."""
        return self.requests / self.seconds

    @property
    def app_ms(self) -> float:
        """The app's CPU per request, in milliseconds."""
        return 1000 * self.app_cores / self.per_second

    @property
    def database_ms(self) -> float:
        """The database server's CPU per request, in milliseconds."""
        return 1000 * self.database_cores / self.per_second

    @property
    def wrk_ms(self) -> float:
        """wrk's CPU per request, in milliseconds."""
        return 1000 * self.wrk_cores / self.per_second

    @property
    def all_ms(self) -> float:
        """The app's, the database's and wrk's CPU per request, in milliseconds."""
        return self.app_ms + self.database_ms + self.wrk_ms


BARE_MODE: tuple[str, ...] = ("bare",)
"""mix.lua's arguments for `GET /healthz` only."""


def floor_mode(round_trips: int) -> tuple[str, ...]:
    """mix.lua's arguments for the floor app's `GET /floor?trips=N` only."""
    return ("floor", str(round_trips))


def run(
    url: str, tokens_file: Path, *, duration: int, connections: int, mode: Sequence[str] = ()
) -> tuple[dict[str, int], float]:
    """Run wrk with mix.lua (the mix, or the one request `mode` names: `BARE_MODE`, `floor_mode(n)`); its `done`
    summary and its CPU seconds."""
    wrk = shutil.which("wrk")
    if wrk is None:
        raise SystemExit("wrk is not installed: apt-get install wrk")
    before = children_cpu_seconds()
    command = [wrk, "-t2", f"-c{connections}", f"-d{duration}s", "--timeout", "5s", "-s", str(LUA_SCRIPT), url]
    completed = subprocess.run(  # noqa: S603 - a fixed command on loopback
        [*command, "--", str(tokens_file), *mode],
        capture_output=True,
        text=True,
        check=True,
        timeout=duration + 60,
    )
    used = children_cpu_seconds() - before
    summary_line = next(line for line in completed.stdout.splitlines() if line.startswith("{"))
    summary: dict[str, int] = json.loads(summary_line)
    return summary, used


def database_server_pid(database_url: str) -> int | None:
    """The MySQL server of `database_url` when it runs on this machine (found by its port); None for SQLite, which
    runs inside the app, or a server elsewhere."""
    parts = urlsplit(database_url)
    return listening_pid(parts.port or 3306) if parts.scheme.startswith("mysql") else None


def measure(
    url: str,
    server_pid: int,
    tokens_file: Path,
    *,
    database_url: str,
    duration: int,
    connections: int,
    mode: Sequence[str] = (),
    warm: bool = True,
) -> WrkLoad:
    """Warm every worker's pool and caches (unless `warm` is off), then measure one run against the server at `url`.

    `database_url` is the server's database: a MySQL server on this machine is found by its port and
    its CPU counted; SQLite runs inside the app.
    """
    database_pid = database_server_pid(database_url)
    if warm:
        run(url, tokens_file, duration=2, connections=connections, mode=mode)
    app = descendants(server_pid)
    start = snapshot(app, database_pid)
    started = time.monotonic()
    summary, wrk_seconds = run(url, tokens_file, duration=duration, connections=connections, mode=mode)
    elapsed = time.monotonic() - started
    end = snapshot(app, database_pid)
    app_cores = (end.app - start.app) / elapsed
    database_cores = (end.database - start.database) / elapsed
    wrk_cores = wrk_seconds / elapsed
    machine_cores = (end.machine - start.machine) / elapsed
    return WrkLoad(
        requests=summary["requests"],
        seconds=summary["duration_us"] / 1e6,
        p50_ms=summary["p50_us"] / 1000,
        p90_ms=summary["p90_us"] / 1000,
        p99_ms=summary["p99_us"] / 1000,
        errors=sum(summary[key] for key in _ERRORS),
        app_cores=app_cores,
        database_cores=database_cores,
        wrk_cores=wrk_cores,
        other_cores=max(0.0, machine_cores - app_cores - database_cores - wrk_cores),
    )


def combined(loads: Sequence[WrkLoad]) -> WrkLoad:
    """Runs taken in slices, as one: requests and seconds summed, cores averaged over the time, and
    each percentile the median of the slices' (wrk reports percentiles, not the latencies behind them)."""
    seconds = sum(load.seconds for load in loads)

    def cores(field: str) -> float:
        return sum(float(getattr(load, field)) * load.seconds for load in loads) / seconds

    return WrkLoad(
        requests=sum(load.requests for load in loads),
        seconds=seconds,
        p50_ms=statistics.median(load.p50_ms for load in loads),
        p90_ms=statistics.median(load.p90_ms for load in loads),
        p99_ms=statistics.median(load.p99_ms for load in loads),
        errors=sum(load.errors for load in loads),
        app_cores=cores("app_cores"),
        database_cores=cores("database_cores"),
        wrk_cores=cores("wrk_cores"),
        other_cores=cores("other_cores"),
    )
