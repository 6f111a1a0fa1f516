"""Rate limits shared through Redis by real `memorybank serve` processes: the N+1th request across them is refused."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import httpx2
import pytest

from harness.served import run_memorybank, serving
from tests.redis_server import shared_redis_url

pytestmark = pytest.mark.serve_processes

LIMIT = 6


def _token(db_url: str) -> str:
    result = run_memorybank(["token", "create", "--db", db_url])
    assert result.returncode == 0, result.stderr
    return result.stdout.rstrip("\n").split("\n")[-1]


@pytest.mark.parametrize(("servers", "workers"), [(2, 1), (1, 2)], ids=["two-servers", "two-workers"])
def test_every_process_counts_against_one_redis_limit(tmp_path: Path, servers: int, workers: int) -> None:
    redis_url = shared_redis_url()
    db_url = f"sqlite:///{tmp_path / 'bank.sqlite3'}"
    secret = _token(db_url)
    args = ["--workers", str(workers), "--rate-limit", f"search={LIMIT}/minute", "--rate-limit-storage", redis_url]

    with ExitStack() as stack:
        bases = [
            stack.enter_context(serving(db_url, args=args, log=tmp_path / f"serve-{n}.log")).base_url
            for n in range(servers)
        ]
        answers = [
            # A new connection each time: two servers alternate, and the kernel spreads them over workers.
            httpx2.get(
                f"{bases[n % servers]}/v1/memory/search",
                params={"q": "harbour"},
                headers={"Authorization": f"Bearer {secret}"},
                timeout=30,
            )
            for n in range(LIMIT + 1)
        ]

    assert [a.status_code for a in answers] == [200] * LIMIT + [429]
    assert [a.headers["RateLimit-Remaining"] for a in answers] == [str(LIMIT - 1 - n) for n in range(LIMIT)] + ["0"]
    assert answers[-1].json()["error"] == "rate_limited"
    assert int(answers[-1].headers["Retry-After"]) >= 1
    log = "".join((tmp_path / f"serve-{n}.log").read_text() for n in range(servers))
    assert f"search={LIMIT}/minute" in log
    assert "redis://127.0.0.1" in log
