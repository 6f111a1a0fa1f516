"""Signing in to the panel: a one-time link, a pasted API token, signing out."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

from tests.browser.conftest import Panel, World

pytestmark = pytest.mark.browser


def test_a_one_time_link_signs_me_in_to_my_memories_newest_first_and_then_stops_working(
    panel: Panel, world: World
) -> None:
    person = world.person(["I take my coffee black", "My team deploys on Thursdays"])
    link = world.sessions.issue_link(user_id=person.user_id, org_id=person.principal.organization_id)

    panel.open(f"/#link={link.code}")
    panel.heading("Your memories")
    panel.settled()

    assert panel.shown_texts() == ["My team deploys on Thursdays", "I take my coffee black"]
    assert panel.shown_ids() == world.memory_ids(person)
    assert "#link" not in panel.driver.current_url  # the code left the address bar
    assert panel.driver.execute_script("return document.cookie") == ""  # HttpOnly: no script can read it
    panel.state("list-after-link")

    panel.driver.delete_all_cookies()
    panel.open(f"/#link={link.code}")

    panel.heading("This sign-in link can’t be used")
    problem = panel.driver.find_element(By.ID, "sign-in-problem").text
    assert "already been used or it has expired" in problem
    assert "memorybank panel-link" in problem
    panel.get("textbox", "API token")  # and another way in is right there
    panel.state("link-used-or-expired")
    assert panel.csp_violations() == []


def test_pasting_an_api_token_signs_me_in_and_the_token_is_kept_nowhere_in_the_browser(
    panel: Panel, world: World
) -> None:
    person = world.person(["Prefers metric units"])
    panel.open()
    panel.heading("Sign in to your memory bank")
    panel.state("sign-in")

    field = panel.get("textbox", "API token")
    field.send_keys("mbk_not-a-real-token")
    panel.button("Sign in").click()
    panel.until(lambda: "not valid" in panel.driver.find_element(By.ID, "token-error").text)
    assert field.get_attribute("aria-invalid") == "true"
    panel.state("sign-in-token-rejected")

    field.clear()
    field.send_keys(person.token)
    panel.button("Sign in").click()
    panel.heading("Your memories")
    panel.settled()

    assert panel.shown_texts() == ["Prefers metric units"]
    stored = panel.driver.execute_script(
        "return JSON.stringify([document.cookie, {...localStorage}, {...sessionStorage}, location.href])"
    )
    assert person.token not in stored
    assert person.token.removeprefix("mbk_") not in stored


def test_signing_out_ends_the_session_for_good(panel: Panel, world: World) -> None:
    person = world.person(["Lives in Lisbon"])
    panel.sign_in(person)
    session_cookie = panel.driver.get_cookie("memorybank_session")
    assert session_cookie is not None
    assert session_cookie["httpOnly"] is True
    assert session_cookie["sameSite"] == "Strict"

    panel.button("Sign out").click()
    panel.heading("You’re signed out")
    assert panel.driver.get_cookie("memorybank_session") is None

    # Putting the old cookie back does not bring the session back: it ended on the server.
    panel.driver.add_cookie({"name": "memorybank_session", "value": session_cookie["value"], "path": "/"})
    panel.open()
    panel.heading("Sign in to your memory bank")


def test_a_read_only_token_opens_a_panel_without_delete_buttons(panel: Panel, world: World) -> None:
    person = world.person(["Allergic to peanuts"], scopes=["mcp:read"])
    panel.open()
    panel.get("textbox", "API token").send_keys(person.token)
    panel.button("Sign in").click()
    panel.heading("Your memories")
    panel.settled()

    assert panel.shown_texts() == ["Allergic to peanuts"]
    assert panel.all("button", "Delete memory:", exact=False) == []
    assert "read-only" in panel.driver.find_element(By.ID, "read-only-note").text
