"""The team's bank in the panel (issue 30, ADR 0038): the switch between "My memories" and "Team", shown only to a
session that may read the team's bank; who wrote each team memory; delete and edit only where allowed, with the
reason where not; "Share with my team" after a confirmation that says who will see it, saving once. By keyboard,
axe-clean in every state."""

from __future__ import annotations

import time
from collections.abc import Sequence

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from memorybank_core import TokenPrincipal
from memorybank_core.bodies import JsonValue
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id
from tests.browser.conftest import Panel, Person, World

pytestmark = pytest.mark.browser

MEMBER = ("mcp:read", "mcp:write", "org:read", "org:write")
ADMIN = ("mcp:read", "mcp:write", "org:admin")
LOCKED = "Only its author or an admin can delete or edit this."


def _member(world: World, org_id: str, scopes: Sequence[str] = MEMBER) -> Person:
    """A person of `org_id` with an API token holding `scopes` (org scopes are granted per token)."""
    user_id = new_id(USER_PREFIX)
    issued = world.tokens.issue(user_id=user_id, org_id=org_id, scopes=scopes)
    principal = TokenPrincipal(user_id=user_id, organization_id=org_id, scopes=issued.token.scopes)
    return Person(principal=principal, token=issued.secret)


def _save(world: World, person: Person, content: str, bank: str = "user") -> str:
    return world.bank.save(person.principal, JsonValue({"content": content, "bankScope": bank})).id


def _team_texts(world: World, person: Person) -> list[str]:
    return [m.content for m in world.bank.list(person.principal, limit=100, bank="org").memories]


def _sign_in_with_token(panel: Panel, person: Person) -> None:
    panel.open()
    panel.get("textbox", "API token").send_keys(person.token)
    panel.button("Sign in").click()
    panel.heading("Your memories")
    panel.settled()


def _press_by_keyboard(panel: Panel, role: str, name: str, *, exact: bool = True) -> None:
    element = panel.get(role, name, exact=exact)
    panel.driver.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].focus()", element)
    assert panel.active() == element
    ActionChains(panel.driver).send_keys(Keys.ENTER).perform()


def _pressed(panel: Panel, name: str) -> str | None:
    return panel.button(name).get_attribute("aria-pressed")


def _usage(panel: Panel) -> str:
    """The use line's text as shown ("" while hidden)."""
    return str(panel.driver.find_element(By.ID, "usage").text)


def _still() -> None:
    """Wait out a card's rise, so the picture shows it as it stays."""
    time.sleep(0.3)


def test_the_switch_shows_the_team_bank_with_authors_and_only_allowed_deletes(panel: Panel, world: World) -> None:
    org = new_id(ORGANIZATION_PREFIX)
    ana, ben = _member(world, org), _member(world, org)
    _save(world, ana, "Ana's dentist appointment is on Friday")
    _save(world, ben, "The staging database is db-2", "org")
    _save(world, ana, "Standup moved to 10:00", "org")

    _sign_in_with_token(panel, ana)
    assert panel.shown_texts() == ["Ana's dentist appointment is on Friday"]
    assert (_pressed(panel, "My memories"), _pressed(panel, "Team")) == ("true", "false")
    panel.until(lambda: _usage(panel).startswith("1 memory · ") and "of your quota used" in _usage(panel))
    _still()
    panel.state("team-switch")

    _press_by_keyboard(panel, "button", "Team")
    panel.heading("Team memories")
    panel.settled()
    assert (_pressed(panel, "My memories"), _pressed(panel, "Team")) == ("false", "true")
    assert panel.shown_texts() == ["Standup moved to 10:00", "The staging database is db-2"]
    assert "team memories" in panel.announced()
    # The use line follows the switch (the team's bank and quota); download and delete all stay one's own.
    panel.until(lambda: _usage(panel).startswith("2 memories · ") and "of the team’s quota used" in _usage(panel))
    assert panel.all("button", "Download my memories") == panel.all("button", "Delete all…") == []
    authors = [e.get_attribute("textContent") for e in panel.driver.find_elements(By.CSS_SELECTOR, ".meta-author")]
    assert authors == ["·Saved by you", f"·Saved by {ben.user_id}"]  # the "·" is hidden from screen readers
    # Ana wrote the standup memory: she may change it. Ben's is his: no delete, no edit, and the reason instead.
    panel.button("Delete memory: Standup moved to 10:00")
    panel.button("Edit memory: Standup moved to 10:00")
    assert panel.all("button", "Delete memory: The staging database is db-2") == []
    assert panel.all("button", "Edit memory: The staging database is db-2") == []
    locked = panel.driver.find_elements(By.CSS_SELECTOR, "#memory-list .memory-locked")
    assert [e.text for e in locked] == [LOCKED]
    assert (
        locked[0].find_element(By.XPATH, "ancestor::article").get_attribute("data-memory-id") == (panel.shown_ids()[1])
    )
    assert panel.all("button", "Share with my team:", exact=False) == []  # already the team's
    _still()
    panel.state("team-bank")

    # Search follows the switch: the team's bank, not Ana's own.
    find = panel.get("textbox", "Search team memories")
    find.send_keys("dentist", Keys.ENTER)
    panel.until(lambda: not panel.driver.find_element(By.ID, "find-empty").get_attribute("hidden"))
    assert panel.shown_texts() == []
    find.clear()
    find.send_keys("staging", Keys.ENTER)
    panel.until(lambda: panel.shown_texts() == ["The staging database is db-2"])
    panel.press("button", "Show all memories")
    panel.until(lambda: len(panel.shown_texts()) == 2)

    # A delete in the team's bank goes to the team's bank, even when the switch changes within its undo window.
    panel.press("button", "Delete memory: Standup moved to 10:00")
    panel.button("Undo delete: Standup moved to 10:00")
    _press_by_keyboard(panel, "button", "My memories")
    panel.heading("Your memories")
    panel.settled()
    assert panel.shown_texts() == ["Ana's dentist appointment is on Friday"]
    assert _team_texts(world, ben) == ["The staging database is db-2"]
    panel.until(lambda: _usage(panel).startswith("1 memory · ") and "of your quota used" in _usage(panel))
    panel.button("Download my memories")
    assert panel.get("textbox", "Search your memories")


