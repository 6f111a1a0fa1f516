"""`bootstrap.build`: the one composition root opens what the settings name and closes it, newest first,
on exit or when building fails half-way (ADR 0027); what a caller gives it replaces what the settings would
build (ADR 0033)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from adapters_crypto import AesGcmSealer, new_key_ring
from adapters_mysql import SqlStorage
from harness.secret_cases import secrets
from memorybank import bootstrap, composition
from memorybank.settings import DatabaseChoice, Settings
from memorybank_core import (
    InMemoryControlStore,
    InMemoryStore,
    InvalidInputError,
    MemoryDisabledError,
    QuotaExceededError,
    RecordingEventSink,
    SecretDetectedError,
    SubjectKind,
)
from memorybank_core.bodies import JsonValue
from memorybank_search.hybrid import HybridSearch
from tests.conftest import User, start_clock
from tests.contract.embedders import HashedTermsEmbedder


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings.for_database(f"sqlite:///{tmp_path / 'bank.sqlite3'}")


class Closings:
    """What was closed, in order, by the storage and issuers `build` opened."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.closed: list[str] = []
        real_open = composition.open_ready_storage

        def open_ready_storage(choice: DatabaseChoice, opening: composition.Opening | None = None) -> SqlStorage:
            storage = real_open(choice, opening)
            real_close = storage.close

            def close() -> None:
                self.closed.append("storage")
                real_close()

            monkeypatch.setattr(storage, "close", close)
            return storage

        monkeypatch.setattr(composition, "open_ready_storage", open_ready_storage)


class FakeIssuers:
    def __init__(self, closed: list[str]) -> None:
        self._closed = closed

    def close(self) -> None:
        self._closed.append("issuers")


@pytest.fixture
def closings(monkeypatch: pytest.MonkeyPatch) -> Closings:
    return Closings(monkeypatch)


def test_a_runtime_closes_its_storage_on_exit_once(settings: Settings, closings: Closings) -> None:
    with bootstrap.build(settings) as runtime:
        alice = User()
        runtime.services.tokens.issue(user_id=alice.user_id, org_id=alice.organization_id)
        assert closings.closed == []
    runtime.close()

    assert closings.closed == ["storage"]


