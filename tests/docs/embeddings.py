"""One real request through every app a docs page builds (an app that is only built proves nothing).

A page whose examples leave a Starlette app in their namespace must have an entry in `REQUESTS`:
it signs a member in through the page's own host functions (`find_session`, whose body the docs
leave as `...`) and sends requests through the app exactly as the page mounted it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.testclient import TestClient

from memorybank_core.ids import new_id

SESSION = "s3cret-session"
_ORIGIN = "http://testserver"
_PANEL_CALL = {"X-Memorybank-Panel": "1", "Origin": _ORIGIN}


def apps(names: dict[str, Any]) -> list[str]:
    """The names of the Starlette apps a page's examples left behind."""
    return sorted(name for name, value in names.items() if isinstance(value, Starlette))


def _sign_in_a_member(names: dict[str, Any]) -> Any:
    member = names["Member"](new_id("usr"), new_id("org"))
    names["find_session"] = lambda token: member if token == SESSION else None
    return member


def _save_and_list(client: TestClient, prefix: str, headers: dict[str, str]) -> None:
    client.cookies.set("session", SESSION)
    saved = client.post(f"{prefix}/v1/memory", json={"content": "Deploys go to eu-west"}, headers=headers)
    assert saved.status_code == 201, saved.text
    listed = client.get(f"{prefix}/v1/memory", headers=headers)
    assert listed.status_code == 200, listed.text
    assert [m["content"] for m in listed.json()["memories"]] == ["Deploys go to eu-west"]
    client.cookies.clear()
    assert client.get(f"{prefix}/v1/memory", headers=headers).json()["error"] == "unauthorized"


def _host_with_panel(names: dict[str, Any]) -> None:
    """embedding.md and panel.md: the memory routes at /api behind the host's cookie, the panel at /memory."""
    _sign_in_a_member(names)
    with TestClient(names["app"], base_url=_ORIGIN) as client:
        _save_and_list(client, "/api", _PANEL_CALL)
        page = client.get("/memory/")
        assert page.status_code == 200
        assert "text/html" in page.headers["content-type"]


def _host_with_rail(names: dict[str, Any]) -> None:
    """mcp.md: the REST app behind the host's resolver, and the rail at /mcp/agent behind `check_bearer`."""
    _sign_in_a_member(names)
    with TestClient(names["app"], base_url="http://127.0.0.1") as client:
        _save_and_list(client, "", {})
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        accept = {"Accept": "application/json, text/event-stream"}
        # The docs' check_bearer knows nobody (`...`): it is called, and its None is the rail's 401.
        refused = client.post("/mcp/agent", json=call, headers={**accept, "Authorization": "Bearer someone"})
        assert (refused.status_code, refused.json()["error"]) == (401, "invalid_mcp_token")
        metadata = client.get("/.well-known/oauth-protected-resource/mcp/agent")
        assert metadata.json()["resource"] == "https://den.example.com/mcp/agent"


REQUESTS: dict[str, Callable[[dict[str, Any]], None]] = {
    "docs/embedding.md": _host_with_panel,
    "docs/panel.md": _host_with_panel,
    "docs/mcp.md": _host_with_rail,
}
