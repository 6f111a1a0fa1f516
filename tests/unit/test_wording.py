"""Counts in what people read agree with their nouns and verbs (issue 28, finding 7: no `1 memories`)."""

from __future__ import annotations

import pytest

from memorybank_core.wording import counted, pluralized


@pytest.mark.parametrize(
    ("count", "noun", "expected"),
    [
        (0, "memory", "0 memories"),
        (1, "memory", "1 memory"),
        (2, "memory", "2 memories"),
        (1, "line", "1 line"),
        (3, "line", "3 lines"),
        (1, "owner", "1 owner"),
        (2, "owner", "2 owners"),
    ],
)
def test_a_count_names_its_noun_in_the_right_number(count: int, noun: str, expected: str) -> None:
    assert counted(count, noun) == expected


@pytest.mark.parametrize(
    ("count", "verb", "expected"), [(1, "holds", "holds"), (2, "holds", "hold"), (1, "is", "is"), (2, "was", "were")]
)
def test_a_verb_agrees_with_its_count(count: int, verb: str, expected: str) -> None:
    assert pluralized(count, verb) == expected
