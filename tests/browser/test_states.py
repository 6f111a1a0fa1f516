"""Every state of the panel is designed and reachable: loading, first-run empty, error, offline, server down."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

from adapters_mcp import MEMORY_BANK_PROMPT
from memorybank_core import SubjectKind
from tests.browser.conftest import Panel, World

pytestmark = pytest.mark.browser


def _banner(panel: Panel) -> str:
    banner = panel.driver.find_element(By.ID, "connection-banner")
    return banner.text if banner.is_displayed() else ""


def test_while_loading_the_list_is_busy_with_placeholders_of_the_final_size(panel: Panel, world: World) -> None:
    person = world.person(["Uses Neovim"])
    world.store.list_delay = 2.5
    link = world.sessions.issue_link(user_id=person.user_id, org_id=person.principal.organization_id)

    panel.open(f"/#link={link.code}")
    panel.heading("Your memories")
    region = panel.driver.find_element(By.ID, "list-region")
    panel.until(lambda: panel.driver.find_element(By.ID, "skeletons").is_displayed())

    assert region.get_attribute("aria-busy") == "true"
    loading_height = region.size["height"]
    panel.state("loading")
    panel.settled()
    assert panel.shown_texts() == ["Uses Neovim"]
    assert not panel.driver.find_element(By.ID, "skeletons").is_displayed()
    assert loading_height >= 120  # the placeholder holds the space the list takes


def test_the_first_run_explains_the_bank_and_copies_the_same_prompt_as_the_cli(panel: Panel, world: World) -> None:
    panel.driver.execute_cdp_cmd(
        "Browser.grantPermissions",
        {"origin": panel.base_url, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]},
    )
    panel.sign_in(world.person())

    empty = panel.heading("Your memory bank is empty")
    section = empty.find_element(By.XPATH, "./ancestor::section[1]")
    assert "save this to my memory bank" in section.text
    panel.state("empty-first-run")

    section.find_element(By.CSS_SELECTOR, "button[data-copy-prompt]").click()
    panel.until(lambda: any("Prompt copied" in text for text in panel.toast_texts()))
    copied = panel.driver.execute_async_script(
        "const done = arguments[arguments.length - 1]; navigator.clipboard.readText().then(done, e => done(String(e)));"
    )
    assert copied == MEMORY_BANK_PROMPT
    panel.state("copy-prompt-toast")


def test_an_error_names_what_failed_in_plain_words_and_retry_works(panel: Panel, world: World) -> None:
    person = world.person(["Ships on Fridays"])
    world.store.fail_list = True
    panel.sign_in(person)

    panel.heading("Couldn’t load your memories")
    text = panel.driver.find_element(By.ID, "error-text").text
    assert text == "The memory bank’s storage is unavailable right now."
    assert "{" not in text
    assert "Traceback" not in panel.driver.page_source
    panel.state("error")

    world.store.fail_list = False
    panel.press("button", "Try again")
    panel.settled()
    assert panel.shown_texts() == ["Ships on Fridays"]
    assert panel.active().get_attribute("data-memory-id") == world.memory_ids(person)[0]


def test_an_account_whose_memory_is_switched_off_says_so_plainly_and_comes_back_when_switched_on(
    panel: Panel, world: World
) -> None:
    person = world.person(["Takes the night train"])
    world.controls.set_gate(SubjectKind.USER, person.user_id, enabled=False)
    try:
        panel.sign_in(person)

        title = panel.heading("Memory is switched off for your account")
        section = title.find_element(By.XPATH, "./ancestor::section[1]")
        assert "Your saved memories are kept" in section.text
        assert panel.shown_texts() == []
        assert not panel.driver.find_element(By.ID, "error-state").is_displayed()
        assert not panel.driver.find_element(By.ID, "empty-state").is_displayed()
        panel.state("memory-disabled")
    finally:
        world.controls.set_gate(SubjectKind.USER, person.user_id, enabled=True)

    panel.press("button", "Check again")
    panel.settled()
    assert panel.shown_texts() == ["Takes the night train"]
    assert not panel.driver.find_element(By.ID, "disabled-state").is_displayed()


def test_when_the_browser_goes_offline_a_banner_shows_actions_pause_and_it_recovers_by_itself(
    panel: Panel, world: World
) -> None:
    panel.sign_in(world.person(["Bikes to work"]))
    delete = panel.button("Delete memory: Bikes to work")

    panel.set_offline(True)
    panel.until(lambda: "You’re offline" in _banner(panel))
    assert not delete.is_enabled()
    assert not panel.button("Sign out").is_enabled()
    panel.state("offline")

    panel.set_offline(False)
    panel.until(lambda: _banner(panel) == "")
    panel.until(lambda: "Back online." in panel.toast_texts())
    assert delete.is_enabled()


def test_when_the_server_is_unreachable_a_banner_shows_and_the_panel_recovers_when_it_returns(
    panel: Panel, world: World
) -> None:
    person = world.person([f"memory {n:02d}" for n in range(25)])
    panel.sign_in(person)
    assert len(panel.memories()) == 20

    world.server.stop()
    try:
        panel.press("button", "Load more memories")
        panel.until(lambda: any("can’t be reached" in text for text in panel.toast_texts()))
        panel.until(lambda: "Can’t reach the memory bank server" in _banner(panel))
        assert not panel.button("Load more memories").is_enabled()
        assert not panel.button("Delete memory: memory 24").is_enabled()
        panel.state("server-unreachable")
    finally:
        world.server.start()

    panel.until(lambda: _banner(panel) == "", timeout=15)
    # The outage's toasts sit over the list's foot until they time out; a person waits for them too.
    panel.until(lambda: panel.toast_texts() == [], timeout=20)
    panel.press("button", "Load more memories")
    panel.until(lambda: len(panel.memories()) == 25)
    assert panel.shown_ids() == world.memory_ids(person)
