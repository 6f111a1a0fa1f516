"""The contract suite's pytest fixtures, as a plugin: `pytest_plugins = ["memorybank_testing.fixtures"]`.

Every fixture here builds on one the host provides: `backend_factory`, a `BackendFactory`
(session-scoped is best when it holds a database).
"""

from __future__ import annotations

import pytest

from memorybank_core import MemoryBank, MemoryControls, RecordingEventSink, SecretScreen
from memorybank_testing.backends import Backend, BackendFactory
from memorybank_testing.principals import User, bank_over


@pytest.fixture
def events() -> RecordingEventSink:
    """The events the bank and the controls emit during one test."""
    return RecordingEventSink()


@pytest.fixture
def backend(backend_factory: BackendFactory) -> Backend:
    """A fresh, empty backend from the host's factory."""
    return backend_factory.fresh()


@pytest.fixture
def secret_screen() -> SecretScreen | None:
    """The save path's secret screen the bank runs with: none here; override it to run the suite with yours."""
    return None


@pytest.fixture
def bank(backend: Backend, events: RecordingEventSink, secret_screen: SecretScreen | None) -> MemoryBank:
    """A bank over a fresh, empty backend."""
    return bank_over(backend, events, secret_screen=secret_screen)


@pytest.fixture
def controls(backend: Backend, events: RecordingEventSink) -> MemoryControls:
    """The operator's controls over the same backend as `bank`."""
    return MemoryControls(
        controls=backend.controls, store=backend.store, events=events, unit_of_work=backend.unit_of_work
    )


@pytest.fixture
def alice() -> User:
    """A user."""
    return User()


@pytest.fixture
def bob() -> User:
    """Another user, in another organization."""
    return User()