def test_what_was_opened_last_is_closed_first(
    settings: Settings, closings: Closings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(composition, "connect_issuers", lambda _oauth: FakeIssuers(closings.closed))

    with bootstrap.build(settings, serving=True):
        pass

    assert closings.closed == ["issuers", "storage"]


def test_a_build_failing_half_way_closes_what_it_opened(
    settings: Settings, closings: Closings, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unreachable(_oauth: object) -> None:
        raise OSError("the identity provider's client cannot start")

    monkeypatch.setattr(composition, "connect_issuers", unreachable)

    with pytest.raises(OSError, match="cannot start"):
        bootstrap.build(settings, serving=True)

    assert closings.closed == ["storage"]


def test_a_malformed_serving_setting_is_refused_before_the_database_is_opened(
    settings: Settings, closings: Closings
) -> None:
    broken = Settings.resolve({"db": settings.database.url, "rate_limits": ["search=lots"]}, {})

    with pytest.raises(InvalidInputError):
        bootstrap.build(broken, serving=True)

    assert closings.closed == []  # nothing was opened


def test_the_served_app_closes_its_runtime_when_it_shuts_down(settings: Settings, closings: Closings) -> None:
    runtime = bootstrap.build(settings, serving=True)

    with TestClient(runtime.app) as client:
        assert client.get("/readyz").status_code == 200
        assert closings.closed == []

    assert closings.closed == ["storage"]


def test_only_a_serving_runtime_builds_the_served_app(settings: Settings) -> None:
    # Without serving=True it has no rate limits and no identity providers: an app from it would drop them.
    with bootstrap.build(settings) as runtime, pytest.raises(RuntimeError, match="serving=True"):
        _ = runtime.app


@pytest.mark.parametrize("screen", ["refuse", "off"])
def test_the_services_carry_the_settings(tmp_path: Path, screen: str) -> None:
    flags = {"db": f"sqlite:///{tmp_path / 'bank.sqlite3'}", "quota_memories": "1", "secret_screen": screen}
    credential = secrets()[0].text

    with bootstrap.build(Settings.resolve(flags, {})) as runtime:
        bank, alice = runtime.services.bank, User()
        if screen == "refuse":
            with pytest.raises(SecretDetectedError):
                bank.save(alice, JsonValue({"content": credential}))
            bank.save(alice, JsonValue({"content": "an ordinary memory"}))
        else:
            bank.save(alice, JsonValue({"content": credential}))
        with pytest.raises(QuotaExceededError):
            bank.save(alice, JsonValue({"content": "one memory over the quota of 1"}))


@pytest.mark.parametrize(("floor", "found"), [(None, True), ("0.95", False)])
def test_the_hybrid_similarity_floor_reaches_the_search_engine(tmp_path: Path, floor: str | None, found: bool) -> None:
    flags = {"db": f"sqlite:///{tmp_path / 'bank.sqlite3'}", "search": "hybrid", "hybrid_min_similarity": floor}
    settings = Settings.resolve(flags, {})

    with bootstrap.build(settings, embedder=HashedTermsEmbedder()) as runtime:
        alice = User()
        saved = runtime.services.bank.save(alice, JsonValue({"content": "staging cluster upgrade"}))
        # No word in common, but the test embedder hashes "aquarium" into one of this memory's components
        # (cosine 0.58): its meaning stands out of a one-memory bank, unless the floor is above its cosine.
        results = runtime.services.bank.search(alice, query="aquarium")

    assert [result.memory.id for result in results] == ([saved.id] if found else [])


# --- overrides: what a caller gives instead of what the settings build -----------------------------------------


def test_given_a_store_the_runtime_opens_no_database(tmp_path: Path) -> None:
    store = InMemoryStore()
    settings = Settings.for_database(f"sqlite:///{tmp_path / 'never.sqlite3'}")

    with bootstrap.build(settings, store=store) as runtime:
        saved = runtime.services.bank.save(User(), JsonValue({"content": "kept in memory only"}))
        with pytest.raises(RuntimeError, match="ports given"):
            _ = runtime.storage

    assert store.owned(saved.user_id) == {saved.id: saved}
    assert not (tmp_path / "never.sqlite3").exists()


def test_a_store_given_brings_no_operator_port_of_another_store(settings: Settings) -> None:
    # A store that is not the core's in-memory one (here a database's, as a host's would be) replaces the store
    # only: the operator's ports around it were another store's, so import, `secrets scan` and its
    # --drop-revisions refuse rather than write to, walk or delete from that other store.
    with bootstrap.build(settings) as opened, bootstrap.build(store=opened.ports.store) as wired:
        for operator_port in (wired.ports.writer, wired.ports.owners, wired.ports.eraser):
            with pytest.raises(RuntimeError, match="these storage ports"):
                operator_port()


def test_a_given_port_replaces_the_databases_own_and_the_rest_stay(settings: Settings) -> None:
    controls = InMemoryControlStore()
    with bootstrap.build(settings) as opened:
        wired = bootstrap.build(settings, ports=opened.ports, controls=controls)
        alice = User()
        assert wired.services.controls is not None
        wired.services.controls.set_gate(SubjectKind.USER, alice.user_id, enabled=False)

        with pytest.raises(MemoryDisabledError):
            wired.services.bank.save(alice, JsonValue({"content": "switched off in the given controls"}))
        opened.services.bank.save(alice, JsonValue({"content": "the database's own controls say nothing"}))
        assert wired.ports.store is opened.ports.store
        assert controls.list() != []


def test_the_clock_events_and_ids_given_reach_the_bank_and_the_controls() -> None:
    events = RecordingEventSink()
    clock = start_clock()
    with bootstrap.build(
        store=InMemoryStore(), clock=clock, events=events, new_id=lambda prefix: f"{prefix}_x"
    ) as built:
        saved = built.services.bank.save(User(), JsonValue({"content": "a memory with a made-up id"}))

    assert saved.id == "mem_x"
    assert saved.created_at == datetime(2026, 7, 2, 12, 0, tzinfo=UTC)
    assert [name for name, _fields in events.events] == ["memory.saved"]


@pytest.mark.parametrize("given", ["store", "database"])
def test_an_embedder_given_makes_search_hybrid_when_it_is_built(tmp_path: Path, given: str) -> None:
    settings = Settings.for_database(f"sqlite:///{tmp_path / 'bank.sqlite3'}")
    store = {"store": InMemoryStore()} if given == "store" else {}

    with bootstrap.build(settings, embedder=HashedTermsEmbedder(), **store) as runtime:  # type: ignore[arg-type]
        engine = runtime.ports.search_engine
        hybrid = getattr(engine, "inner", engine)  # the SQL engine is wrapped in its retries
        assert isinstance(hybrid, HybridSearch)
        if given == "database":
            assert runtime.storage.embedder is not None
            assert runtime.storage.store.inner.embedder is runtime.storage.embedder


def test_without_an_embedder_sql_search_is_lexical_and_stays_so(settings: Settings) -> None:
    with bootstrap.build(settings) as runtime:
        assert not isinstance(runtime.ports.search_engine.inner, HybridSearch)  # type: ignore[attr-defined]
        assert not hasattr(runtime.storage, "use_embedder")


def test_a_sealer_given_seals_what_the_database_stores(settings: Settings) -> None:
    with bootstrap.build(settings, sealer=AesGcmSealer(new_key_ring())) as runtime:
        runtime.services.bank.save(User(), JsonValue({"content": "sealed at rest"}))
        assert runtime.storage.sealer is not None
        assert "sealed" in runtime.storage.describe_mode()
