"""Structured events: saves, searches and deletes are logged with ids and counts, never with text."""

from __future__ import annotations

import logging

import pytest
from starlette.testclient import TestClient

from adapters_http import bearer_token_resolver, create_app
from memorybank_core import LoggingEventSink, MemoryBank, TokenService
from tests.conftest import User
from tests.http.conftest import caller_for

CONTENT = "Quarterly revenue target is eleven million"
SNIPPET = "cfo mentioned the eleven million figure"
QUERY = "revenue target eleven"
TAG = "finance-confidential"
CONVERSATION = "conversation-xyz-123"


def _event_fields(record: logging.LogRecord) -> dict[str, object]:
    fields = getattr(record, "event_fields", {})
    assert isinstance(fields, dict)
    return fields


@pytest.fixture
def events() -> LoggingEventSink:
    """Overrides the suite's recording sink: the log is what these tests read."""
    return LoggingEventSink()


def test_save_search_and_delete_are_logged_with_ids_and_counts_but_no_text(
    bank: MemoryBank, tokens: TokenService, alice: User, caplog: pytest.LogCaptureFixture
) -> None:
    with TestClient(create_app(bank, bearer_token_resolver(tokens))) as client:
        caller = caller_for(client, tokens, alice)
        with caplog.at_level(logging.INFO, logger="memorybank"):
            memory_id = caller.saved_id(
                CONTENT, tags=[TAG], contexts=[{"snippet": SNIPPET, "conversation_id": CONVERSATION}]
            )
            assert len(caller.search(QUERY).json()["results"]) == 1
            assert caller.list().status_code == 200
            assert caller.delete(memory_id).status_code == 204
            assert caller.search("x" * 600).status_code == 400

    records = [r for r in caplog.records if r.name.startswith("memorybank")]
    events = {getattr(r, "event", None): _event_fields(r) for r in records if r.name == "memorybank.events"}
    assert events["memory.saved"]["memory_id"] == memory_id
    assert events["memory.saved"]["user_id"] == alice.user_id
    assert events["memory.saved"]["context_count"] == 1
    assert events["memory.saved"]["content_length"] == len(CONTENT)
    assert events["memory.searched"]["query_length"] == len(QUERY)
    assert events["memory.searched"]["result_count"] == 1
    assert events["memory.deleted"]["memory_id"] == memory_id
    access = [_event_fields(r) for r in records if getattr(r, "event", None) == "http.request"]
    assert [(a["operation_id"], a["status"]) for a in access] == [
        ("postMemory", 201),
        ("getMemorySearch", 200),
        ("getMemory", 200),
        ("deleteMemoryById", 204),
        ("getMemorySearch", 400),
    ]
    everything = "\n".join(f"{r.getMessage()} {getattr(r, 'event_fields', '')}" for r in records)
    for secret in (CONTENT, SNIPPET, QUERY, TAG, CONVERSATION, "revenue", "eleven", "xxxxxxxx"):
        assert secret not in everything


def test_the_account_routes_log_counts_and_never_the_exported_text(
    bank: MemoryBank, tokens: TokenService, alice: User, caplog: pytest.LogCaptureFixture
) -> None:
    with TestClient(create_app(bank, bearer_token_resolver(tokens))) as client:
        caller = caller_for(client, tokens, alice)
        caller.saved_id(CONTENT, tags=[TAG], contexts=[{"snippet": SNIPPET, "conversation_id": CONVERSATION}])
        with caplog.at_level(logging.INFO, logger="memorybank"):
            assert client.get("/v1/memory/usage", headers=caller.headers).status_code == 200
            assert CONTENT in client.get("/v1/memory/export", headers=caller.headers).text
            deleted = client.post("/v1/memory/delete-all", json={"confirm": "delete all"}, headers=caller.headers)
            assert deleted.json() == {"deleted": 1, "remaining": 0}

    records = [r for r in caplog.records if r.name.startswith("memorybank")]
    events = {getattr(r, "event", None): _event_fields(r) for r in records if r.name == "memorybank.events"}
    assert events["memory.usage_read"]["memories"] == 1
    assert events["memory.exported"]["exported"] == 1
    assert (events["memory.deleted_batch"]["deleted"], events["memory.deleted_batch"]["remaining"]) == (1, 0)
    logged = " ".join(r.getMessage() + repr(getattr(r, "event_fields", {})) for r in records)
    for secret in (CONTENT, SNIPPET, TAG, CONVERSATION):
        assert secret not in logged
