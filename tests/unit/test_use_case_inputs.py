"""One input shape per use case (issue 28): a host hands a value, a facade a `Body`; the core decodes."""

from __future__ import annotations

import pytest

from memorybank import bootstrap
from memorybank_core import (
    DELETE_ALL_CONFIRMATION,
    BodyTooLargeError,
    DeleteAll,
    InMemoryStore,
    InvalidInputError,
    JsonText,
    JsonValue,
    MemoryBank,
    RefusedBody,
    SaveRequest,
    UnsupportedMediaTypeError,
)
from tests.conftest import User


def _bank() -> MemoryBank:
    return bootstrap.build(store=InMemoryStore()).services.bank


def test_a_save_takes_a_value_or_a_body_and_the_same_memory_comes_of_either() -> None:
    bank, alice = _bank(), User()
    data = {"content": "The ferry leaves at nine", "tags": ["travel"]}

    saved = [
        bank.save(alice, SaveRequest.parse(data)),
        bank.save(alice, JsonValue(data)),
        bank.save(alice, JsonText(b'{"content": "The ferry leaves at nine", "tags": ["travel"]}')),
    ]

    assert {(m.content, m.tags) for m in saved} == {("The ferry leaves at nine", ("travel",))}


def test_raw_data_handed_to_save_is_refused_with_what_to_hand_instead() -> None:
    with pytest.raises(TypeError, match=r"SaveRequest\.parse"):
        _bank().save(User(), {"content": "a dict is neither a value nor a body"})  # type: ignore[arg-type]


@pytest.mark.parametrize("error", [UnsupportedMediaTypeError(), BodyTooLargeError(10)])
def test_a_body_the_facade_refused_is_reported_by_the_use_case(error: Exception) -> None:
    with pytest.raises(type(error)):
        _bank().save(User(), RefusedBody(error))  # type: ignore[arg-type]


def test_delete_all_takes_a_value_or_a_body_and_the_value_is_checked_where_it_is_made() -> None:
    bank, alice = _bank(), User()
    for n in range(3):
        bank.save(alice, SaveRequest(content=f"note {n}"))

    assert bank.delete_batch(alice, DeleteAll(confirm=DELETE_ALL_CONFIRMATION, limit=2)).remaining == 1
    assert bank.delete_batch(alice, JsonValue({"confirm": DELETE_ALL_CONFIRMATION})).remaining == 0
    with pytest.raises(InvalidInputError) as wrong:
        DeleteAll(confirm="yes please")
    assert [p.path for p in wrong.value.problems] == ["confirm"]
    with pytest.raises(InvalidInputError) as both:
        bank.delete_batch(alice, JsonValue({"confirm": "yes", "limit": None}))
    assert [p.path for p in both.value.problems] == ["confirm", "limit"]


def test_a_limit_given_as_a_float_is_not_an_integer_even_when_whole() -> None:
    with pytest.raises(InvalidInputError) as refused:
        _bank().delete_batch(User(), JsonValue({"confirm": DELETE_ALL_CONFIRMATION, "limit": 2.0}))
    assert [p.path for p in refused.value.problems] == ["limit"]
