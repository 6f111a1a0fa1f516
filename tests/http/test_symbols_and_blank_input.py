"""Through the HTTP routes, on every backend (in-memory, SQLite, MariaDB): emoji and symbols are
findable, invisible-only text is refused like blank text, and repeated tags count once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.contract.backends import FACTORIES, BackendFactory
from tests.http.conftest import Caller


@pytest.fixture(scope="module", params=[pytest.param(name, marks=entry.marks) for name, entry in FACTORIES.items()])
def backend_factory(request: pytest.FixtureRequest) -> Iterator[BackendFactory]:
    """Every backend, MariaDB included: these are analyzer and bound rules each engine must honour."""
    factory = FACTORIES[request.param].make()
    yield factory
    factory.close()


def found(caller: Caller, q: str) -> list[str]:
    response = caller.search(q)
    assert response.status_code == 200, response.text
    return [result["content"] for result in response.json()["results"]]


def test_an_emoji_finds_the_memory_whose_content_or_tags_hold_it(as_alice: Caller, as_bob: Caller) -> None:
    as_alice.saved_id("Launch went well 🚀")
    as_alice.saved_id("Team dinner booked", tags=["🎉", "food"])
    as_alice.saved_id("Price went up by €5 → budget")
    as_alice.saved_id("A plain memory with no symbol at all")
    as_bob.saved_id("Bob's launch 🚀 too", tags=["🎉"])

    assert found(as_alice, "🚀") == ["Launch went well 🚀"]
    assert found(as_alice, "🎉") == ["Team dinner booked"]
    assert found(as_alice, "€") == ["Price went up by €5 → budget"]
    assert found(as_alice, "🍕") == []


@pytest.mark.parametrize("invisible", ["\u200b", "\ufeff", "\u200b\u2060\u200d", " \u200c "])
def test_invisible_only_content_is_refused_like_whitespace_only(as_alice: Caller, invisible: str) -> None:
    refused = as_alice.save(invisible)
    assert refused.status_code == 400
    assert [detail["path"] for detail in refused.json()["details"]] == ["content"]
    assert as_alice.save("   ").status_code == 400
    assert as_alice.list().json()["memories"] == []


def test_thirty_three_copies_of_one_tag_are_one_tag(as_alice: Caller) -> None:
    response = as_alice.save("Tagged many times", tags=["deploy"] * 33)
    assert response.status_code == 201, response.text
    assert response.json()["memory"]["tags"] == ["deploy"]
    assert found(as_alice, "deploy") == ["Tagged many times"]
