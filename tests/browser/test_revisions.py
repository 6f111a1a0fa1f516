"""Memories that change, in the panel: edit in place, see the history, restore an earlier version, see and restore
replaced memories; by keyboard, axe-clean in every state; a double submit saves once; an edit that lost a race
says so and shows the newer text instead of overwriting it."""

from __future__ import annotations

import time

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from memorybank_core import Door, EditRequest, SaveRequest, TokenPrincipal
from tests.browser.conftest import Panel, Person, World

pytestmark = pytest.mark.browser


def _writer(person: Person) -> TokenPrincipal:
    return TokenPrincipal(
        user_id=person.user_id,
        organization_id=person.principal.organization_id,
        scopes=frozenset({"mcp:read", "mcp:write"}),
    )


def _still(panel: Panel) -> None:
    """Wait out a card's 180 ms rise, so the picture shows it as it stays."""
    time.sleep(0.3)
    panel.settled()


def _revision(world: World, person: Person, memory_id: str) -> int:
    return world.bank.revisions(_writer(person), memory_id=memory_id).memory.revision


def _select_all_and_type(panel: Panel, text: str) -> None:
    ActionChains(panel.driver).key_down(Keys.CONTROL).send_keys("a").key_up(Keys.CONTROL).send_keys(text).perform()


def test_a_memory_is_edited_in_place_by_keyboard_and_its_history_shows_both_versions(
    panel: Panel, world: World
) -> None:
    person = world.person([{"content": "I live in Lisbon", "tags": ["home"]}])
    panel.sign_in(person)
    (memory_id,) = world.memory_ids(person)

    edit = panel.button("Edit memory: I live in Lisbon")
    panel.driver.execute_script("arguments[0].focus()", edit)
    ActionChains(panel.driver).send_keys(Keys.ENTER).perform()
    text = panel.until(lambda: panel.active() if panel.active().tag_name == "textarea" else None)
    assert text.accessible_name == "Memory"
    _still(panel)
    panel.state("edit-in-place")
    tags = panel.driver.find_element(By.CSS_SELECTOR, ".editor input[type=text]")
    assert tags.get_attribute("value") == "home"
    _select_all_and_type(panel, "I live in Porto")
    ActionChains(panel.driver).send_keys(Keys.TAB).perform()
    assert panel.active() == tags
    _select_all_and_type(panel, "home, city")
    ActionChains(panel.driver).send_keys(Keys.ENTER).perform()

    panel.until(lambda: panel.shown_texts() == ["I live in Porto"])
    panel.until(lambda: panel.announced() == "Saved.")
    assert panel.active().get_attribute("data-memory-id") == memory_id
    saved = world.bank.revisions(_writer(person), memory_id=memory_id)
    assert (saved.memory.content, saved.memory.tags, saved.memory.revision) == ("I live in Porto", ("home", "city"), 2)
    assert saved.revisions[0].written_by is not None
    assert saved.revisions[0].written_by.door is Door.PANEL

    panel.press("button", "History of memory: I live in Porto")
    panel.heading("Version 1")
    assert panel.heading("Version 2 (now)")
    dialog = panel.driver.find_element(By.ID, "history")
    assert "changed in this panel" in dialog.text
    _still(panel)
    panel.state("history")
    panel.press("button", "Close")


def test_an_earlier_version_is_restored_as_a_new_version(panel: Panel, world: World) -> None:
    person = world.person(["The standup is at nine"])
    (memory_id,) = world.memory_ids(person)
    world.bank.edit(
        _writer(person), memory_id=memory_id, request=EditRequest.parse({"content": "The standup is at ten"})
    )
    panel.sign_in(person)

    panel.press("button", "History of memory: The standup is at ten")
    panel.press("button", "Restore version 1")

    panel.until(lambda: panel.shown_texts() == ["The standup is at nine"])
    panel.until(lambda: panel.announced() == "Restored version 1; it is now version 3.")
    history = world.bank.revisions(_writer(person), memory_id=memory_id).revisions
    assert [(m.revision, m.content) for m in history] == [
        (3, "The standup is at nine"),
        (2, "The standup is at ten"),
        (1, "The standup is at nine"),
    ]
    _still(panel)
    panel.state("history-restored")


