"""Fixtures shared by every test tier."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import attrs
import pytest

from adapters_secrets import DetectSecretsScreen
from memorybank_core import READ_SCOPE, WRITE_SCOPE, FixedClock, MemoryBank, MemoryControls, RecordingEventSink
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id
from tests.contract.backends import FACTORIES, Backend, BackendFactory

#: `mysql_url` and the MySQL test-server rules, for every tier.
pytest_plugins = ("tests.mysql_server",)


@attrs.frozen(kw_only=True)
class User:
    """A test principal."""

    user_id: str = attrs.field(factory=lambda: new_id(USER_PREFIX))
    organization_id: str = attrs.field(factory=lambda: new_id(ORGANIZATION_PREFIX))
    scopes: frozenset[str] = frozenset({READ_SCOPE, WRITE_SCOPE})


def start_clock() -> FixedClock:
    """A clock that moves one millisecond per reading, so every save has its own time."""
    return FixedClock(datetime(2026, 7, 2, 12, 0, tzinfo=UTC), step=timedelta(milliseconds=1))


@pytest.fixture(scope="session", params=[pytest.param(name, marks=entry.marks) for name, entry in FACTORIES.items()])
def backend_factory(request: pytest.FixtureRequest) -> Iterator[BackendFactory]:
    """One factory per backend kind for the whole session."""
    factory = FACTORIES[request.param].make()
    yield factory
    factory.close()


@pytest.fixture
def events() -> RecordingEventSink:
    return RecordingEventSink()


@pytest.fixture
def backend(backend_factory: BackendFactory) -> Backend:
    """A fresh, empty backend of the parametrized kind."""
    return backend_factory.fresh()


@pytest.fixture
def bank(backend: Backend, events: RecordingEventSink) -> MemoryBank:
    """A bank over a fresh, empty backend of the parametrized kind."""
    return bank_over(backend, events)


@pytest.fixture
def controls(backend: Backend, events: RecordingEventSink) -> MemoryControls:
    """The operator's controls over the same backend as `bank`."""
    return MemoryControls(controls=backend.controls, store=backend.store, events=events)


def bank_over(backend: Backend, events: RecordingEventSink | None = None) -> MemoryBank:
    """The bank as the server wires it: over `backend`'s store, search engine and operator controls, with the
    save path's secret screen (so every tier shows ordinary memories pass it)."""
    return MemoryBank(
        store=backend.store,
        search_engine=backend.search_engine,
        clock=start_clock(),
        events=events,
        controls=backend.controls,
        secret_screen=DetectSecretsScreen(),
    )


@pytest.fixture
def alice() -> User:
    return User()


@pytest.fixture
def bob() -> User:
    return User()
