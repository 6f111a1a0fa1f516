"""Fixtures for the OAuth tier: real OpenID providers, and the standalone app trusting them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.oauth.idp import Idp, running_idp


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/oauth/" in item.nodeid:
            item.add_marker(pytest.mark.oauth)


@pytest.fixture(scope="module")
def idp() -> Iterator[Idp]:
    """A provider shared by a module's tests (they only ask it for tokens)."""
    with running_idp() as provider:
        yield provider


@pytest.fixture(scope="module")
def other_idp() -> Iterator[Idp]:
    """A second, independent provider: the same client ids, so the same subjects, at another issuer."""
    with running_idp() as provider:
        yield provider
