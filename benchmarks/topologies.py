"""Latency of one server, a Galera cluster and a Spider head over data nodes, side by side.

    python -m benchmarks.topologies [--users 30] [--repeats 300] [--budget 15]

Starts each deployment privately on loopback with the cluster tier's fixtures (root, galera-4
and mariadb-plugin-spider needed; nothing touches the server on 3306), migrates it with
`memorybank migrate` (`--shards` for Spider), imports the same synthetic corpus
(`benchmarks.corpus`, `--users` users of 100 memories each), and times, for the measured user,
through the storage layer on one thread: a save (one memory, two contexts), a search for a word
in 10% of their memories, and the first page of their list (20). Prints one Markdown table:
p50 and p95 in milliseconds per deployment.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial

from benchmarks.common import NO_SCREEN, Principal, Timing, machine, open_bank, table, time_calls
from benchmarks.corpus import TEN_PERCENT, CorpusSpec, CorpusWriter
from harness.clusters import galera_cluster, migrate_command, single_server, spider_cluster
from harness.served import run_memorybank
from memorybank import portability
from memorybank_core import SaveRequest, ids

OPERATIONS = ("save", "search", "list")


@contextmanager
def one_server() -> Iterator[str]:
    """One private MariaDB server; its URL."""
    with single_server() as server:
        _migrate(["migrate", "--db", server.node.url()])
        yield server.node.url()


@contextmanager
def galera() -> Iterator[str]:
    """A 3-node Galera cluster; its multi-host URL."""
    with galera_cluster() as cluster:
        _migrate(["migrate", "--db", cluster.url()])
        yield cluster.url()


@contextmanager
def spider() -> Iterator[str]:
    """A Spider head over 3 data nodes; the head's URL."""
    with spider_cluster(shards=3) as cluster:
        _migrate(migrate_command(cluster))
        yield cluster.head.url()


def _migrate(args: list[str]) -> None:
    result = run_memorybank(args, timeout=600)
    if result.returncode != 0:
        raise SystemExit(f"memorybank {' '.join(args[:1])} failed: {result.stderr}")


def measure(url: str, spec: CorpusSpec, *, repeats: int, budget: float) -> dict[str, Timing]:
    """Load the corpus into the deployment at `url`, then time each operation of the measured user."""
    with open_bank(url, secret_screen=NO_SCREEN) as runtime:
        writer = CorpusWriter(spec)
        report = portability.import_lines(writer.lines(), runtime.storage.store)
        if report.skipped:
            raise SystemExit(f"the corpus import skipped {len(report.skipped)} lines")
        bank = runtime.services.bank
        user = Principal(user_id=writer.measured_user, organization_id=ids.new_id(ids.ORGANIZATION_PREFIX))
        save = SaveRequest.parse(
            {
                "content": "The harbor deployment checklist moved to the shared drive",
                "contexts": [{"snippet": "from the planning chat"}] * 2,
            }
        )
        return {
            "save": time_calls(partial(bank.save, user, save), repeats=repeats, budget_seconds=budget),
            "search": time_calls(partial(bank.search, user, query=TEN_PERCENT), repeats=repeats, budget_seconds=budget),
            "list": time_calls(partial(bank.list, user, limit=20), repeats=repeats, budget_seconds=budget),
        }


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: start each deployment in turn, measure, stop it; print the table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.topologies", description=__doc__)
    parser.add_argument("--users", type=int, default=30, help="corpus users of 100 memories each (default 30)")
    parser.add_argument("--repeats", type=int, default=300, help="timed calls per operation at most (default 300)")
    parser.add_argument("--budget", type=float, default=15.0, help="seconds per operation at most (default 15)")
    args = parser.parse_args(argv)
    spec = CorpusSpec(users=args.users)
    deployments = {"one server": one_server, "Galera, 3 nodes": galera, "Spider head + 3 data nodes": spider}
    rows = []
    for name, start in deployments.items():
        with start() as url:
            timings = measure(url, spec, repeats=args.repeats, budget=args.budget)
        rows.append([name, *(f"{timings[op].p50:.2f} / {timings[op].p95:.2f}" for op in OPERATIONS)])
        print(f"measured {name}", flush=True)
    headers = ["deployment", *(f"{op} p50 / p95 (ms)" for op in OPERATIONS)]
    print(f"\n{spec.rows:,} memories of {spec.users} users; {machine()}\n")
    print(table(headers, rows))


if __name__ == "__main__":
    main()
