"""End to end, as the issue's "done when" says: `memorybank serve`, then `memorybank panel-link` opened in a browser."""

from __future__ import annotations

import re
from pathlib import Path

import httpx2
import pytest

from harness.served import run_memorybank, served
from tests.browser.conftest import Panel

pytestmark = pytest.mark.browser


def test_memorybank_serve_then_a_panel_link_opened_in_the_browser_shows_my_memories(
    panel: Panel, tmp_path: Path
) -> None:
    db_url = f"sqlite:///{tmp_path / 'served.sqlite3'}"
    created = run_memorybank(["token", "create", "--db", db_url])
    assert created.returncode == 0, created.stderr
    user = re.search(r"^user: (usr_\w+)$", created.stdout, re.MULTILINE)
    assert user
    secret = created.stdout.strip().splitlines()[-1]

    with served(db_url, log=tmp_path / "serve.log") as base_url:
        saved = httpx2.post(
            f"{base_url}/v1/memory",
            json={"content": "Saved by my agent, seen in my panel", "tags": ["e2e"]},
            headers={"Authorization": f"Bearer {secret}"},
        )
        assert saved.status_code == 201
        link = run_memorybank(["panel-link", "--db", db_url, "--user", user.group(1), "--url", base_url])
        assert link.returncode == 0, link.stderr

        panel.driver.get(link.stdout.strip().splitlines()[-1])
        panel.heading("Your memories")
        panel.settled()

        assert panel.shown_texts() == ["Saved by my agent, seen in my panel"]
        panel.get("button", "Delete memory: Saved by my agent, seen in…")
        panel.driver.get("about:blank")
