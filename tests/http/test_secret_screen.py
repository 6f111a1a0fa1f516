"""The secret screen on the REST API, as `memorybank serve` wires it: 422 `secret_detected`, naming kind and place,
and never the secret, not in the response, the logs or /metrics; ordinary memories are saved as before."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from benchmarks.adversarial import filling
from harness.secret_cases import Case, harmless, secrets
from memorybank import bootstrap, secret_settings
from memorybank.settings import HttpSettings, RateLimitChoice, Settings
from memorybank_core import PanelSessions, TokenService
from memorybank_core.secret_screening import save_a_pointer
from tests.conftest import User
from tests.http.conftest import panel_caller_for

METRICS_TOKEN = "metrics-token-for-the-screen-tests"
USER = "usr_01h455vb4pex5vsknk084sn02q"
ORG = "org_01h455vb4pex5vsknk084sn02q"


def _server(tmp_path: Path, *, secret_screen: str = secret_settings.REFUSE) -> tuple[TestClient, str]:
    settings = Settings.for_database(
        f"sqlite:///{tmp_path / 'bank.sqlite3'}",
        secret_screen=secret_screen,
        http=HttpSettings(metrics_token=METRICS_TOKEN),
        rate_limits=RateLimitChoice(storage_url="memory://", rules=("*=off",)),
    )
    runtime = bootstrap.build(settings, serving=True)  # the app's lifespan closes it
    token = runtime.services.tokens.issue(user_id=USER, org_id=ORG).secret
    return TestClient(runtime.app, raise_server_exceptions=False), token


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, dict[str, str]]]:
    client, token = _server(tmp_path_factory.mktemp("screen"))
    with client:
        yield client, {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize("case", secrets(), ids=[case.name for case in secrets()])
def test_a_credential_is_refused_with_422_naming_kind_and_place_but_not_the_secret(
    server: tuple[TestClient, dict[str, str]], case: Case
) -> None:
    client, auth = server

    response = client.post("/v1/memory", json={"content": case.text}, headers=auth)

    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "secret_detected"
    # The advice's example names the kind found, not always an AWS key.
    assert body["message"].endswith(save_a_pointer([body["details"][0]["kind"]]))
    assert "AWS" not in body["message"] or "aws" in body["details"][0]["kind"]
    start = case.text.index(case.secret)
    (detail,) = [d for d in body["details"] if d["start"] <= start < d["end"]]
    assert detail["path"] == "content"
    assert detail["kind"] == case.kind
    assert detail["end"] >= start + len(case.secret)
    assert case.secret not in response.text
    # Nor any long piece of it (a secret could be echoed in part).
    assert not any(case.secret[i : i + 8] in response.text for i in range(len(case.secret) - 8))


@pytest.mark.parametrize("case", harmless(), ids=[case.name for case in harmless()])
def test_a_memory_that_only_sounds_secret_is_saved_untouched(
    server: tuple[TestClient, dict[str, str]], case: Case
) -> None:
    client, auth = server

    response = client.post("/v1/memory", json={"content": case.text, "tags": ["security"]}, headers=auth)

    assert response.status_code == 201, response.text
    assert response.json()["memory"]["content"] == case.text


def test_nothing_of_a_refused_save_is_stored_logged_or_counted_by_its_bytes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    client, token = _server(tmp_path)
    auth = {"Authorization": f"Bearer {token}"}
    with client, caplog.at_level(logging.DEBUG):
        answers = [
            client.post(
                "/v1/memory",
                json={"content": case.text, "contexts": [{"snippet": case.text}]},
                headers=auth,
            )
            for case in secrets()
        ]
        listed = client.get("/v1/memory", headers=auth).json()
        found = client.get("/v1/memory/search", params={"q": "aws key"}, headers=auth).json()
        metrics = client.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}).text

    assert {answer.status_code for answer in answers} == {422}
    assert listed["memories"] == []
    assert found["results"] == []
    logs = "\n".join(record.getMessage() + repr(record.__dict__) for record in caplog.records)
    assert "memory.secret_refused" in logs
    for case in secrets():
        for text in (logs, metrics):
            assert case.secret not in text
    assert 'memorybank_http_requests_total{operation="postMemory",status="422"} ' in metrics
    assert 'memorybank_secrets_refused_total{kind="aws_access_key"} 2.0' in metrics
    assert 'memorybank_secrets_refused_total{kind="private_key"} 4.0' in metrics


def test_a_credential_in_a_tag_or_a_snippet_is_refused_by_its_path(server: tuple[TestClient, dict[str, str]]) -> None:
    client, auth = server
    aws, dsn = secrets()[0], secrets()[17]

    response = client.post(
        "/v1/memory",
        json={"content": "deploy notes", "tags": ["ops", aws.secret], "contexts": [{"snippet": dsn.text}]},
        headers=auth,
    )

    assert response.status_code == 422
    assert [(d["path"], d["kind"]) for d in response.json()["details"]] == [
        ("tags.1", "aws_access_key"),
        ("contexts.0.snippet", "url_password"),
    ]


def test_with_the_screen_off_an_operator_stores_what_is_sent(tmp_path: Path) -> None:
    client, token = _server(tmp_path, secret_screen="off")
    case = secrets()[0]

    with client:
        response = client.post("/v1/memory", json={"content": case.text}, headers={"Authorization": f"Bearer {token}"})

    assert response.status_code == 201


def test_the_panel_door_is_screened_too(client: TestClient, panel_sessions: PanelSessions, alice: User) -> None:
    caller = panel_caller_for(client, panel_sessions, alice)
    case = secrets()[3]

    response = caller.save(case.text)

    assert response.status_code == 422
    assert response.json()["error"] == "secret_detected"
    assert case.secret not in response.text


def test_a_bearer_caller_of_the_test_app_is_screened(client: TestClient, tokens: TokenService, alice: User) -> None:
    issued = tokens.issue(user_id=alice.user_id, org_id=alice.organization_id, scopes=alice.scopes)

    response = client.post(
        "/v1/memory", json={"content": secrets()[0].text}, headers={"Authorization": f"Bearer {issued.secret}"}
    )

    assert response.status_code == 422


def test_a_credentials_range_counts_characters_not_utf16_units_or_bytes(
    server: tuple[TestClient, dict[str, str]],
) -> None:
    client, auth = server
    case = secrets()[0]
    # An emoji is one character, two UTF-16 code units and four UTF-8 bytes: the range counts characters.
    text = "🔑🔑 ключ " + case.text

    response = client.post("/v1/memory", json={"content": text}, headers=auth)

    assert response.status_code == 422
    start = text.index(case.secret)
    assert len(text[:start].encode("utf-16-le")) // 2 == start + 2  # so UTF-16 units would say otherwise
    (detail,) = [d for d in response.json()["details"] if d["path"] == "content"]
    assert detail["start"] == start
    assert text[detail["start"] : detail["end"]].startswith(case.secret)


@pytest.mark.parametrize("unit", ["pwd=`", "pwd=``"], ids=["one backtick", "two backticks"])
def test_issue_27s_costly_save_is_refused_with_422_screen_budget_exceeded_and_stores_nothing(
    tmp_path: Path, unit: str
) -> None:
    # The 5-character unit repeated to fill content (8,000) and 16 snippets (4,000): 10 to 17 s of CPU before.
    client, token = _server(tmp_path)
    auth = {"Authorization": f"Bearer {token}"}
    save = filling(unit, unit)
    with client:
        response = client.post("/v1/memory", json=save.body(), headers=auth)
        listed = client.get("/v1/memory", headers=auth).json()

    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "screen_budget_exceeded"
    assert [detail["path"] for detail in body["details"]] in (
        ["content"],
        *([f"contexts.{n}.snippet"] for n in range(16)),
    )
    assert listed["memories"] == []


def test_a_refused_costly_save_is_screened_before_the_database_connection_is_taken_back(tmp_path: Path) -> None:
    # The save hands its connection back while a long text is screened, then takes one again to answer.
    client, token = _server(tmp_path)
    auth = {"Authorization": f"Bearer {token}"}
    with client:
        refused = client.post("/v1/memory", json=filling("pwd=`", "pwd=`").body(), headers=auth)
        saved = client.post(
            "/v1/memory", json={"content": "after the costly one, " + "ordinary words " * 200}, headers=auth
        )

    assert (refused.status_code, saved.status_code) == (422, 201)
