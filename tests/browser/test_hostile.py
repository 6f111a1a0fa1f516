"""Hostile content and hostile pages: stored XSS renders as inert text; another origin cannot act as me."""

from __future__ import annotations

import json

import pytest
from selenium.webdriver.common.by import By
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from tests.browser.conftest import PHONE, LiveServer, Panel, World

pytestmark = pytest.mark.browser

LONG_WORD = "A" * 8000
XSS_CONTENTS = [
    '<img src=x onerror="window.__xss = 1">',
    "<script>window.__xss = 2</script>",
    '</textarea><svg onload="window.__xss = 3"></svg>',
    "[click me](javascript:window.__xss=4) javascript:window.__xss=4",
    "\u202egnp.exe\u202c bidi override \u2067isolate",
    LONG_WORD,
]


def test_stored_xss_renders_as_inert_text_fires_nothing_and_breaks_no_layout(panel: Panel, world: World) -> None:
    hostile = [
        {
            "content": content,
            "tags": ["<b>bold</b>", "\u202etag"],
            "contexts": [
                {
                    "snippet": '"><img src=x onerror="window.__xss = 5">',
                    "conversation_id": "<script>window.__xss=6</script>",
                    "message_id": "B" * 128,
                }
            ],
        }
        for content in XSS_CONTENTS
    ]
    person = world.person(hostile)
    panel.sign_in(person)
    for details in panel.driver.find_elements(By.CSS_SELECTOR, "#memory-list details"):
        panel.driver.execute_script("arguments[0].open = true", details)

    assert panel.shown_texts() == list(reversed(XSS_CONTENTS))
    assert panel.driver.execute_script("return window.__xss") is None
    assert panel.driver.find_elements(By.CSS_SELECTOR, "#memory-list img, #memory-list script, #memory-list a") == []
    assert len(panel.driver.find_elements(By.CSS_SELECTOR, "#memory-list svg")) == len(XSS_CONTENTS)  # our icons
    assert panel.horizontal_overflow() <= 0
    width = panel.driver.execute_script("return window.innerWidth")
    assert all(article.size["width"] <= width for article in panel.memories())
    bidi = panel.driver.execute_script(
        "return [...document.querySelectorAll('.memory-content, .tag, .snippet')]"
        ".map(e => getComputedStyle(e).unicodeBidi)"
    )
    assert set(bidi) == {"isolate"}  # an override inside cannot reorder the text around it
    assert panel.csp_violations() == []
    panel.state("stored-xss-desktop")

    panel.set_size(PHONE)
    assert panel.horizontal_overflow() <= 0
    panel.state("stored-xss-phone")


def _attacker_app(victim: str, memory_id: str) -> Starlette:
    page = f"""<!doctype html><html><body>
<h1>Totally harmless page</h1>
<iframe name="sink1"></iframe><iframe name="sink2"></iframe>
<form id="save" method="POST" action="{victim}/v1/memory" enctype="text/plain" target="sink1">
  <input name='{{"content": "forged by a form", "x": "' value='"}}'>
</form>
<form id="signin" method="POST" action="{victim}/panel/session" enctype="text/plain" target="sink2">
  <input name='{{"token": "mbk_attacker", "x": "' value='"}}'>
</form>
<script>
window.results = {{}};
const victim = {json.dumps(victim)};
async function attempt(name, path, init) {{
  try {{
    const response = await fetch(victim + path, {{credentials: "include", ...init}});
    window.results[name] = "answered " + response.type + " " + response.status;
  }} catch (error) {{
    window.results[name] = "blocked";
  }}
}}
attempt("delete with the panel header", "/v1/memory/{memory_id}",
  {{method: "DELETE", headers: {{"X-Memorybank-Panel": "1"}}}});
attempt("delete", "/v1/memory/{memory_id}", {{method: "DELETE"}});
attempt("read with the panel header", "/v1/memory", {{headers: {{"X-Memorybank-Panel": "1"}}}});
attempt("no-cors save", "/v1/memory", {{method: "POST", mode: "no-cors", headers: {{"Content-Type": "text/plain"}},
  body: JSON.stringify({{content: "forged by fetch"}})}});
attempt("no-cors sign-out", "/panel/session", {{method: "POST", mode: "no-cors", body: "{{}}"}});
document.getElementById("save").submit();
document.getElementById("signin").submit();
</script></body></html>"""

    async def home(_request: Request) -> Response:
        return HTMLResponse(page)

    return Starlette(routes=[Route("/", home)])


class RequestLog:
    """What reached the panel's server: method, path, whether a session cookie came along, status."""

    def __init__(self, app: object) -> None:
        self.app = app
        self.seen: list[tuple[str, str, bool, int]] = []

    async def __call__(self, scope: dict, receive: object, send: object) -> None:  # type: ignore[type-arg]
        if scope["type"] != "http":
            await self.app(scope, receive, send)  # type: ignore[operator]
            return
        headers = dict(scope["headers"])
        has_cookie = b"memorybank_session=" in headers.get(b"cookie", b"")

        async def record(message: dict) -> None:  # type: ignore[type-arg]
            if message["type"] == "http.response.start":
                self.seen.append((scope["method"], scope["path"], has_cookie, message["status"]))
            await send(message)  # type: ignore[operator]

        await self.app(scope, receive, record)  # type: ignore[operator]


def test_a_page_on_another_origin_cannot_delete_save_or_read_with_my_session(panel: Panel, world: World) -> None:
    person = world.person(["The victim's memory"])
    panel.sign_in(person)
    [memory_id] = world.memory_ids(person)
    log = RequestLog(world.server.app)
    world.server.app = log
    world.server.stop()
    world.server.start()
    attacker = LiveServer(_attacker_app(panel.base_url, memory_id))
    attacker.start()
    try:
        panel.driver.get(attacker.url + "/")
        panel.until(lambda: len(panel.driver.execute_script("return window.results") or {}) == 5)
        results = panel.driver.execute_script("return window.results")
        panel.until(lambda: sum(1 for method, path, _, _ in log.seen if method == "POST") >= 4)
    finally:
        attacker.stop()
        world.server.app = log.app
        world.server.stop()
        world.server.start()

    # Same site, other origin: the browser did send the session cookie, and the server refused every request.
    assert {(method, path) for method, path, cookie, _ in log.seen if cookie} >= {
        ("POST", "/v1/memory"),
        ("POST", "/panel/session"),
    }
    assert all(status in {401, 403, 405} for _, _, _, status in log.seen), log.seen
    # The DELETEs and header-carrying calls never left the browser: CORS preflight (OPTIONS) was not granted.
    assert not any(method == "DELETE" for method, _, _, _ in log.seen)
    assert results["delete with the panel header"] == "blocked"
    assert results["delete"] == "blocked"
    assert results["read with the panel header"] == "blocked"
    assert world.memory_ids(person) == [memory_id]

    # And the victim's own panel still works: the session was neither used nor ended.
    panel.open()
    panel.settled()
    assert panel.shown_texts() == ["The victim's memory"]
