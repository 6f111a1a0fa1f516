"""Finding a memory by a word or a tag, with both in the URL so back, forward and reload keep them."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.browser.conftest import DESKTOP, Panel, World, running_world

pytestmark = pytest.mark.browser

MEMORIES: list[Mapping[str, Any]] = [
    {"content": "Drinks oat milk in coffee", "tags": ["food"]},
    {"content": "The staging cluster lives in eu-west", "tags": ["work"]},
    {"content": "Prefers black coffee before meetings", "tags": ["food", "work"]},
    {"content": "Runs on Sunday mornings"},
]


def _marks(panel: Panel) -> list[str]:
    marks: list[str] = panel.driver.execute_script(
        "return [...document.querySelectorAll('#memory-list mark')].map(m => m.textContent)"
    )
    return marks


def _summary(panel: Panel) -> str:
    return str(panel.driver.find_element(By.ID, "find-summary").text)


def _search(panel: Panel, words: str) -> None:
    field = panel.get("textbox", "Search your memories")
    field.clear()
    field.send_keys(words, Keys.ENTER)


def test_searching_shows_my_matches_ranked_with_the_matched_words_marked_and_the_url_keeps_it(
    panel: Panel, world: World
) -> None:
    panel.sign_in(world.person(MEMORIES))
    other = world.person(["Someone else's coffee habit"])
    assert other.user_id  # another person's memory that would match

    _search(panel, "coffee")

    panel.until(lambda: len(panel.shown_texts()) == 2)
    assert set(panel.shown_texts()) == {"Drinks oat milk in coffee", "Prefers black coffee before meetings"}
    assert _marks(panel) == ["coffee", "coffee"]
    assert panel.driver.find_element(By.ID, "find-summary").text == "2 memories match “coffee”, most relevant first."
    assert panel.driver.current_url.endswith("/?q=coffee")
    panel.state("search-results")

    panel.driver.refresh()
    panel.settled()
    assert len(panel.shown_texts()) == 2
    assert panel.get("textbox", "Search your memories").get_attribute("value") == "coffee"

    panel.driver.back()  # before the search: everything
    panel.until(lambda: len(panel.shown_texts()) == 4)
    panel.driver.forward()
    panel.until(lambda: len(panel.shown_texts()) == 2)


def test_a_search_with_no_match_says_so_and_offers_the_way_back(panel: Panel, world: World) -> None:
    panel.sign_in(world.person(MEMORIES))

    _search(panel, "kayak")

    title = panel.heading("No memories match “kayak”")
    assert panel.active() == title
    assert not panel.driver.find_element(By.ID, "empty-state").is_displayed()  # not the first-run page
    panel.state("search-no-match")

    panel.press("button", "Show all memories")
    panel.until(lambda: len(panel.shown_texts()) == 4)
    assert "?" not in panel.driver.current_url
    assert panel.active().accessible_name == "Search your memories"


def test_a_tag_chip_filters_by_its_tag_and_pressing_it_again_clears_the_filter(panel: Panel, world: World) -> None:
    panel.sign_in(world.person(MEMORIES))

    chips = panel.all("button", "Show memories tagged work")
    panel.click(chips[0])

    panel.until(
        lambda: panel.shown_texts() == ["Prefers black coffee before meetings", "The staging cluster lives in eu-west"]
    )
    assert panel.driver.current_url.endswith("/?tag=work")
    assert panel.driver.find_element(By.ID, "find-summary").text == "2 memories are tagged “work”."
    pressed = panel.all("button", "Show memories tagged work")
    assert [chip.get_attribute("aria-pressed") for chip in pressed] == ["true", "true"]
    panel.state("tag-filter")

    _search(panel, "coffee")  # a word and a tag together
    panel.until(lambda: panel.shown_texts() == ["Prefers black coffee before meetings"])
    assert "tag=work" in panel.driver.current_url
    assert "q=coffee" in panel.driver.current_url

    panel.click(panel.all("button", "Show memories tagged work")[0])
    panel.until(lambda: len(panel.shown_texts()) == 2)  # the tag is off; the word stays
    assert "tag=" not in panel.driver.current_url


def test_a_search_never_finds_another_persons_memories(panel: Panel, world: World) -> None:
    world.person(["Bob's secret kayak trip"])
    panel.sign_in(world.person(MEMORIES))

    _search(panel, "kayak")

    panel.heading("No memories match “kayak”")
    assert "Bob" not in panel.driver.find_element(By.ID, "main").text


def test_a_search_that_fills_its_answer_says_it_shows_the_most_relevant_and_a_tag_says_what_it_narrowed(
    panel: Panel, world: World
) -> None:
    # 60 matches, more than the search answers at most; the tagged ones rank low (a tag is searched too), except
    # the one that says "coffee" twice.
    memories: list[Mapping[str, Any]] = [
        {"content": f"Coffee note {n:03d}", "tags": ["old"] if n < 5 else ["beans"] if n == 5 else []}
        for n in range(59)
    ]
    memories.append({"content": "Coffee note 059, strong coffee", "tags": ["beans"]})
    panel.sign_in(world.person(memories))

    _search(panel, "coffee")
    panel.until(lambda: len(panel.shown_texts()) == 50)
    assert _summary(panel) == (
        "The 50 most relevant memories that match “coffee”. More may match further down. Try rarer words."
    )
    panel.state("search-more-match")

    panel.click(panel.all("button", "Show memories tagged beans")[0])  # one in the answer, one beyond it
    panel.until(lambda: panel.shown_texts() == ["Coffee note 059, strong coffee"])
    assert _summary(panel) == (
        "1 of the 50 most relevant memories that match “coffee” is tagged “beans”."
        " More may match further down. Try rarer words, or no words to see every memory tagged “beans”."
    )

    panel.open("/?q=coffee&tag=old")  # every memory tagged "old" matches, none among the 50
    title = panel.heading("None of the 50 most relevant memories that match “coffee” is tagged “old”")
    assert panel.driver.find_element(By.ID, "find-empty-text").text.startswith("More may match further down.")
    assert title.is_displayed()
    _search(panel, "")  # no words, as it advises: every memory with the tag
    panel.until(lambda: len(panel.shown_texts()) == 5)

    _search(panel, "003")  # other words, with fewer matches: all of them come, and the tag filters them all
    panel.until(lambda: panel.shown_texts() == ["Coffee note 003"])
    assert _summary(panel) == "1 memory matches “003” and is tagged “old”, most relevant first."


@pytest.fixture(scope="module")
def hybrid_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """The panel's server with hybrid search on (the real model, from the semantic extra)."""
    from adapters_embedding import default_embedder

    with running_world(tmp_path_factory.mktemp("hybrid") / "panel.sqlite3", embedder=default_embedder()) as running:
        yield running


