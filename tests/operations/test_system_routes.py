"""Health, readiness and metrics of the server app, in process (`bootstrap.Runtime.app`)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from starlette.testclient import TestClient

from adapters_mcp import build_catalog
from adapters_metrics import PrometheusMetrics
from adapters_mysql import SqlStorage
from adapters_mysql.revisions import VERSION_TABLE
from memorybank import bootstrap
from memorybank.settings import HttpSettings, Settings
from memorybank_core import UnavailableError

METRICS_TOKEN = "metrics-secret-for-tests"


def _runtime(path: Path, *, metrics_token: str | None = METRICS_TOKEN, ready: bool = True) -> bootstrap.Runtime:
    """The served runtime over the SQLite file at `path`; not `ready`: opened without its schema."""
    settings = Settings.for_database(f"sqlite:///{path}", http=HttpSettings(metrics_token=metrics_token))
    return bootstrap.build(settings, serving=True, migrating=not ready)


def _client(runtime: bootstrap.Runtime) -> TestClient:
    return TestClient(runtime.app, raise_server_exceptions=False)  # the app's lifespan closes the runtime


@pytest.fixture
def runtime(tmp_path: Path) -> bootstrap.Runtime:
    return _runtime(tmp_path / "bank.sqlite3")


@pytest.fixture
def storage(runtime: bootstrap.Runtime) -> SqlStorage:
    return runtime.storage


@pytest.fixture
def client(runtime: bootstrap.Runtime) -> Iterator[TestClient]:
    with _client(runtime) as test_client:
        yield test_client


def _token(runtime: bootstrap.Runtime) -> str:
    return runtime.services.tokens.issue(
        user_id="usr_01h455vb4pex5vsknk084sn02q", org_id="org_01h455vb4pex5vsknk084sn02q"
    ).secret


def test_health_and_readiness_answer_anyone(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert (ready.status_code, ready.json()) == (200, {"status": "ready"})


def test_readiness_is_503_with_the_reason_when_the_schema_is_missing(tmp_path: Path) -> None:
    bare = _runtime(tmp_path / "empty.sqlite3", ready=False)  # never initialized: no tables

    with _client(bare) as client:
        ready = client.get("/readyz")
        alive = client.get("/healthz")

    assert ready.status_code == 503
    assert ready.json() == {
        "status": "not_ready",
        "reason": "the database schema is not ready: run `memorybank migrate`",
    }
    assert alive.status_code == 200


def test_operational_routes_stay_out_of_the_api_document_and_the_agents_catalog(client: TestClient) -> None:
    document = client.get("/openapi.json").json()

    assert not {"/healthz", "/readyz", "/metrics"} & set(document["paths"])
    assert sorted(build_catalog(document).names) == [
        "deleteMemoryById",
        "getMemory",
        "getMemoryRevisions",
        "getMemorySearch",
        "patchMemoryById",
        "postMemory",
    ]


def test_metrics_need_the_metrics_token(client: TestClient, runtime: bootstrap.Runtime) -> None:
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    # A user's API token is not the metrics token.
    assert client.get("/metrics", headers={"Authorization": f"Bearer {_token(runtime)}"}).status_code == 401
    answer = client.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")


def test_without_a_metrics_token_there_is_no_metrics_route(tmp_path: Path) -> None:
    with _client(_runtime(tmp_path / "bank.sqlite3", metrics_token=None)) as client:
        assert client.get("/metrics").status_code == 404


def test_metrics_count_requests_by_operation_and_status_and_never_name_users_or_text(
    client: TestClient, runtime: bootstrap.Runtime
) -> None:
    secret = _token(runtime)
    auth = {"Authorization": f"Bearer {secret}"}
    content = "Quixotic marmalade inventory lives in the cellar"
    assert client.post("/v1/memory", json={"content": content}, headers=auth).status_code == 201
    assert client.get("/v1/memory/search", params={"q": "quixotic marmalade"}, headers=auth).status_code == 200
    assert client.get("/v1/memory", headers={"Authorization": "Bearer mbk_unknown"}).status_code == 401

    text = client.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}).text

    assert 'memorybank_http_requests_total{operation="postMemory",status="201"} 1.0' in text
    assert 'memorybank_http_requests_total{operation="getMemorySearch",status="200"} 1.0' in text
    assert 'memorybank_http_requests_total{operation="getMemory",status="401"} 1.0' in text
    assert 'memorybank_http_request_duration_seconds_count{operation="postMemory"} 1.0' in text
    assert "memorybank_search_results_count 1.0" in text
    # One search that scored the one matching memory: counted, without a label naming anything.
    assert "memorybank_search_candidates_count 1.0" in text
    assert "memorybank_search_candidates_sum 1.0" in text
    assert 'memorybank_search_candidates_bucket{le="1.0"} 1.0' in text
    for private in ("usr_", "org_", "mem_", "quixotic", "marmalade", "Quixotic", secret):
        assert private not in text


def test_a_database_failure_is_counted_as_a_database_error() -> None:
    metrics = PrometheusMetrics()

    metrics.observe_request(operation_id="getMemorySearch", status=503, seconds=0.01, error=UnavailableError("down"))
    metrics.observe_request(operation_id="getMemorySearch", status=400, seconds=0.01, error=ValueError("bad"))

    text = metrics.render()[0].decode()
    assert 'memorybank_database_errors_total{operation="getMemorySearch"} 1.0' in text
    assert 'memorybank_http_requests_total{operation="getMemorySearch",status="503"} 1.0' in text


def test_a_ready_server_answers_readiness_without_the_full_check_and_logs_nothing(
    runtime: bootstrap.Runtime, storage: SqlStorage, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    storage.check_ready()  # what `serve` does before it listens
    with _client(runtime) as client:
        monkeypatch.setattr(storage.schema, "check_ready", _full_check_must_not_run)
        caplog.set_level(logging.DEBUG)
        answers = [client.get("/readyz") for _ in range(5)]
    assert [(a.status_code, a.json()) for a in answers] == [(200, {"status": "ready"})] * 5
    # Ours and the database libraries' (the test client logs its own requests).
    assert [r.getMessage() for r in caplog.records if r.name.startswith(("memorybank", "alembic", "sqlalchemy"))] == []


def _full_check_must_not_run() -> None:
    raise AssertionError("the readiness probe ran the full schema check on a ready database")


@pytest.mark.parametrize("vanishes", ["memory table", "version stamp", "database file"])
def test_readiness_goes_503_when_the_schema_or_the_database_disappears(
    tmp_path: Path, runtime: bootstrap.Runtime, storage: SqlStorage, vanishes: str
) -> None:
    storage.check_ready()
    with _client(runtime) as client:
        assert client.get("/readyz").status_code == 200
        if vanishes == "database file":
            storage.engine.dispose()
            (tmp_path / "bank.sqlite3").unlink()
        else:
            with storage.engine.begin() as connection:
                if vanishes == "memory table":
                    connection.exec_driver_sql("DROP TABLE memory")
                else:
                    connection.execute(sa.table(VERSION_TABLE).delete())
        gone = client.get("/readyz")
    assert (gone.status_code, gone.json()["status"]) == (503, "not_ready")
