"""The panel mounted in a host (docs/embedding.md): the host's own sign-in and session cookie, in Chromium."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

from memorybank_core.ids import USER_PREFIX, new_id
from tests.browser.conftest import LiveServer, Panel

pytestmark = pytest.mark.browser


def test_a_host_serves_the_panel_behind_its_own_sign_in_and_it_works_end_to_end(
    panel: Panel, host_server: LiveServer
) -> None:
    panel.driver.get(host_server.url + "/memory/")
    panel.heading("You’re signed out")
    sign_in = panel.get("link", "Sign in")
    assert sign_in.get_attribute("href") == host_server.url + "/login"
    panel.state("host-signed-out")

    # The host's own sign-in (a POST here), then a memory saved through the host's API mount.
    assert panel.call("POST", f"/login?user={new_id(USER_PREFIX)}") == 200
    assert panel.call("POST", "/api/v1/memory", {"content": "Seen through the host", "tags": ["host"]}) == 201
    panel.driver.get(host_server.url + "/memory/")
    panel.heading("Your memories")
    panel.settled()

    assert panel.shown_texts() == ["Seen through the host"]
    assert panel.all("button", "Sign out") == []  # signing out is the host's business
    panel.state("host-list")
    panel.press("button", "Delete memory: Seen through the host")
    panel.heading("Your memory bank is empty")
    panel.driver.get(host_server.url + "/memory/")  # leaving sends the pending DELETE
    panel.heading("Your memory bank is empty")
    assert panel.driver.find_elements(By.CSS_SELECTOR, "#memory-list article") == []
