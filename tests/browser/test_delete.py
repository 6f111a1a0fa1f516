"""Delete is optimistic with an undo window: nothing is sent until the window closes, and failure restores."""

from __future__ import annotations

import time

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from tests.browser.conftest import Panel, World

pytestmark = pytest.mark.browser

#: The undo window is about 5 s; a moment more for the DELETE to land.
AFTER_THE_WINDOW = 7.0


def test_undo_brings_the_memory_back_and_nothing_is_deleted_on_the_server(panel: Panel, world: World) -> None:
    person = world.person(["Drinks oat milk", "Runs on Sundays"])
    panel.sign_in(person)
    before = world.memory_ids(person)

    panel.press("button", "Delete memory: Drinks oat milk")
    panel.until(lambda: panel.shown_texts() == ["Runs on Sundays"])
    panel.until(lambda: panel.announced().startswith("Deleted “Drinks oat milk”."))
    # Resting the pointer on the deleted line holds the window open while the page is recorded.
    ActionChains(panel.driver).move_to_element(panel.driver.find_element(By.CSS_SELECTOR, ".deleted")).perform()
    panel.state("undo-held-by-pointer")

    panel.press("button", "Undo delete: Drinks oat milk")
    panel.until(lambda: panel.shown_texts() == ["Runs on Sundays", "Drinks oat milk"])
    assert panel.active().get_attribute("data-memory-id") == before[1]
    time.sleep(AFTER_THE_WINDOW)
    assert world.memory_ids(person) == before


def test_when_the_undo_window_closes_the_memory_is_deleted_on_the_server(panel: Panel, world: World) -> None:
    person = world.person(["Keeps a paper notebook", "Prefers trains to planes"])
    panel.sign_in(person)
    keep, remove = world.memory_ids(person)

    panel.press("button", "Delete memory: Keeps a paper notebook")
    time.sleep(3)
    assert world.memory_ids(person) == [keep, remove]  # still inside the window: nothing sent

    panel.until(lambda: world.memory_ids(person) == [keep], timeout=AFTER_THE_WINDOW)
    assert panel.shown_ids() == [keep]


def test_a_failed_delete_brings_the_memory_back_with_an_error_toast(panel: Panel, world: World) -> None:
    person = world.person(["Speaks Portuguese"])
    panel.sign_in(person)
    world.store.fail_delete = True

    panel.press("button", "Delete memory: Speaks Portuguese")
    panel.heading("Your memory bank is empty")
    panel.until(lambda: panel.shown_texts() == ["Speaks Portuguese"], timeout=AFTER_THE_WINDOW)

    errors = [t for t in panel.toast_texts() if t.startswith("Couldn’t delete")]
    assert errors == [
        "Couldn’t delete the memory, so it is back in your list. The memory bank’s storage is unavailable right now."
    ]
    panel.state("delete-failed")
    assert world.memory_ids(person) != []


def test_after_a_removal_focus_moves_to_the_next_memory_else_the_previous_else_the_empty_heading(
    panel: Panel, world: World
) -> None:
    person = world.person(["third", "second", "first"])  # shown newest first: first, second, third
    panel.sign_in(person)
    first, _second, third = world.memory_ids(person)

    panel.press("button", "Delete memory: second")
    assert panel.active().get_attribute("data-memory-id") == third  # the next one

    panel.press("button", "Delete memory: third")
    assert panel.active().get_attribute("data-memory-id") == first  # no next: the previous one

    panel.press("button", "Delete memory: first")
    assert panel.active().accessible_name == "Your memory bank is empty"  # none left: the empty state's heading
    panel.state("after-last-removal")


def test_leaving_the_page_sends_the_pending_delete_at_once(panel: Panel, world: World) -> None:
    person = world.person(["Has a cat named Miso", "Plays chess"])
    panel.sign_in(person)
    keep, remove = world.memory_ids(person)

    panel.press("button", "Delete memory: Has a cat named Miso")
    panel.driver.get("about:blank")  # pagehide: the keepalive DELETE goes out now

    panel.until(lambda: world.memory_ids(person) == [keep], timeout=3)
    assert remove not in world.memory_ids(person)
