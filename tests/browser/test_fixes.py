"""What a person tripped over in the panel (issue 22, "Broken" 2 to 8), each tried as they tried it."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from memorybank_core import Source, TokenPrincipal
from memorybank_core.bodies import JsonValue
from tests.browser.conftest import PHONE, Panel, World

pytestmark = pytest.mark.browser

AFTER_THE_WINDOW = 7.0
NARROWEST = (320, 700)


def _style(panel: Panel, element: object, prop: str, pseudo: str | None = None) -> str:
    value: str = panel.driver.execute_script(
        "return getComputedStyle(arguments[0], arguments[2]).getPropertyValue(arguments[1])", element, prop, pseudo
    )
    return value


def _rect(panel: Panel, element: object) -> dict[str, float]:
    rect: dict[str, float] = panel.driver.execute_script(
        "return arguments[0].getBoundingClientRect().toJSON()", element
    )
    return rect


def _uncovered(panel: Panel, element: object) -> bool:
    """Whether a person sees `element` at its centre (nothing drawn over it)."""
    covered: bool = panel.driver.execute_script(
        "const r = arguments[0].getBoundingClientRect();"
        "const top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);"
        "return arguments[0].contains(top);",
        element,
    )
    return covered


def test_a_double_click_on_one_trash_icon_deletes_one_memory(panel: Panel, world: World) -> None:
    person = world.person(["Grows tomatoes", "Bakes sourdough", "Climbs on Tuesdays"])
    panel.sign_in(person)
    climbs, sourdough, tomatoes = world.memory_ids(person)

    ActionChains(panel.driver).double_click(panel.button("Delete memory: Climbs on Tuesdays")).perform()

    panel.until(lambda: panel.shown_texts() == ["Bakes sourdough", "Grows tomatoes"])
    ActionChains(panel.driver).move_to_element(panel.heading("Your memories")).perform()
    panel.until(lambda: world.memory_ids(person) == [sourdough, tomatoes], timeout=AFTER_THE_WINDOW)
    time.sleep(1)
    assert world.memory_ids(person) == [sourdough, tomatoes]
    assert climbs not in world.memory_ids(person)


def test_when_the_session_ends_mid_use_the_sign_in_page_opens_at_its_top_with_focus_and_says_so_aloud(
    panel: Panel, world: World
) -> None:
    person = world.person([f"Memory number {n:02d}" for n in range(30)])
    panel.sign_in(person)
    more = panel.button("Load more memories")
    panel.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", more)
    assert panel.driver.execute_script("return window.scrollY") > 500

    world.sessions.revoke_user(person.user_id)
    more.click()

    title = panel.heading("Sign in to your memory bank")
    assert panel.driver.execute_script("return window.scrollY") == 0
    assert panel.active() == title
    problem = panel.driver.find_element(By.ID, "sign-in-problem")
    assert problem.get_attribute("role") == "alert"
    assert problem.text == "Your session has ended. Sign in again to see your memories."
    panel.state("session-ended")


def test_in_forced_colours_the_device_switch_shows_its_knob_on_and_off(panel: Panel, world: World) -> None:
    panel.sign_in(world.person(["Likes cold showers"]))
    panel.driver.execute_cdp_cmd(
        "Emulation.setEmulatedMedia", {"features": [{"name": "forced-colors", "value": "active"}]}
    )
    try:
        (switch,) = panel.all("switch")
        thumb = switch.find_element(By.CSS_SELECTOR, ".switch-thumb")
        looks = []
        for _ in range(2):
            knob, track = _style(panel, thumb, "background-color"), _style(panel, switch, "background-color")
            assert knob != track, f"the knob ({knob}) vanishes into the track ({track})"
            looks.append((knob, track, _rect(panel, thumb)["x"]))
            panel.click(switch)
        assert looks[0] != looks[1]  # on and off look different
        panel.state("switch-forced-colours")
    finally:
        panel.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})


def test_a_rejected_token_is_said_in_the_error_red(panel: Panel, world: World) -> None:
    panel.open()
    panel.get("textbox", "API token").send_keys("mbk_not-a-real-token")
    panel.button("Sign in").click()
    error = panel.driver.find_element(By.ID, "token-error")
    panel.until(lambda: error.is_displayed())
    assert _style(panel, error, "color") == "rgb(180, 35, 24)"  # --danger, not the grey of the hints


def test_back_online_never_shows_beside_a_banner_that_says_offline(panel: Panel, world: World) -> None:
    panel.sign_in(world.person(["Walks the dog at seven"]))
    banner = panel.driver.find_element(By.ID, "connection-banner")

    panel.set_offline(True)
    panel.until(banner.is_displayed)
    panel.set_offline(False)
    panel.until(lambda: "Back online." in panel.toast_texts())
    panel.set_offline(True)
    panel.until(banner.is_displayed)

    panel.until(lambda: "Back online." not in panel.toast_texts(), timeout=1)


def test_a_right_to_left_snippet_has_its_quote_bar_on_the_right(panel: Panel, world: World) -> None:
    panel.sign_in(
        world.person([{"content": "Speaks Hebrew at home", "contexts": [{"snippet": "אני מדבר עברית בבית"}]}])
    )
    panel.press("button", "1 context")
    snippet = panel.driver.find_element(By.CSS_SELECTOR, ".snippet")
    assert _style(panel, snippet, "border-right-width") == "3px"
    assert _style(panel, snippet, "border-left-width") == "0px"


def test_at_320_px_the_separator_dot_never_ends_a_line(panel: Panel, world: World) -> None:
    person = world.person()
    writer = TokenPrincipal(
        user_id=person.user_id, organization_id=person.principal.organization_id, scopes=frozenset({"mcp:write"})
    )
    world.bank.save(writer, JsonValue({"content": "Saved through the dialog"}), source=Source.MODAL)
    panel.set_size(NARROWEST)
    panel.sign_in(person)

    dot = panel.driver.find_element(By.CSS_SELECTOR, ".meta-sep")
    words = panel.driver.execute_script(
        "const range = document.createRange();"
        "range.selectNodeContents(arguments[0].nextSibling); return range.getClientRects()[0].toJSON();",
        dot,
    )
    assert abs(_rect(panel, dot)["top"] - words["top"]) < 4, "the · sits on another line than the words after it"
    assert panel.horizontal_overflow() <= 0
    panel.state("list-320")


def test_on_a_phone_the_delete_column_stays_narrow(panel: Panel, world: World) -> None:
    panel.set_size(PHONE)
    panel.sign_in(world.person(["Takes the ferry to work"]))
    card = panel.memories()[0]
    button = panel.button("Delete memory: Takes the ferry to work")
    card_box, button_box = _rect(panel, card), _rect(panel, button)
    column = card_box["right"] - button_box["left"]
    assert column <= 0.12 * card_box["width"], f"the delete column takes {column / card_box['width']:.0%}"
    assert button_box["width"] >= 24  # still a comfortable target
    assert button_box["height"] >= 44


def test_the_exact_time_opens_below_the_time_not_over_the_memory(panel: Panel, world: World) -> None:
    panel.sign_in(world.person(["Prefers window seats"]))
    time_element = panel.memories()[0].find_element(By.CSS_SELECTOR, "time")
    ActionChains(panel.driver).move_to_element(time_element).perform()
    top = float(_style(panel, time_element, "top", "::after").removesuffix("px"))
    assert top >= _rect(panel, time_element)["height"]


def test_where_a_context_came_from_is_said_in_words_and_only_ids_look_like_ids(panel: Panel, world: World) -> None:
    panel.sign_in(
        world.person(
            [
                {
                    "content": "Keeps receipts",
                    "contexts": [{"snippet": "keep it", "origin": "active_conversation", "conversation_id": "conv_9"}],
                }
            ]
        )
    )
    panel.press("button", "1 context")
    facts = {
        dt.text: dd
        for dt, dd in zip(
            panel.driver.find_elements(By.CSS_SELECTOR, ".context-facts dt"),
            panel.driver.find_elements(By.CSS_SELECTOR, ".context-facts dd"),
            strict=True,
        )
    }
    assert facts["From"].text == "The chat it was saved in"
    assert "This conversation" not in panel.driver.find_element(By.ID, "memory-list").text
    assert "monospace" not in _style(panel, facts["From"], "font-family")
    assert "monospace" in _style(panel, facts["Conversation"], "font-family")


def test_the_token_heading_does_not_repeat_the_fields_label(panel: Panel, world: World) -> None:
    panel.open()
    field = panel.get("textbox", "API token")
    heading = field.find_element(By.XPATH, "preceding::h2[1]")
    assert "API token" not in heading.text
    assert heading.text == "With a token from the command line"


def test_after_the_last_delete_nothing_covers_the_copy_prompt(panel: Panel, world: World) -> None:
    panel.set_size(PHONE)
    panel.sign_in(world.person(["Always carries an umbrella"]))
    panel.press("button", "Delete memory: Always carries an umbrella")
    panel.heading("Your memory bank is empty")
    copy = panel.driver.find_element(By.CSS_SELECTOR, "#empty-state button[data-copy-prompt]")
    for where in ("end", "center"):
        panel.driver.execute_script(f"arguments[0].scrollIntoView({{block: '{where}'}})", copy)
        assert _uncovered(panel, copy), f"something covers Copy prompt (scrolled to {where})"
    panel.state("empty-after-delete-phone")


def test_try_again_stays_usable_while_the_banner_says_it_retries_by_itself(panel: Panel, world: World) -> None:
    person = world.person(["Plays the cello"])
    world.store.fail_list = True
    panel.sign_in(person)
    panel.heading("Couldn’t load your memories")
    world.server.stop()
    try:
        panel.press("button", "Try again")
        banner = panel.driver.find_element(By.ID, "connection-banner")
        panel.until(lambda: "Retrying automatically" in banner.text)
        assert panel.button("Try again").is_enabled()
    finally:
        world.server.start()


def test_relative_times_refresh_while_the_page_stays_open(panel: Panel, world: World) -> None:
    panel.sign_in(world.person(["Naps after lunch"]))
    time_element = panel.memories()[0].find_element(By.CSS_SELECTOR, "time")
    assert time_element.text.startswith("just now")
    earlier = (datetime.now(UTC) - timedelta(hours=2)).isoformat()
    panel.driver.execute_script("arguments[0].setAttribute('datetime', arguments[1])", time_element, earlier)

    panel.driver.execute_script("document.dispatchEvent(new Event('visibilitychange'))")  # back to the tab

    panel.until(lambda: time_element.text.startswith("2 hours ago"))


def test_a_sign_in_link_opened_in_a_tab_that_shows_the_panel_signs_in_its_person(panel: Panel, world: World) -> None:
    first = world.person(["First person’s memory"])
    second = world.person(["Second person’s memory"])
    panel.sign_in(first)
    link = world.sessions.issue_link(user_id=second.user_id, org_id=second.principal.organization_id)

    panel.driver.execute_script("location.hash = arguments[0]", f"link={link.code}")

    panel.until(lambda: panel.shown_texts() == ["Second person’s memory"])
    assert "#link" not in panel.driver.current_url


def test_the_device_switch_says_it_only_changes_this_browser(panel: Panel, world: World) -> None:
    panel.sign_in(world.person(["Hums while coding"]))
    switch = panel.get("switch", "Show memories on this device")
    hint = panel.driver.find_element(By.ID, switch.get_attribute("aria-describedby") or "")
    assert hint.is_displayed()  # said before it is switched off, not only after
    assert hint.text == "Only this browser. Your agents still remember."
