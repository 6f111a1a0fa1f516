"""The list: every memory with its details, paged with the API's cursor, never repeating or skipping one."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from tests.browser.conftest import Panel, World

pytestmark = pytest.mark.browser


def test_45_memories_page_by_20_with_load_more_each_shown_once_in_order(panel: Panel, world: World) -> None:
    person = world.person([f"Memory number {n:02d}" for n in range(45)])
    panel.sign_in(person)
    assert len(panel.memories()) == 20

    panel.press("button", "Load more memories")
    panel.until(lambda: len(panel.memories()) == 40)
    assert panel.active().get_attribute("data-memory-id") == panel.shown_ids()[20]  # focus: the first new one
    panel.press("button", "Load more memories")
    panel.until(lambda: len(panel.memories()) == 45)

    assert panel.shown_ids() == world.memory_ids(person)
    assert len(set(panel.shown_ids())) == 45
    assert panel.shown_texts() == [f"Memory number {n:02d}" for n in reversed(range(45))]
    assert panel.all("button", "Load more memories") == []
    assert panel.driver.find_element(By.ID, "end-note").text == "That’s everything."


def test_a_memory_shows_its_tags_source_time_and_contexts_behind_an_expand_control(panel: Panel, world: World) -> None:
    person = world.person(
        [
            {
                "content": "Deploys go through the staging cluster first",
                "tags": ["deploys", "infra"],
                "contexts": [
                    {
                        "snippet": "we always stage before prod",
                        "conversation_id": "conv_42",
                        "message_id": "msg_7",
                        "origin": "active_conversation",
                    },
                    {"snippet": "staging is eu-west", "origin": "searched_conversation"},
                ],
            }
        ]
    )
    panel.sign_in(person)
    article = panel.memories()[0]

    assert [t.text for t in article.find_elements(By.CSS_SELECTOR, ".tag")] == ["deploys", "infra"]
    assert "Saved from a chat" in article.text
    time_element = article.find_element(By.CSS_SELECTOR, "time")
    exact = time_element.get_attribute("data-exact")
    assert time_element.text.startswith("just now")
    assert exact
    assert time_element.get_attribute("textContent") == f"just now, {exact}"  # what a screen reader reads
    ActionChains(panel.driver).move_to_element(time_element).perform()
    on_hover = panel.driver.execute_script("return getComputedStyle(arguments[0], '::after').content", time_element)
    assert exact in on_hover  # the exact time on hover (and on keyboard focus: see the keyboard test)
    snippet = article.find_element(By.CSS_SELECTOR, ".snippet")
    assert not snippet.is_displayed()

    toggle = panel.button("2 contexts")
    panel.click(toggle)

    assert snippet.is_displayed()
    assert snippet.text == "we always stage before prod"
    assert "conv_42" in article.text
    assert "msg_7" in article.text
    assert "The chat it was saved in" in article.text
    assert "An earlier chat the agent looked up" in article.text
    panel.state("contexts-open")