def test_an_org_admin_may_delete_anyones_team_memory(panel: Panel, world: World) -> None:
    org = new_id(ORGANIZATION_PREFIX)
    boss, ben = _member(world, org, ADMIN), _member(world, org)
    _save(world, ben, "Deploys freeze on Fridays", "org")

    _sign_in_with_token(panel, boss)
    panel.press("button", "Team")
    panel.heading("Team memories")
    panel.settled()

    panel.button("Delete memory: Deploys freeze on Fridays")
    panel.button("Edit memory: Deploys freeze on Fridays")
    assert panel.driver.find_elements(By.CSS_SELECTOR, "#memory-list .memory-locked") == []


def test_a_session_without_org_scopes_has_no_switch(panel: Panel, world: World) -> None:
    # A sign-in link carries the memory scopes only; so does a token made without --scope.
    org = new_id(ORGANIZATION_PREFIX)
    ana = _member(world, org)
    _save(world, ana, "Shared team note", "org")
    plain = _member(world, org, ("mcp:read", "mcp:write"))
    _save(world, plain, "My own note")

    _sign_in_with_token(panel, plain)
    assert panel.shown_texts() == ["My own note"]
    assert panel.all("button", "Team") == []
    assert panel.all("button", "Share with my team:", exact=False) == []

    panel.sign_in(ana)  # her token may read the team's bank; a link is not her token
    assert panel.all("button", "Team") == []
    assert panel.all("button", "Share with my team:", exact=False) == []


def test_share_with_my_team_asks_who_will_see_it_and_saves_once(panel: Panel, world: World) -> None:
    org = new_id(ORGANIZATION_PREFIX)
    ana, ben = _member(world, org), _member(world, org)
    _save(world, ana, "Lunch orders go in the sheet by 11")

    _sign_in_with_token(panel, ana)
    name = "Share with my team: Lunch orders go in the sheet…"
    _press_by_keyboard(panel, "button", name)
    panel.heading("Share with your team?")
    text = panel.driver.find_element(By.ID, "share-text").text
    assert "everyone in your organization" in text
    assert panel.driver.find_element(By.ID, "share-memory").text == "Lunch orders go in the sheet by 11"
    panel.state("share-confirm")

    # Escape changes nothing.
    ActionChains(panel.driver).send_keys(Keys.ESCAPE).perform()
    panel.gone("heading", "Share with your team?")
    assert _team_texts(world, ben) == []

    panel.press("button", name)
    confirm = panel.button("Share with my team")
    # Two submits in one task: the second finds the first still under way.
    panel.driver.execute_script("arguments[0].click(); arguments[0].click();", confirm)
    panel.until(lambda: any("Shared with your team" in t for t in panel.toast_texts()))
    panel.gone("heading", "Share with your team?")
    time.sleep(0.5)  # a second save, had one gone, would have landed by now
    assert _team_texts(world, ben) == ["Lunch orders go in the sheet by 11"]
    (copy,) = world.bank.list(ben.principal, limit=10, bank="org").memories
    assert copy.author == ana.user_id
    assert panel.shown_texts() == ["Lunch orders go in the sheet by 11"]  # her own memory stays
    panel.state("share-done")

    panel.press("button", "Team")
    panel.heading("Team memories")
    panel.settled()
    assert panel.shown_texts() == ["Lunch orders go in the sheet by 11"]


def test_a_team_memory_of_a_purged_member_says_it_was_saved_by_a_former_member(panel: Panel, world: World) -> None:
    org = new_id(ORGANIZATION_PREFIX)
    ana, ben = _member(world, org), _member(world, org)
    _save(world, ben, "The VPN config lives in the infra repo", "org")
    _save(world, ana, "Standup moved to 10:00", "org")
    world.offboarding.purge_user(ben.user_id)  # the team memories he wrote stay the team's

    _sign_in_with_token(panel, ana)
    panel.press("button", "Team")
    panel.heading("Team memories")
    panel.settled()

    assert panel.shown_texts() == ["Standup moved to 10:00", "The VPN config lives in the infra repo"]
    authors = [e.get_attribute("textContent") for e in panel.driver.find_elements(By.CSS_SELECTOR, ".meta-author")]
    assert authors == ["·Saved by you", "·Saved by a former member"]
    assert [e.text for e in panel.driver.find_elements(By.CSS_SELECTOR, "#memory-list .memory-locked")] == [LOCKED]
    _still()
    panel.state("team-former-member")
