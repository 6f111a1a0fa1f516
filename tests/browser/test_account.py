"""How many memories I have against my quota, downloading them all, and deleting them all deliberately."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from memorybank_core import SubjectKind, TokenPrincipal
from memorybank_core.ids import USER_PREFIX, new_id
from memorybank_core.wire import export_line
from tests.browser.conftest import LiveServer, Panel, World

pytestmark = pytest.mark.browser


def test_the_panel_says_how_many_memories_i_have_and_how_much_of_my_quota_they_use(panel: Panel, world: World) -> None:
    person = world.person(["abcde", "fghij", "klmno"])  # 15 characters
    world.person(["Another person's memory, never counted in mine"])
    world.controls.set_quota(SubjectKind.USER, person.user_id, max_memories=10, max_characters=1000)
    try:
        panel.sign_in(person)
        usage = panel.driver.find_element(By.ID, "usage")
        panel.until(usage.is_displayed)
        assert usage.text == "3 memories · 30% of your quota used (3 of 10 memories, 15 of 1,000 characters)"
        panel.state("count-and-quota")

        panel.press("button", "Delete memory: klmno")
        panel.until(lambda: usage.text.startswith("2 memories"), timeout=10)
    finally:
        world.controls.unset_quota(SubjectKind.USER, person.user_id)


def test_download_my_memories_saves_the_cli_export_format_with_contexts(
    panel: Panel, world: World, tmp_path: Path
) -> None:
    person = world.person(
        [
            {"content": "Likes long walks", "contexts": [{"snippet": "walked 20 km", "conversation_id": "c1"}]},
            {"content": "Reads sci-fi", "tags": ["books"]},
        ]
    )
    world.person(["Not mine"])
    panel.driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(tmp_path)})
    panel.sign_in(person)

    panel.press("button", "Download my memories")

    files = panel.until(lambda: [p for p in tmp_path.glob("*.jsonl") if p.stat().st_size], timeout=15)
    (download,) = files
    assert download.name.startswith("memories-")
    time.sleep(0.5)  # the browser finishes writing
    lines = download.read_text(encoding="utf-8").splitlines()
    reader = TokenPrincipal(
        user_id=person.user_id, organization_id=person.principal.organization_id, scopes=frozenset({"mcp:read"})
    )
    expected = [export_line(m) for m in world.bank.list(reader, limit=10).memories]
    assert lines == expected
    assert json.loads(lines[1])["contexts"][0]["snippet"] == "walked 20 km"
    panel.until(lambda: any("downloading" in t for t in panel.toast_texts()))
    panel.state("download-toast")


def test_delete_all_asks_for_the_word_then_deletes_in_batches_with_progress_and_ends_empty(
    panel: Panel, world: World
) -> None:
    person = world.person([f"Memory number {n:03d}" for n in range(450)])  # three batches of 200
    bystander = world.person(["The bystander keeps this"])
    panel.sign_in(person)

    panel.press("button", "Delete all…")
    dialog = panel.heading("Delete all 450 memories?")
    assert dialog.is_displayed()
    field = panel.get("textbox", "Type delete all to confirm")
    assert panel.active() == field
    panel.state("delete-all-confirm")

    field.send_keys("delete everything")
    panel.press("button", "Delete all 450 memories")
    error = panel.driver.find_element(By.ID, "delete-all-error")
    panel.until(error.is_displayed)
    assert error.text == "Type “delete all” (or the number 450) to confirm."
    assert len(world.memory_ids(person)) == 450  # nothing happened
    panel.state("delete-all-refused")

    field.clear()
    field.send_keys("delete all")
    panel.press("button", "Delete all 450 memories")

    panel.until(lambda: panel.all("heading", "Deleting all your memories…"), timeout=5)
    panel.heading("Your memory bank is empty", timeout=30)
    assert world.memory_ids(person) == []
    assert len(world.memory_ids(bystander)) == 1
    assert panel.active().accessible_name == "Your memory bank is empty"
    panel.until(lambda: any("All 450 memories are deleted" in t for t in panel.toast_texts()))
    panel.state("delete-all-done")


def test_a_delete_all_interrupted_by_closing_the_page_carries_on_when_the_panel_opens_again(
    panel: Panel, world: World
) -> None:
    person = world.person([f"Memory number {n:03d}" for n in range(450)])
    panel.sign_in(person)
    panel.press("button", "Delete all…")
    panel.get("textbox", "Type delete all to confirm").send_keys("450")  # the count works too
    world.store.list_delay = 1.0  # each batch is slow enough to leave mid-way
    panel.press("button", "Delete all 450 memories")
    status = panel.driver.find_element(By.ID, "delete-all-status")
    panel.until(lambda: status.text == "Deleted 200 of 450…", timeout=10)
    panel.state("delete-all-progress")
    panel.driver.get("about:blank")  # the page closes mid-way
    world.store.list_delay = 0.0
    assert 0 < len(world.memory_ids(person)) < 450

    panel.open()
    panel.heading("Your memory bank is empty", timeout=30)
    assert world.memory_ids(person) == []
    assert panel.driver.execute_script("return localStorage.getItem('memorybank.deleteAll')") is None


def test_in_a_host_a_leftover_delete_all_note_never_skips_the_typed_confirmation(
    panel: Panel, host_server: LiveServer
) -> None:
    # A host signs people in itself, so the panel cannot tell whose half-finished "delete all" a note was.
    panel.driver.get(host_server.url + "/memory/")
    assert panel.call("POST", f"/login?user={new_id(USER_PREFIX)}") == 200
    for n in range(3):
        assert panel.call("POST", "/api/v1/memory", {"content": f"Kept unless I confirm {n}"}) == 201
    panel.driver.execute_script("localStorage.setItem('memorybank.deleteAll', JSON.stringify({user: null, total: 3}))")
    panel.driver.get(host_server.url + "/memory/")
    panel.heading("Your memories")
    panel.settled()

    panel.press("button", "Delete all…")
    panel.heading("Delete all 3 memories?")
    panel.press("button", "Delete all 3 memories")  # nothing typed

    error = panel.driver.find_element(By.ID, "delete-all-error")
    panel.until(error.is_displayed)
    assert error.text == "Type “delete all” (or the number 3) to confirm."
    time.sleep(0.5)  # a deletion, had one started, would have sent its first batch by now
    assert len(panel.shown_texts()) == 3
    panel.driver.get(host_server.url + "/memory/")
    panel.heading("Your memories")
    panel.settled()
    assert len(panel.shown_texts()) == 3


def test_a_delete_all_paused_by_a_failure_carries_on_without_asking_again(panel: Panel, world: World) -> None:
    person = world.person([f"Memory number {n:03d}" for n in range(450)])
    panel.sign_in(person)
    panel.press("button", "Delete all…")
    panel.get("textbox", "Type delete all to confirm").send_keys("delete all")
    world.store.list_delay = 1.0
    panel.press("button", "Delete all 450 memories")
    status = panel.driver.find_element(By.ID, "delete-all-status")
    panel.until(lambda: status.text == "Deleted 200 of 450…", timeout=10)
    world.store.fail_list = True  # the next batch fails
    panel.heading("Deleting paused", timeout=10)
    world.store.reset()

    panel.press("button", "Carry on deleting")
    panel.heading("Your memory bank is empty", timeout=30)
    assert world.memory_ids(person) == []
