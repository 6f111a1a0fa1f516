"""End to end through a real `memorybank serve` process: SQLite quickstart path and MariaDB."""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path
from urllib.parse import urlsplit

import httpx2
import pytest
import sqlalchemy as sa

from adapters_http.panel import PANEL_HEADER, SECURE_SESSION_COOKIE
from adapters_mysql.mysql_search import OWNER_FULLTEXT_INDEX_NAME
from harness.served import run_memorybank, served
from tests.mysql_server import ThrowawayDatabase

#: Real processes: their own tier (`pytest -m serve_processes`), so the README's test command stays quick.
pytestmark = pytest.mark.serve_processes


def _token(db_url: str | None, env: dict[str, str] | None = None, *extra: str) -> str:
    args = ["token", "create", *extra] + (["--db", db_url] if db_url else [])
    result = run_memorybank(args, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout.rstrip("\n").split("\n")[-1]


def _walk_every_route(base_url: str, alice: str, bob: str) -> None:
    """Save, search, list and delete as two users, checking that neither sees the other."""
    as_alice = httpx2.Client(base_url=base_url, headers={"Authorization": f"Bearer {alice}"}, timeout=10)
    as_bob = httpx2.Client(base_url=base_url, headers={"Authorization": f"Bearer {bob}"}, timeout=10)
    with as_alice, as_bob:
        saved = as_alice.post(
            "/v1/memory",
            json={"content": "Quarterly planning happens in the Lisbon office", "contexts": [{"snippet": "from chat"}]},
        )
        assert saved.status_code == 201, saved.text
        memory_id = saved.json()["memory"]["id"]
        assert as_bob.post("/v1/memory", json={"content": "Bob likes the Porto office"}).status_code == 201

        found = as_alice.get("/v1/memory/search", params={"q": "Lisbon planning"}).json()["results"]
        assert [r["id"] for r in found] == [memory_id]
        assert found[0]["contexts"][0]["snippet"] == "from chat"
        assert as_bob.get("/v1/memory/search", params={"q": "Lisbon planning"}).json() == {"results": []}
        assert [m["id"] for m in as_alice.get("/v1/memory").json()["memories"]] == [memory_id]
        assert memory_id not in as_bob.get("/v1/memory").text

        assert as_bob.delete(f"/v1/memory/{memory_id}").status_code == 404
        assert as_alice.delete(f"/v1/memory/{memory_id}").status_code == 204
        assert as_alice.get("/v1/memory").json() == {"memories": [], "next_cursor": None}
        assert as_alice.get("/openapi.json").json()["paths"]["/v1/memory"]["post"]["operationId"] == "postMemory"


def test_the_quickstart_serves_an_embedded_database_created_on_first_start(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    alice, bob = _token(None, env), _token(None, env)

    with served(None, env=env, log=tmp_path / "serve.log") as base_url:
        _walk_every_route(base_url, alice, bob)

    assert (tmp_path / ".local/share/memorybank/memorybank.sqlite3").is_file()


@pytest.mark.mysql
def test_mariadb_end_to_end_with_tokens_from_the_command(mariadb: ThrowawayDatabase, tmp_path: Path) -> None:
    migrated = run_memorybank(["migrate", "--db", mariadb.url])
    assert migrated.returncode == 0, migrated.stderr
    alice, bob = _token(mariadb.url), _token(mariadb.url)

    with served(mariadb.url, log=tmp_path / "serve.log") as base_url:
        _walk_every_route(base_url, alice, bob)
        assert run_memorybank(["token", "revoke", "--db", mariadb.url, alice]).returncode == 0
        revoked = httpx2.get(f"{base_url}/v1/memory", headers={"Authorization": f"Bearer {alice}"})
        assert revoked.status_code == 401

    log = (tmp_path / "serve.log").read_text()
    assert "Lisbon" not in log
    assert "http.request operation=getMemorySearch status=200" in log


@pytest.mark.mysql
def test_serve_refuses_a_mariadb_database_that_was_never_migrated(mariadb: ThrowawayDatabase) -> None:
    result = run_memorybank(["serve", "--db", mariadb.url, "--port", "0"])

    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert f"memorybank migrate --db {mariadb.url}" in result.stderr


@pytest.mark.mysql
def test_serve_refuses_a_mariadb_database_without_its_fulltext_index(mariadb: ThrowawayDatabase) -> None:
    assert run_memorybank(["migrate", "--db", mariadb.url]).returncode == 0
    engine = sa.create_engine(mariadb.url, poolclass=sa.pool.NullPool)
    with engine.begin() as connection:
        connection.exec_driver_sql(f"DROP INDEX {OWNER_FULLTEXT_INDEX_NAME} ON memory")
    engine.dispose()

    refused = run_memorybank(["serve", "--db", mariadb.url, "--port", "0"])
    fixed = run_memorybank(["migrate", "--db", mariadb.url])

    assert refused.returncode == 1
    assert OWNER_FULLTEXT_INDEX_NAME in refused.stderr
    assert "memorybank migrate" in refused.stderr
    assert fixed.returncode == 0


def test_the_readme_encryption_example_serves_sealed_and_refuses_to_start_without_the_key(tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    assert run_memorybank(["keys", "create", "--out", str(keys)]).returncode == 0
    env = {"HOME": str(tmp_path), "MEMORYBANK_KEY_FILE": str(keys)}
    alice, bob = _token(None, env), _token(None, env)

    with served(None, env=env, log=tmp_path / "serve.log") as base_url:
        _walk_every_route(base_url, alice, bob)
        saved = httpx2.post(
            f"{base_url}/v1/memory",
            headers={"Authorization": f"Bearer {alice}"},
            json={"content": "The staging database lives in Lisbon", "tags": ["infra"]},
        )
        assert saved.status_code == 201

    log = (tmp_path / "serve.log").read_text()
    assert "sealed at rest with key" in log
    assert "Lisbon" not in log
    files = list((tmp_path / ".local/share/memorybank").glob("memorybank.sqlite3*"))
    assert files
    assert not any(b"Lisbon" in path.read_bytes() for path in files)
    refused = run_memorybank(["serve", "--port", "0"], env={"HOME": str(tmp_path)})
    assert refused.returncode == 1
    assert "holds sealed memories (key ids seen:" in refused.stderr


def _raw_request(base_url: str, request: bytes) -> bytes:
    host, port = base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(request)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    return answer


def test_a_header_line_ending_in_a_bare_lf_is_refused_with_400(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    secret = _token(None, env)

    with served(None, env=env, log=tmp_path / "serve.log") as base_url:
        smuggled = _raw_request(
            base_url,
            b"GET /v1/memory HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: a\nAuthorization: Bearer "
            + secret.encode()
            + b"\r\nConnection: close\r\n\r\n",
        )
        honest = _raw_request(
            base_url,
            b"GET /v1/memory HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: a\r\nAuthorization: Bearer "
            + secret.encode()
            + b"\r\nConnection: close\r\n\r\n",
        )

    assert smuggled.startswith(b"HTTP/1.1 400 "), smuggled[:200]
    assert b"memories" not in smuggled
    assert honest.startswith(b"HTTP/1.1 200 "), honest[:200]


def _answers_while_the_schema_is_gone(base_url: str, secret: str) -> tuple[list[httpx2.Response], httpx2.Response]:
    bearer = {"Authorization": f"Bearer {secret}"}
    listed = httpx2.get(f"{base_url}/v1/memory", headers=bearer, timeout=30)
    rail = httpx2.post(
        f"{base_url}/mcp/agent",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={**bearer, "Accept": "application/json, text/event-stream"},
        timeout=30,
    )
    ready = httpx2.get(f"{base_url}/readyz", timeout=30)
    return [listed, rail], ready


def _assert_unavailable_with_the_readyz_hint(answers: list[httpx2.Response], ready: httpx2.Response) -> None:
    assert ready.status_code == 503
    assert ready.json()["reason"] == "the database schema is not ready: run `memorybank migrate`"
    for answer in answers:
        assert answer.status_code == 503, answer.text
        assert answer.headers["Retry-After"] == "1"
        assert answer.json()["error"] == "unavailable"
        assert answer.json()["reason"] == ready.json()["reason"]


@pytest.mark.mysql
def test_a_database_dropped_under_a_running_server_answers_503_with_the_readyz_hint(
    mariadb: ThrowawayDatabase, tmp_path: Path
) -> None:
    assert run_memorybank(["migrate", "--db", mariadb.url]).returncode == 0
    secret = _token(mariadb.url)

    with served(mariadb.url, log=tmp_path / "serve.log") as base_url:
        warm = httpx2.get(f"{base_url}/v1/memory", headers={"Authorization": f"Bearer {secret}"}, timeout=10)
        assert warm.status_code == 200  # the pool now holds a connection inside the database
        mariadb.drop()
        answers, ready = _answers_while_the_schema_is_gone(base_url, secret)

    _assert_unavailable_with_the_readyz_hint(answers, ready)
    assert "Traceback" not in (tmp_path / "serve.log").read_text()


def test_an_embedded_database_whose_tables_are_dropped_answers_503_with_the_readyz_hint(tmp_path: Path) -> None:
    database = tmp_path / "bank.sqlite3"
    url = f"sqlite:///{database}"
    secret = _token(url)

    with served(url, log=tmp_path / "serve.log") as base_url:
        with sqlite3.connect(database) as connection:
            connection.executescript("DROP TABLE memory_context; DROP TABLE memory; DROP TABLE api_token;")
        answers, ready = _answers_while_the_schema_is_gone(base_url, secret)

    _assert_unavailable_with_the_readyz_hint(answers, ready)


def test_behind_a_trusted_https_proxy_the_session_cookie_is_host_prefixed(tmp_path: Path) -> None:
    # Issue 19, finding 4: `X-Forwarded-Proto: https` from a trusted proxy (uvicorn trusts loopback by
    # default) made `memorybank_session=…; Secure`; it must be the `__Host-` cookie.
    db_url = f"sqlite:///{tmp_path / 'bank.sqlite3'}"
    secret = _token(db_url)
    with served(db_url, log=tmp_path / "serve.log") as base_url:
        port = urlsplit(base_url).port
        proxied = {"X-Forwarded-Proto": "https", PANEL_HEADER: "1", "Origin": f"https://127.0.0.1:{port}"}
        signed_in = httpx2.post(f"{base_url}/panel/session", json={"token": secret}, headers=proxied, timeout=10)
        header = signed_in.headers["set-cookie"]
        session = signed_in.cookies[SECURE_SESSION_COOKIE]
        listed = httpx2.get(
            f"{base_url}/v1/memory", headers={**proxied, "Cookie": f"{SECURE_SESSION_COOKIE}={session}"}, timeout=10
        )

    assert signed_in.status_code == 200, signed_in.text
    assert header.startswith(f"{SECURE_SESSION_COOKIE}=")
    assert "Secure" in header
    assert "Path=/" in header
    assert "Domain" not in header
    assert listed.status_code == 200
