"""Keyboard alone, 360 px and desktop, light and dark; the per-device memory switch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.browser.conftest import DESKTOP, PHONE, Panel, World

pytestmark = pytest.mark.browser

SOME_MEMORIES: list[Mapping[str, Any]] = [
    {
        "content": "Prefers concise answers with code first",
        "tags": ["style"],
        "contexts": [{"snippet": "just show me the code", "origin": "active_conversation"}],
    },
    {"content": "Works in the Europe/Lisbon time zone", "tags": ["schedule", "location"]},
    {"content": "The staging database is read-only on weekends"},
]


def _tab(panel: Panel, shift: bool = False) -> str:
    keys = ActionChains(panel.driver)
    (keys.key_down(Keys.SHIFT).send_keys(Keys.TAB).key_up(Keys.SHIFT) if shift else keys.send_keys(Keys.TAB)).perform()
    return panel.active().accessible_name


def _focus_ring(panel: Panel) -> str:
    style: str = panel.driver.execute_script(
        "const s = getComputedStyle(document.activeElement); return s.outlineStyle + ' ' + s.outlineWidth"
    )
    return style


def test_a_keyboard_alone_reaches_every_control_sees_focus_and_deletes_and_undoes(panel: Panel, world: World) -> None:
    person = world.person(SOME_MEMORIES)
    panel.sign_in(person)
    newest, middle, oldest = world.memory_ids(person)
    panel.driver.refresh()  # start from the top of a freshly loaded page, as a keyboard user would
    panel.settled()

    names = [_tab(panel) for _ in range(18)]

    assert names[:8] == [
        "Skip to content",
        "Sign out",
        "Show memories on this device",
        "Copy prompt",
        "Download my memories",
        "Delete all…",
        "Search your memories",
        "Search",
    ]
    assert [n if not n.startswith("just now") else "time" for n in names[8:]] == [
        "Show replaced memories",
        "time",
        "Edit memory: The staging database is read-only on…",
        "History of memory: The staging database is read-only on…",
        "Delete memory: The staging database is read-only on…",
        "Show memories tagged schedule",
        "Show memories tagged location",
        "time",
        "Edit memory: Works in the Europe/Lisbon time zone",
        "History of memory: Works in the Europe/Lisbon time zone",
    ]

    # On a memory's time, the exact time shows for the keyboard too.
    while not panel.active().accessible_name.startswith("just now"):
        _tab(panel)
    shown = panel.driver.execute_script("return getComputedStyle(document.activeElement, '::after').content")
    assert panel.active().get_attribute("data-exact") in shown

    # Open the context with Enter; every control shows a focus ring.
    while panel.active().accessible_name != "1 context":
        _tab(panel)
    assert _focus_ring(panel).startswith("solid")
    panel.active().send_keys(Keys.ENTER)
    assert panel.driver.find_element(By.CSS_SELECTOR, ".snippet").is_displayed()

    # Delete with Enter: focus moves to the next memory (here the previous: it was the last); Ctrl+Z undoes.
    while not panel.active().accessible_name.startswith("Delete memory: Prefers concise"):
        _tab(panel)
    assert _focus_ring(panel).startswith("solid")
    panel.active().send_keys(Keys.ENTER)
    panel.until(lambda: len(panel.memories()) == 2)
    assert panel.active().get_attribute("data-memory-id") == middle
    assert _focus_ring(panel).startswith("solid")
    ActionChains(panel.driver).key_down(Keys.CONTROL).send_keys("z").key_up(Keys.CONTROL).perform()
    panel.until(lambda: len(panel.memories()) == 3)
    assert panel.active().get_attribute("data-memory-id") == oldest
    assert panel.shown_ids() == [newest, middle, oldest]

    # The switch toggles with Space.
    while panel.active().accessible_name != "Show memories on this device":
        _tab(panel, shift=True)
    panel.active().send_keys(Keys.SPACE)
    assert panel.active().get_attribute("aria-checked") == "false"
    panel.active().send_keys(Keys.SPACE)
    assert panel.active().get_attribute("aria-checked") == "true"


def test_the_memory_switch_hides_the_memory_features_on_this_device_and_survives_a_reload(
    panel: Panel, world: World
) -> None:
    panel.sign_in(world.person(["Likes jazz"]))
    switch = panel.get("switch", "Show memories on this device")
    assert switch.get_attribute("aria-checked") == "true"
    assert switch.aria_role == "switch"

    panel.click(switch)

    assert switch.get_attribute("aria-checked") == "false"
    panel.heading("Memories are hidden on this device")
    assert panel.all("button", "Copy prompt") == []
    assert not panel.driver.find_element(By.ID, "memory-list").is_displayed()
    panel.state("memory-features-off")

    panel.driver.refresh()
    panel.heading("Memories are hidden on this device")
    assert panel.get("switch", "Show memories on this device").get_attribute("aria-checked") == "false"
    assert panel.driver.execute_script("return document.cookie") == ""  # kept in localStorage, never a cookie
    assert panel.driver.execute_script("return localStorage.getItem('memorybank.featureFlags.memory')") == "off"

    panel.press("switch", "Show memories on this device")
    panel.settled()
    assert panel.shown_texts() == ["Likes jazz"]


@pytest.mark.parametrize(("size", "dark"), [(PHONE, False), (PHONE, True), (DESKTOP, False), (DESKTOP, True)])
def test_the_panel_fits_a_phone_and_a_desktop_in_light_and_dark(
    panel: Panel, world: World, size: tuple[int, int], dark: bool
) -> None:
    panel.set_size(size)
    panel.set_dark(dark)
    panel.sign_in(world.person(SOME_MEMORIES))
    name = f"list-{'phone' if size == PHONE else 'desktop'}-{'dark' if dark else 'light'}"

    assert panel.horizontal_overflow() <= 0
    assert len(panel.memories()) == 3
    background = panel.driver.execute_script("return getComputedStyle(document.body).backgroundColor")
    assert (background == "rgb(18, 18, 18)") is dark
    panel.state(name)

    panel.press("button", "Delete memory: The staging database is read-only on…")
    panel.until(lambda: len(panel.memories()) == 2)
    ActionChains(panel.driver).move_to_element(panel.driver.find_element(By.CSS_SELECTOR, ".deleted")).perform()
    panel.state(f"undo-in-place-{'phone' if size == PHONE else 'desktop'}-{'dark' if dark else 'light'}")
    panel.press("button", "Undo delete: The staging database is read-only on…")
