"""Search and list bounds, enforced by the use cases before any storage is touched."""

from __future__ import annotations

import pytest

from memorybank_core import InvalidInputError, MemoryBank, limits
from memorybank_core.bodies import JsonValue
from tests.conftest import User


@pytest.fixture
def memory_bank(bank: MemoryBank) -> MemoryBank:
    return bank


@pytest.mark.parametrize("backend_factory", ["memory"], indirect=True)
class TestBounds:
    def test_query_bounds(self, bank: MemoryBank, alice: User) -> None:
        assert bank.search(alice, query="q" * limits.QUERY.max) == []
        assert bank.search(alice, query="  " + "q" * limits.QUERY.max + "  ") == []
        for query in ["", "   ", "q" * (limits.QUERY.max + 1), None, 5]:
            with pytest.raises(InvalidInputError) as error:
                bank.search(alice, query=query)  # type: ignore[arg-type]  # a host may pass anything
            assert [p.path for p in error.value.problems] == ["q"]

    @pytest.mark.parametrize(("operation", "bound"), [("search", limits.SEARCH_LIMIT), ("list", limits.LIST_LIMIT)])
    def test_limit_bounds_reject_rather_than_clamp(
        self, bank: MemoryBank, alice: User, operation: str, bound: limits.CountBound
    ) -> None:
        def call(limit: object) -> object:
            # A host may pass anything at run time; a facade passes the text it received.
            if operation == "search":
                return bank.search(alice, query="x", limit=limit)  # type: ignore[arg-type]
            return bank.list(alice, limit=limit)  # type: ignore[arg-type]

        call(bound.min)
        call(bound.max)
        call(None)
        call(str(bound.max))  # a facade's query text holding an integer is that integer
        for bad in [bound.min - 1, bound.max + 1, -5, True, 2.5, str(bound.max + 1), "ten", "10.0", " 10", b"10"]:
            with pytest.raises(InvalidInputError) as error:
                call(bad)
            assert error.value.problems[0].path == "limit"
            assert error.value.problems[0].message == f"must be an integer from {bound.min} to {bound.max}"

    def test_default_page_sizes(self, bank: MemoryBank, alice: User) -> None:
        for i in range(limits.LIST_LIMIT.default + 5):
            bank.save(alice, JsonValue({"content": f"lighthouse {i}"}))
        assert len(bank.list(alice).memories) == limits.LIST_LIMIT.default
        assert len(bank.search(alice, query="lighthouse")) == limits.SEARCH_LIMIT.default

    @pytest.mark.parametrize(
        "cursor", ["", "nonsense", "W10", "x" * 300, "eyJhIjoxfQ", "WyJub3QgYSBkYXRlIiwibWVtX3h4Il0"]
    )
    def test_a_cursor_we_did_not_issue_is_rejected(self, bank: MemoryBank, alice: User, cursor: str) -> None:
        with pytest.raises(InvalidInputError) as error:
            bank.list(alice, cursor=cursor)
        assert error.value.problems[0].path == "cursor"
