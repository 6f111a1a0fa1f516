"""The secret screen's cost is linear in its input and bounded by its budget, whatever the text's shape (issue 27).

No absolute time: the budget's units are counted exactly, and CPU time is compared between a text and one twice
its size in the same run (a quadratic screen doubles its cost twice).
"""

from __future__ import annotations

import random
import statistics
import string
import time

import pytest
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

from adapters_secrets import DetectSecretsScreen
from adapters_secrets.screen import looks_random, shannon_entropy
from benchmarks.adversarial import SHAPES, filled, filling
from harness.secret_cases import harmless
from memorybank_core import limits
from memorybank_core.errors import ScreenBudgetExceededError
from memorybank_core.ports import ScreenBudget
from memorybank_core.secret_screening import SCREEN_BUDGET_EXCEEDED, find_secrets, secrets_in_memory

SCREEN = DetectSecretsScreen()
#: Doubling a text may at most double its cost, with room for a loaded machine's noise; quadratic work is 4x.
LINEAR = 2.8


def _units(text: str) -> int:
    budget = ScreenBudget(10**9)
    SCREEN.find(text, budget)
    return budget.spent


def _cpu(text: str) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        SCREEN.find(text, ScreenBudget(10**9))
        best = min(best, time.process_time() - started)
    return best


def _doubling_ratio(half: str, whole: str) -> float:
    """The median, over pairs measured one right after the other, of `whole`'s CPU time over `half`'s. A busy
    neighbour on the other hyperthread slows both of a pair alike; each text's best of five runs taken apart once
    came from a quiet and a busy moment (3.7x for a shape that costs 2.0x)."""
    return statistics.median(_cpu(whole) / max(_cpu(half), 1e-6) for _ in range(7))


@pytest.mark.parametrize(("name", "unit"), SHAPES, ids=[name for name, _ in SHAPES])
def test_the_units_a_shape_spends_grow_no_faster_than_the_text(name: str, unit: str) -> None:
    half, whole = filled(unit, limits.CONTENT.max // 2), filled(unit, limits.CONTENT.max)

    assert _units(whole) <= 2 * _units(half) + 2


@pytest.mark.parametrize(("name", "unit"), SHAPES, ids=[name for name, _ in SHAPES])
def test_the_cpu_a_shape_costs_grows_no_faster_than_the_text(name: str, unit: str) -> None:
    half, whole = filled(unit, limits.CONTENT.max // 2), filled(unit, limits.CONTENT.max)
    _cpu(whole)  # warm: the look-alike table loads on the first text that needs it

    ratio = _doubling_ratio(half, whole)

    assert ratio < LINEAR, f"{name}: doubling the text cost {ratio:.1f}x"


@pytest.mark.parametrize("unit", ["pwd=`", "pwd=``"], ids=["one backtick", "two backticks"])
def test_issue_27s_save_runs_the_budget_out_and_is_refused_naming_the_field(unit: str) -> None:
    save = filling(unit, unit)

    with pytest.raises(ScreenBudgetExceededError) as raised:
        find_secrets(SCREEN, content=save.content, snippets=save.snippets)

    (problem,) = raised.value.problems
    assert problem.path.startswith(("content", "contexts."))
    assert raised.value.budget == limits.SCREEN_BUDGET


def test_a_shared_budget_stops_the_screen_when_it_is_spent() -> None:
    budget = ScreenBudget(10)

    with pytest.raises(ScreenBudgetExceededError):
        SCREEN.find(filled("pwd=a ", 2_000), budget)

    assert budget.spent == 11


def test_ordinary_memories_spend_a_small_part_of_the_budget() -> None:
    texts = [case.text for case in harmless()]
    budget = ScreenBudget()

    for text in texts:
        SCREEN.find(text, budget)

    assert budget.spent < limits.SCREEN_BUDGET // 20


def test_a_stored_memory_over_the_budget_is_reported_as_unscreened() -> None:
    from benchmarks.adversarial import _memory

    found = secrets_in_memory(SCREEN, _memory(filling("pwd=`", "pwd=`")))

    assert [problem.kind for problem in found] == [SCREEN_BUDGET_EXCEEDED]


def test_the_entropy_is_detect_secrets_own() -> None:
    rng = random.Random(27)
    alphabet = string.ascii_letters + string.digits + "+/=_-"
    library = Base64HighEntropyString()
    for _ in range(500):
        token = "".join(rng.choices(alphabet, k=rng.randint(20, 60)))
        assert shannon_entropy(token) == pytest.approx(library.calculate_shannon_entropy(token))
    assert looks_random("".join(rng.choices(string.ascii_letters + string.digits, k=40)))
