"""The gate and the quota on `memorybank serve` with two workers: an operator's command reaches both at once.

The switch is flipped by a separate `memorybank gate` process while the server runs; every
following request, whichever worker answers it, sees it. The deployment quota given to `serve`
reaches every worker.
"""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from harness.served import run_memorybank, serving
from tests.operations.test_serve_processes import _from_every_worker

pytestmark = pytest.mark.serve_processes

#: Requests per check: new connections each, so the kernel spreads them over both workers.
REQUESTS = 12


def _person(db_url: str) -> tuple[str, str]:
    result = run_memorybank(["token", "create", "--db", db_url])
    assert result.returncode == 0, result.stderr
    lines = result.stdout.rstrip("\n").split("\n")
    user = next(line.removeprefix("user: ") for line in lines if line.startswith("user: "))
    return user, lines[-1]


def _statuses(base_url: str, secret: str) -> set[tuple[int, str]]:
    seen = set()
    for _ in range(REQUESTS):
        answer = httpx2.get(
            f"{base_url}/v1/memory", headers={"Authorization": f"Bearer {secret}", "Connection": "close"}, timeout=30
        )
        seen.add((answer.status_code, answer.json().get("error", "") if answer.status_code != 200 else ""))
    return seen


def test_a_switch_flipped_by_another_process_applies_to_every_workers_next_request(
    database_url: str, tmp_path: Path
) -> None:
    user, secret = _person(database_url)
    _other, other_secret = _person(database_url)
    with serving(database_url, args=["--workers", "2"], log=tmp_path / "serve.log") as server:
        assert _statuses(server.base_url, secret) == {(200, "")}

        assert run_memorybank(["gate", "off", "--user", user, "--db", database_url]).returncode == 0
        assert _statuses(server.base_url, secret) == {(403, "memory_disabled")}
        assert _statuses(server.base_url, other_secret) == {(200, "")}

        assert run_memorybank(["gate", "off", "--all", "--db", database_url]).returncode == 0
        assert _statuses(server.base_url, other_secret) == {(403, "memory_disabled")}

        assert run_memorybank(["gate", "on", "--all", "--db", database_url]).returncode == 0
        assert run_memorybank(["gate", "on", "--user", user, "--db", database_url]).returncode == 0
        assert _statuses(server.base_url, secret) == {(200, "")}


def test_the_kill_switch_reaches_every_worker_that_cached_the_controls_and_the_rail_too(
    database_url: str, tmp_path: Path
) -> None:
    # Each worker keeps the controls it read while their change counter stands (ADR 0037): both have read
    # them before the switch, and both must refuse the very next request after it, then serve again after.
    _user, secret = _person(database_url)
    auth = {"Authorization": f"Bearer {secret}"}
    log = tmp_path / "serve.log"
    with serving(database_url, args=["--workers", "2", "--log-format", "json"], log=log) as server:
        before = _from_every_worker(server.base_url, auth, log, workers=2)
        assert run_memorybank(["gate", "off", "--all", "--db", database_url]).returncode == 0
        off = _from_every_worker(server.base_url, auth, log, workers=2)
        rail = httpx2.post(
            f"{server.base_url}/mcp/agent",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "execute_capability", "arguments": {"name": "getMemory"}},
            },
            headers={**auth, "Accept": "application/json, text/event-stream"},
            timeout=30,
        )
        assert run_memorybank(["gate", "on", "--all", "--db", database_url]).returncode == 0
        on = _from_every_worker(server.base_url, auth, log, workers=2)

    assert {status for _pid, status in before} == {200}
    assert {status for _pid, status in off} == {403}
    assert rail.status_code == 200
    assert "memory_disabled" in rail.text
    assert {status for _pid, status in on} == {200}
    assert {pid for pid, _ in before} == {pid for pid, _ in off} == {pid for pid, _ in on}


def test_the_deployment_quota_given_to_serve_reaches_every_worker(database_url: str, tmp_path: Path) -> None:
    _user, secret = _person(database_url)
    with serving(database_url, args=["--workers", "2", "--quota-memories", "3"], log=tmp_path / "serve.log") as server:
        statuses = []
        for n in range(6):
            answer = httpx2.post(
                f"{server.base_url}/v1/memory",
                json={"content": f"note {n}"},
                headers={"Authorization": f"Bearer {secret}", "Connection": "close"},
                timeout=30,
            )
            statuses.append(answer.status_code)
            if answer.status_code == 403:
                body = answer.json()
                assert body["error"] == "quota_exceeded"
                assert body["details"][0]["path"] == "memories"
                assert (body["details"][0]["limit"], body["details"][0]["used"]) == (3, 3)
        assert statuses == [201, 201, 201, 403, 403, 403]