def test_a_memory_found_by_meaning_says_it_is_related_and_the_count_says_which_are_which(
    chromium: webdriver.Chrome, hybrid_world: World
) -> None:
    panel = Panel(chromium, hybrid_world)
    panel.set_size(DESKTOP)
    panel.sign_in(
        hybrid_world.person(
            [
                "The staging cluster lives in eu-west",
                "Quarterly planning offsite is in Lisbon the second week of March",
                "The flight to Lisbon departs at 7:40 on Friday",
                "Runs on Sunday mornings",
                "Portugal trip: pack the travel adapter and sunscreen",
            ]
        )
    )

    _search(panel, "when does my plane to Portugal leave?")  # not one word in common with the flight

    panel.until(lambda: panel.shown_texts() == ["The flight to Lisbon departs at 7:40 on Friday"])
    assert _summary(panel) == "1 memory is related to “when does my plane to Portugal leave?”, most relevant first."
    assert _marks(panel) == []
    assert "Related: shares no word with your search" in panel.driver.find_element(By.ID, "memory-list").text
    panel.state("search-related")

    # A word the bank holds: only the memory that has it, counted as a match (not the planning note beside it).
    _search(panel, "staging")
    panel.until(lambda: panel.shown_texts() == ["The staging cluster lives in eu-west"])
    assert _summary(panel) == "1 memory matches “staging”, most relevant first."
    assert "Related" not in panel.driver.find_element(By.ID, "memory-list").text

    # Both at once: the count line says how many of what it shows are which.
    _search(panel, "plane to Portugal")
    panel.until(lambda: len(panel.shown_texts()) == 2)
    assert _summary(panel) == "2 memories: 1 matches “plane to Portugal”, 1 is related, most relevant first."
