"""`bootstrap.build`: the one composition root opens what the settings name and closes it, newest first,
on exit or when building fails half-way (ADR 0027)."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from adapters_mysql import SqlStorage
from memorybank import bootstrap, composition
from memorybank.settings import DatabaseChoice, KeyRingChoice, Settings
from memorybank_core import InvalidInputError, QuotaExceededError, SecretDetectedError
from memorybank_core.bodies import JsonValue
from tests.conftest import User
from tests.contract.embedders import HashedTermsEmbedder
from tests.secrets.table import secrets


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings.for_database(f"sqlite:///{tmp_path / 'bank.sqlite3'}")


class Closings:
    """What was closed, in order, by the storage and issuers `build` opened."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.closed: list[str] = []
        real_open = composition.open_ready_storage

        def open_ready_storage(choice: DatabaseChoice, keys: KeyRingChoice | None = None) -> SqlStorage:
            storage = real_open(choice, keys)
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

    assert [(result.memory.id, result.match) for result in results] == ([(saved.id, "meaning")] if found else [])
