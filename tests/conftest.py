"""Fixtures shared by every test tier."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from adapters_secrets import DetectSecretsScreen
from memorybank_core import SecretScreen

# The contract suite's principal and clock, for every tier (one copy: the shipped one).
from memorybank_testing import User, start_clock
from tests.contract.backends import FACTORIES, BackendFactory

#: `mysql_url` and the MySQL test-server rules, for every tier; the contract suite's fixtures
#: (`backend`, `bank`, `controls`, `events`, `alice`, `bob`) over the `backend_factory` below.
pytest_plugins = ("tests.mysql_server", "memorybank_testing.fixtures")

__all__ = ["User", "backend_factory", "start_clock"]

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