def test_a_double_submit_saves_once(panel: Panel, world: World) -> None:
    person = world.person(["Prefers tea"])
    panel.sign_in(person)
    (memory_id,) = world.memory_ids(person)
    world.store.list_delay = 0.0

    panel.press("button", "Edit memory: Prefers tea")
    text = panel.driver.find_element(By.CSS_SELECTOR, ".editor textarea")
    text.clear()
    text.send_keys("Prefers green tea")
    assert text.get_attribute("value") == "Prefers green tea"
    save = panel.button("Save")
    # Two submits in one task: the second finds the first still running.
    panel.driver.execute_script("arguments[0].click(); arguments[0].click();", save)

    panel.until(lambda: panel.shown_texts() == ["Prefers green tea"])
    time.sleep(0.5)  # a second PATCH, had one gone, would now have come back as a conflict
    assert _revision(world, person, memory_id) == 2
    assert panel.toast_texts() == []
    assert not panel.driver.find_elements(By.CSS_SELECTOR, ".card-notice")


def test_an_edit_that_lost_a_race_says_so_and_shows_the_newer_text(panel: Panel, world: World) -> None:
    person = world.person(["The office is in building A"])
    panel.sign_in(person)
    (memory_id,) = world.memory_ids(person)

    panel.press("button", "Edit memory: The office is in building A")
    # Meanwhile an agent changes it.
    world.bank.edit(
        _writer(person), memory_id=memory_id, request=EditRequest.parse({"content": "The office is in building B"})
    )
    text = panel.driver.find_element(By.CSS_SELECTOR, ".editor textarea")
    text.clear()
    text.send_keys("The office is in building C")
    panel.press("button", "Save")

    notice = panel.until(lambda: panel.driver.find_elements(By.CSS_SELECTOR, ".card-notice"))[0]
    assert notice.get_attribute("role") == "alert"
    assert "Not saved: this memory was changed somewhere else" in str(notice.get_attribute("textContent"))
    assert panel.shown_texts() == ["The office is in building B"]
    assert panel.active() == notice
    assert world.bank.revisions(_writer(person), memory_id=memory_id).memory.content == "The office is in building B"
    _still(panel)
    panel.state("edit-lost-race")


def test_replaced_memories_are_shown_on_request_and_restored(panel: Panel, world: World) -> None:
    person = world.person(["I work at Initech"])
    (old,) = world.memory_ids(person)
    world.bank.save(_writer(person), SaveRequest.parse({"content": "I work at Hooli now", "supersedes": [old]}))
    panel.sign_in(person)
    assert panel.shown_texts() == ["I work at Hooli now"]

    toggle = panel.button("Show replaced memories")
    panel.click(toggle)
    panel.until(lambda: panel.shown_texts() == ["I work at Hooli now", "I work at Initech"])
    panel.settled()
    assert toggle.get_attribute("aria-pressed") == "true"
    assert "Replaced by a newer memory" in panel.driver.find_element(By.CSS_SELECTOR, "article.is-retired").text
    _still(panel)
    panel.state("replaced-shown")

    panel.press("button", "Restore memory: I work at Initech")
    panel.until(lambda: panel.announced() == "Restored “I work at Initech” to your memories.")
    assert not panel.driver.find_elements(By.CSS_SELECTOR, "article.is-retired")
    panel.click(toggle)
    panel.until(lambda: sorted(panel.shown_texts()) == ["I work at Hooli now", "I work at Initech"])
    _still(panel)
    panel.state("replaced-restored")


def test_a_read_only_session_sees_history_but_no_edit_or_restore(panel: Panel, world: World) -> None:
    person = world.person(["Reads only"], scopes=["mcp:read"])
    panel.open()
    panel.get("textbox", "API token").send_keys(person.token)
    panel.button("Sign in").click()
    panel.heading("Your memories")
    panel.settled()

    assert not panel.all("button", "Edit memory: Reads only")
    panel.press("button", "History of memory: Reads only")
    panel.heading("Version 1 (now)")
    assert not panel.all("button", "Restore version 1")
