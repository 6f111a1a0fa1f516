"""Fixtures shared by every test tier."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from adapters_secrets import DetectSecretsScreen
from memorybank import bootstrap
from memorybank_core import Clock, MemoryBank, MemoryControls, RecordingEventSink, SecretScreen

# The contract suite's principal and clock, for every tier (one copy: the shipped one).
from memorybank_testing import Backend, User, start_clock
from tests.contract.backends import FACTORIES, BackendFactory

#: `mysql_url` and the MySQL test-server rules, for every tier; the contract suite's fixtures
#: (`backend`, `bank`, `controls`, `events`, `alice`, `bob`) over the `backend_factory` below.
pytest_plugins = ("tests.mysql_server", "memorybank_testing.fixtures")

__all__ = ["User", "backend_factory", "bank", "controls", "runtime", "start_clock"]

# `serve` and `mcp` search hybrid by default, which loads the model (about 1 s and 300 MB per process): the
# tests that start them say lexical unless they test hybrid search (`--search hybrid` beats this) or the
# default itself (they clear it). Set before any test starts a process, which inherits it.
os.environ.setdefault("MEMORYBANK_SEARCH", "lexical")


@pytest.fixture(scope="session", params=[pytest.param(name, marks=entry.marks) for name, entry in FACTORIES.items()])
def backend_factory(request: pytest.FixtureRequest) -> Iterator[BackendFactory]:
    """One factory per backend kind for the whole session."""
    factory = FACTORIES[request.param].make()
    yield factory
    factory.close()


@pytest.fixture
def secret_screen() -> SecretScreen:
    """The screen the server wires, so every tier shows ordinary memories pass it."""
    return DetectSecretsScreen()


@pytest.fixture
def clock() -> Clock | None:
    """The clock `runtime` wires: the suite's, one millisecond per reading (a tier may override it)."""
    return start_clock()


@pytest.fixture
def runtime(
    backend: Backend, events: RecordingEventSink, secret_screen: SecretScreen, clock: Clock | None
) -> Iterator[bootstrap.Runtime]:
    """The composition root over a fresh backend's ports, with the suite's clock, events and screen."""
    with bootstrap.build(
        store=backend.store,
        search_engine=backend.search_engine,
        controls=backend.controls,
        unit_of_work=backend.unit_of_work,  # as a server runs: one connection per use case (or per request)
        clock=clock,
        events=events,
        secret_screen=secret_screen,
    ) as built:
        yield built


@pytest.fixture
def bank(runtime: bootstrap.Runtime) -> MemoryBank:
    """Overrides the contract suite's: the bank exactly as the composition root wires it."""
    return runtime.services.bank


@pytest.fixture
def controls(runtime: bootstrap.Runtime) -> MemoryControls:
    """Overrides the contract suite's: the operator's controls over the same ports as `bank`."""
    assert runtime.services.controls is not None
    return runtime.services.controls
