"""Undo for everyone: the deleted memory's place names it, offers Undo one key press away, and shows Ctrl+Z."""

from __future__ import annotations

import time

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.browser.conftest import Panel, World

pytestmark = pytest.mark.browser

#: The undo window is about 5 s; a moment more for the DELETE to land.
AFTER_THE_WINDOW = 7.0


def _keys(panel: Panel, *keys: str, shift: bool = False) -> None:
    chain = ActionChains(panel.driver)
    if shift:
        chain.key_down(Keys.SHIFT)
    for key in keys:
        chain.send_keys(key)
    if shift:
        chain.key_up(Keys.SHIFT)
    chain.perform()


def _delete_by_keyboard(panel: Panel, name: str) -> None:
    button = panel.button(name)
    panel.driver.execute_script("arguments[0].focus()", button)
    _keys(panel, Keys.ENTER)


def test_with_20_memories_undo_is_one_key_press_from_where_focus_lands_and_names_the_memory(
    panel: Panel, world: World
) -> None:
    person = world.person([f"Memory number {n:02d}" for n in range(20)])
    panel.sign_in(person)
    before = world.memory_ids(person)

    _delete_by_keyboard(panel, "Delete memory: Memory number 15")
    assert panel.active().get_attribute("data-memory-id") == before[5]  # the next memory, as before

    _keys(panel, Keys.TAB, shift=True)  # one key press
    undo = panel.active()
    assert undo.accessible_name == "Undo delete: Memory number 15"
    assert "Control+Z" in (undo.get_attribute("aria-keyshortcuts") or "")
    place = panel.driver.find_element(By.CSS_SELECTOR, ".deleted")
    assert place.text.replace("\n", " ") == "Deleted “Memory number 15” Undo Ctrl+Z"  # the shortcut is on screen
    # Said on the next animation frame (the region is emptied first so the same words re-announce).
    said = "Deleted “Memory number 15”. To undo, press Ctrl+Z or the Undo button in its place."
    panel.until(lambda: panel.announced() == said)
    panel.state("undo-in-place")

    _keys(panel, Keys.ENTER)
    panel.until(lambda: len(panel.memories()) == 20)
    assert panel.active().get_attribute("data-memory-id") == before[4]
    assert panel.shown_ids() == before
    panel.until(lambda: panel.announced() == "Restored “Memory number 15”.")
    time.sleep(AFTER_THE_WINDOW)
    assert world.memory_ids(person) == before


def test_the_undo_window_waits_while_undo_has_focus_and_runs_on_once_focus_leaves(panel: Panel, world: World) -> None:
    person = world.person(["Reads on the bus", "Collects stamps"])
    panel.sign_in(person)
    stamps, bus = world.memory_ids(person)

    _delete_by_keyboard(panel, "Delete memory: Collects stamps")
    _keys(panel, Keys.TAB, shift=True)
    assert panel.active().accessible_name == "Undo delete: Collects stamps"
    time.sleep(AFTER_THE_WINDOW)
    assert world.memory_ids(person) == [stamps, bus]  # waited: focus is on Undo

    _keys(panel, Keys.TAB)  # moving on lets the window close
    panel.until(lambda: world.memory_ids(person) == [bus], timeout=AFTER_THE_WINDOW)
    panel.until(lambda: panel.all("button", "Undo delete: Collects stamps") == [])
    assert panel.shown_ids() == [bus]


def test_repeated_deletes_each_keep_a_named_undo_in_their_own_place_and_ctrl_z_takes_the_latest(
    panel: Panel, world: World
) -> None:
    person = world.person(["one", "two", "three", "four"])  # shown: four, three, two, one
    panel.sign_in(person)
    four, three, two, one = world.memory_ids(person)

    for name in ("four", "two", "one"):
        panel.press("button", f"Delete memory: {name}")

    places = panel.driver.find_elements(By.CSS_SELECTOR, "#memory-list .deleted")
    assert [p.get_attribute("data-deleted-id") for p in places] == [four, two, one]  # where each card was
    assert [b.accessible_name for b in panel.all("button", "Undo delete:", exact=False)] == [
        "Undo delete: four",
        "Undo delete: two",
        "Undo delete: one",
    ]
    assert panel.toast_texts() == []  # nothing piles up over the list
    ActionChains(panel.driver).move_to_element(places[-1]).perform()  # holds the latest open while recorded
    panel.state("undo-several")

    _keys(panel, Keys.ESCAPE)
    ActionChains(panel.driver).key_down(Keys.CONTROL).send_keys("z").key_up(Keys.CONTROL).perform()
    panel.until(lambda: panel.shown_texts() == ["three", "one"])
    panel.until(lambda: world.memory_ids(person) == [three, one], timeout=AFTER_THE_WINDOW)


def test_the_undo_window_waits_while_the_pointer_rests_on_the_deleted_place(panel: Panel, world: World) -> None:
    person = world.person(["Waters the plants on Mondays"])
    panel.sign_in(person)
    before = world.memory_ids(person)

    panel.press("button", "Delete memory: Waters the plants on Mondays")
    ActionChains(panel.driver).move_to_element(panel.driver.find_element(By.CSS_SELECTOR, ".deleted")).perform()
    time.sleep(AFTER_THE_WINDOW)
    assert world.memory_ids(person) == before

    ActionChains(panel.driver).move_to_element(panel.heading("Your memories")).perform()
    panel.until(lambda: world.memory_ids(person) == [], timeout=AFTER_THE_WINDOW)
