"""Events carry ids, counts and timings, never what the user wrote or asked."""

from __future__ import annotations

import logging

import pytest

from memorybank import bootstrap
from memorybank_core import InMemoryStore, LoggingEventSink, SaveRequest
from tests.conftest import User, start_clock

SECRET_WORDS = "zanzibar-content"


def test_events_are_logged_without_content_snippets_or_queries(caplog: pytest.LogCaptureFixture) -> None:
    bank = bootstrap.build(store=InMemoryStore(), clock=start_clock(), events=LoggingEventSink()).services.bank
    user = User()
    with caplog.at_level(logging.INFO, logger="memorybank.events"):
        memory = bank.save(
            user, SaveRequest.parse({"content": f"{SECRET_WORDS} memory", "contexts": [{"snippet": "snippet-secret"}]})
        )
        bank.search(user, query="query-secret zanzibar")
        bank.list(user)
        bank.delete(user, memory_id=memory.id)

    names = [record.event for record in caplog.records]  # type: ignore[attr-defined]
    assert names == ["memory.saved", "memory.searched", "memory.listed", "memory.deleted"]
    saved = caplog.records[0].event_fields  # type: ignore[attr-defined]
    assert saved["memory_id"] == memory.id
    assert saved["context_count"] == 1
    assert caplog.records[1].event_fields["query_length"] == len("query-secret zanzibar")  # type: ignore[attr-defined]
    assert all("duration_ms" in r.event_fields for r in caplog.records)  # type: ignore[attr-defined]
    logged = caplog.text + repr([r.__dict__ for r in caplog.records])
    for secret in ("zanzibar", "snippet-secret", "query-secret"):
        assert secret not in logged
