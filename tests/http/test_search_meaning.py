"""Through `GET /v1/memory/search`, on the owner-scoped engines: short words, stems and CJK find their memories."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.contract.backends import FACTORIES, BackendFactory
from tests.http.conftest import Caller

MEMORIES = [
    "I write Go at work",
    "Our AI roadmap is due",
    "Revenue targets for Q3 are set",
    "The service deploys every night",
    "Lunch in 東京 was ラーメン again",
    "我的猫很可爱",
    "Grandma's recipe uses saffron",
]


@pytest.fixture(
    scope="module",
    params=[pytest.param("sqlite"), pytest.param("mysql", marks=pytest.mark.mysql)],
)
def backend_factory(request: pytest.FixtureRequest) -> Iterator[BackendFactory]:
    """Overrides the HTTP tier's backends: the owner-scoped engines, SQLite and MariaDB."""
    factory = FACTORIES[request.param].make()
    yield factory
    factory.close()


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Go", "I write Go at work"),
        ("AI", "Our AI roadmap is due"),
        ("Q3", "Revenue targets for Q3 are set"),
        ("deployment", "The service deploys every night"),
        ("東京", "Lunch in 東京 was ラーメン again"),
        ("ラーメン", "Lunch in 東京 was ラーメン again"),
        ("猫", "我的猫很可爱"),
    ],
)
def test_the_search_route_finds_what_people_mean(as_alice: Caller, as_bob: Caller, query: str, expected: str) -> None:
    mine = {content: as_alice.saved_id(content) for content in MEMORIES}
    for content in MEMORIES:
        as_bob.saved_id(content)
    response = as_alice.search(query)
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    # Exactly Alice's memory: never Bob's copy of the same words.
    assert [(result["id"], result["content"]) for result in results] == [(mine[expected], expected)]
