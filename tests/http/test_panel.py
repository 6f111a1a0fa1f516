"""The panel over HTTP: its page and assets, its sign-in routes, and the cookie door's CSRF defence."""

from __future__ import annotations

import re
from http.cookies import SimpleCookie
from importlib import resources

import httpx2
import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from adapters_http.panel import CONTENT_SECURITY_POLICY, PANEL_HEADER, SECURE_SESSION_COOKIE, SESSION_COOKIE
from memorybank_core import READ_SCOPE, PanelSessions, TokenService
from tests.conftest import User
from tests.http.conftest import TEST_PROMPT, Caller

SAME_ORIGIN = {PANEL_HEADER: "1", "Origin": "http://testserver"}
EXPECTED_CSP = "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"


def _set_cookie(response: httpx2.Response) -> SimpleCookie:
    cookie = SimpleCookie()
    cookie.load(response.headers["set-cookie"])
    return cookie


def _link(sessions: PanelSessions, user: User) -> str:
    return sessions.issue_link(user_id=user.user_id, org_id=user.organization_id).code


# --- the page and its files ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/", "/panel/assets/app.js", "/panel/assets/panel.css", "/panel/assets/api.js", "/panel/assets/icon.svg"]
)
def test_the_page_and_its_files_carry_the_strict_security_headers(client: TestClient, path: str) -> None:
    response = client.get(path)

    assert response.status_code == 200
    assert response.headers["content-security-policy"] == EXPECTED_CSP == CONTENT_SECURITY_POLICY
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["etag"].startswith('"')


@pytest.mark.parametrize(
    ("path", "media_type"),
    [
        ("/", "text/html; charset=utf-8"),
        ("/panel/assets/app.js", "text/javascript; charset=utf-8"),
        ("/panel/assets/panel.css", "text/css; charset=utf-8"),
        ("/panel/assets/icon.svg", "image/svg+xml"),
    ],
)
def test_each_file_has_its_media_type_and_an_unchanged_file_revalidates_to_a_304(
    client: TestClient, path: str, media_type: str
) -> None:
    first = client.get(path)
    again = client.get(path, headers={"If-None-Match": first.headers["etag"]})
    head = client.head(path)

    assert first.headers["content-type"] == media_type
    assert again.status_code == 304
    assert again.content == b""
    assert head.status_code == 200
    assert head.headers["content-length"] == str(len(first.content))


def test_the_page_has_no_inline_script_or_style_and_carries_the_prompt_as_text(client: TestClient) -> None:
    page = client.get("/").text

    assert "<script>" not in page
    assert "style=" not in page
    assert " on" + "click=" not in page
    assert '<script type="module" src="panel/assets/app.js"></script>' in page
    assert "## Memory Bank" in page
    assert TEST_PROMPT.splitlines()[2] in page


#: The panel's whole script, every module together: 52.7 kB when first set (budget 60 kB); editing, history and
#: replaced memories (issue 29, revisions.js) brought it to 64.2 kB, so the budget is that plus about 9 %.
PANEL_SCRIPT_BUDGET = 70_000


def test_the_panels_script_stays_small_and_imports_only_its_own_modules() -> None:
    # Served as written (no build step, no framework): what grows here is what every visitor downloads.
    scripts = list(resources.files("adapters_http.panel").joinpath("static").iterdir())
    modules = {entry.name: entry.read_text(encoding="utf-8") for entry in scripts if entry.name.endswith(".js")}

    assert "app.js" in modules
    total = sum(len(text.encode("utf-8")) for text in modules.values())
    assert total <= PANEL_SCRIPT_BUDGET, f"the panel's script is {total} bytes, over its {PANEL_SCRIPT_BUDGET}"
    for name, text in modules.items():
        imported = re.findall(r"^\s*(?:import|export)\b[^;]*?\bfrom\s+[\"']([^\"']+)[\"']", text, flags=re.MULTILINE)
        imported += re.findall(r"\bimport\s*\(\s*[\"']([^\"']+)[\"']", text)
        assert all(path.startswith("./") and path[2:] in modules for path in imported), (name, imported)


@pytest.mark.parametrize("name", ["nope.js", "..%2Fapp.py", "index.html", "__init__.py"])
def test_unknown_assets_are_a_plain_404(client: TestClient, name: str) -> None:
    response = client.get(f"/panel/assets/{name}")

    assert response.status_code == 404
    assert response.json()["error"] == "not_found"


# --- signing in ---------------------------------------------------------------------------------------------


def test_a_sign_in_link_becomes_an_httponly_strict_session_cookie_once(
    client: TestClient, panel_sessions: PanelSessions, alice: User
) -> None:
    code = _link(panel_sessions, alice)

    signed_in = client.post("/panel/session", json={"link": code}, headers=SAME_ORIGIN)
    again = client.post("/panel/session", json={"link": code}, headers=SAME_ORIGIN)

    assert signed_in.status_code == 200
    assert signed_in.json() == {"user_id": alice.user_id, "scopes": ["mcp:read", "mcp:write"]}
    morsel = _set_cookie(signed_in)[SESSION_COOKIE]
    assert morsel["httponly"] is True
    assert morsel["samesite"] == "strict"
    assert morsel["path"] == "/"
    assert not morsel["secure"]  # plain http here; see the https test
    assert int(morsel["max-age"]) > 3600
    assert panel_sessions.authenticate(morsel.value) is not None
    assert again.status_code == 401
    assert again.json()["error"] == "link_rejected"
    assert "memorybank panel-link" in again.json()["message"]


def test_over_https_the_session_cookie_is_host_prefixed_and_secure(
    app: Starlette, panel_sessions: PanelSessions, alice: User
) -> None:
    # Issue 19, finding 4: over https the cookie was `memorybank_session=…; Secure`, which a sibling subdomain
    # can overwrite (cookie tossing); `__Host-` makes browsers refuse any cookie of that name with a Domain.
    same_origin = {PANEL_HEADER: "1", "Origin": "https://testserver"}
    with TestClient(app, base_url="https://testserver") as secure_client:
        response = secure_client.post(
            "/panel/session", json={"link": _link(panel_sessions, alice)}, headers=same_origin
        )
        secure_client.cookies.clear()
        cookie = _set_cookie(response)
        secret = cookie[SECURE_SESSION_COOKIE].value
        prefixed = secure_client.get(
            "/v1/memory", headers={**same_origin, "Cookie": f"{SECURE_SESSION_COOKIE}={secret}"}
        )
        tossed = secure_client.get("/v1/memory", headers={**same_origin, "Cookie": f"{SESSION_COOKIE}={secret}"})
        signed_out = secure_client.delete(
            "/panel/session", headers={**same_origin, "Cookie": f"{SECURE_SESSION_COOKIE}={secret}"}
        )

    assert SESSION_COOKIE not in cookie
    assert (cookie[SECURE_SESSION_COOKIE]["secure"], cookie[SECURE_SESSION_COOKIE]["path"]) == (True, "/")
    assert not cookie[SECURE_SESSION_COOKIE]["domain"]
    assert prefixed.status_code == 200
    assert tossed.status_code == 401  # over https only the prefixed name counts
    assert _set_cookie(signed_out)[SECURE_SESSION_COOKIE]["max-age"] == "0"
    assert panel_sessions.authenticate(secret) is None


def test_a_pasted_api_token_is_exchanged_for_a_session_with_the_tokens_scopes(
    client: TestClient, tokens: TokenService, alice: User
) -> None:
    reader = tokens.issue(user_id=alice.user_id, org_id=alice.organization_id, scopes={READ_SCOPE})

    response = client.post("/panel/session", json={"token": reader.secret}, headers=SAME_ORIGIN)
    session = _set_cookie(response)[SESSION_COOKIE].value

    assert response.json() == {"user_id": alice.user_id, "scopes": ["mcp:read"]}
    assert session != reader.secret
    cookie_headers = {**SAME_ORIGIN, "Cookie": f"{SESSION_COOKIE}={session}"}
    assert client.get("/v1/memory", headers=cookie_headers).status_code == 200
    assert client.delete("/v1/memory/mem_x", headers=cookie_headers).status_code == 403


def test_a_session_made_from_a_token_ends_on_the_next_request_once_the_token_is_revoked(
    client: TestClient, tokens: TokenService, panel_sessions: PanelSessions, alice: User
) -> None:
    # Issue 19, finding 2: such a session kept reading and writing for up to 12 hours after `token revoke`.
    issued = tokens.issue(user_id=alice.user_id, org_id=alice.organization_id)
    other = tokens.issue(user_id=alice.user_id, org_id=alice.organization_id)
    session = _set_cookie(client.post("/panel/session", json={"token": issued.secret}, headers=SAME_ORIGIN))
    client.cookies.clear()  # two browsers: a second sign-in in the same one would end the first session
    from_other = _set_cookie(client.post("/panel/session", json={"token": other.secret}, headers=SAME_ORIGIN))
    client.cookies.clear()
    cookie = {**SAME_ORIGIN, "Cookie": f"{SESSION_COOKIE}={session[SESSION_COOKIE].value}"}
    other_cookie = {**SAME_ORIGIN, "Cookie": f"{SESSION_COOKIE}={from_other[SESSION_COOKIE].value}"}
    assert client.get("/v1/memory", headers=cookie).status_code == 200

    tokens.revoke(issued.token.id)

    assert client.get("/v1/memory", headers=cookie).status_code == 401
    assert client.post("/v1/memory", json={"content": "after revoke"}, headers=cookie).status_code == 401
    assert client.get("/panel/session", headers=cookie).status_code == 401
    assert client.get("/v1/memory", headers=other_cookie).json()["memories"] == []
    assert panel_sessions.end_made_from(issued.token.id) == 1
    assert panel_sessions.end_made_from(other.token.id) == 1


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        ({"token": "mbk_not-a-real-token"}, 401, "token_rejected"),
        ({"token": "mbs_a-session-is-not-a-token"}, 401, "token_rejected"),
        ({"link": "mbl_never-issued"}, 401, "link_rejected"),
        ({"link": ""}, 400, "invalid_request"),
        ({"link": 7}, 400, "invalid_request"),
        ({"link": "a", "token": "b"}, 400, "invalid_request"),
        ({"password": "x"}, 400, "invalid_request"),
        (["link"], 400, "invalid_request"),
        ({"link": "x" * 5000}, 400, "invalid_request"),
    ],
)
def test_a_bad_sign_in_is_refused_clearly_and_sets_no_cookie(
    client: TestClient, body: object, status: int, error: str
) -> None:
    response = client.post("/panel/session", json=body, headers=SAME_ORIGIN)

    assert (response.status_code, response.json()["error"]) == (status, error)
    assert "set-cookie" not in response.headers


def test_a_sign_in_body_that_is_not_json_is_a_400(client: TestClient) -> None:
    response = client.post("/panel/session", content=b"link=abc", headers={**SAME_ORIGIN, "Content-Type": "text/plain"})

    assert response.status_code == 400


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://testserver"},  # no panel header: a form could send this
        {PANEL_HEADER: "1", "Origin": "http://evil.example"},
        {PANEL_HEADER: "1", "Origin": "http://testserver:8001"},
        {PANEL_HEADER: "1", "Origin": "https://testserver"},  # issue 19, finding 9: the scheme counts
        {PANEL_HEADER: "1", "Origin": "http://testserver/panel"},  # an origin has no path
        {PANEL_HEADER: "1", "Origin": "http://user@testserver"},
        {PANEL_HEADER: "1", "Origin": "null"},
        {PANEL_HEADER: "1"},  # an unsafe method without an Origin is not the panel's browser
        {PANEL_HEADER: "1", "Origin": "http://testserver", "Sec-Fetch-Site": "cross-site"},
        {PANEL_HEADER: "1", "Origin": "http://testserver", "Sec-Fetch-Site": "same-site"},
    ],
)
def test_sign_in_and_sign_out_from_another_origin_are_refused(
    client: TestClient, panel_sessions: PanelSessions, alice: User, headers: dict[str, str]
) -> None:
    code = _link(panel_sessions, alice)
    session = panel_sessions.start(alice).secret

    sign_in = client.post("/panel/session", json={"link": code}, headers=headers)
    sign_out = client.delete("/panel/session", headers={**headers, "Cookie": f"{SESSION_COOKIE}={session}"})

    assert sign_in.status_code == 403
    assert sign_in.json()["error"] == "cross_site_refused"
    assert sign_out.status_code == 403
    assert panel_sessions.authenticate(session) is not None
    assert panel_sessions.redeem_link(code) is not None  # the refused attempt did not use the link


def test_sign_out_ends_the_session_and_clears_the_cookie(
    client: TestClient, panel_sessions: PanelSessions, alice: User
) -> None:
    session = panel_sessions.start(alice).secret
    headers = {**SAME_ORIGIN, "Cookie": f"{SESSION_COOKIE}={session}"}

    who = client.get("/panel/session", headers=headers)
    out = client.delete("/panel/session", headers=headers)

    assert who.json()["user_id"] == alice.user_id
    assert out.status_code == 204
    assert _set_cookie(out)[SESSION_COOKIE]["max-age"] == "0"
    assert client.get("/panel/session", headers=headers).status_code == 401
    assert client.get("/v1/memory", headers=headers).status_code == 401


def test_signing_in_again_ends_the_previous_session(
    client: TestClient, panel_sessions: PanelSessions, alice: User
) -> None:
    old = panel_sessions.start(alice).secret

    client.post(
        "/panel/session",
        json={"link": _link(panel_sessions, alice)},
        headers={**SAME_ORIGIN, "Cookie": f"{SESSION_COOKIE}={old}"},
    )

    assert panel_sessions.authenticate(old) is None


# --- the cookie door to the memory routes -------------------------------------------------------------------


@pytest.fixture
def alice_session(panel_sessions: PanelSessions, alice: User) -> str:
    return panel_sessions.start(alice).secret


@pytest.mark.parametrize(
    "headers",
    [
        {},  # the cookie alone
        {"Origin": "http://testserver"},
        {PANEL_HEADER: "yes", "Origin": "http://testserver"},
        {PANEL_HEADER: "1", "Origin": "http://evil.example"},
        {PANEL_HEADER: "1", "Origin": "https://testserver.evil.example"},
        {PANEL_HEADER: "1", "Origin": "https://testserver"},  # issue 19, finding 9: the scheme counts
        {PANEL_HEADER: "1", "Origin": "http://testserver:8080"},
        {PANEL_HEADER: "1", "Origin": "http://testserver/somewhere"},
        {PANEL_HEADER: "1", "Origin": "null"},
        {PANEL_HEADER: "1", "Sec-Fetch-Site": "cross-site"},
    ],
)
def test_the_cookie_alone_or_from_another_origin_opens_no_memory_route(
    client: TestClient, as_alice: Caller, alice_session: str, headers: dict[str, str]
) -> None:
    memory_id = as_alice.saved_id("kept safe")
    cookie = {"Cookie": f"{SESSION_COOKIE}={alice_session}", **headers}

    assert client.get("/v1/memory", headers=cookie).status_code == 401
    assert client.post("/v1/memory", json={"content": "forged"}, headers=cookie).status_code == 401
    assert client.delete(f"/v1/memory/{memory_id}", headers=cookie).status_code == 401
    assert [m["id"] for m in as_alice.list().json()["memories"]] == [memory_id]


def test_the_panels_own_calls_reach_the_memory_routes_as_the_sessions_user(
    client: TestClient, as_alice: Caller, alice_session: str
) -> None:
    memory_id = as_alice.saved_id("mine")
    cookie = {"Cookie": f"{SESSION_COOKIE}={alice_session}"}

    listed = client.get("/v1/memory", headers={**cookie, PANEL_HEADER: "1", "Sec-Fetch-Site": "same-origin"})
    deleted = client.delete(f"/v1/memory/{memory_id}", headers={**cookie, **SAME_ORIGIN})

    assert [m["id"] for m in listed.json()["memories"]] == [memory_id]
    assert deleted.status_code == 204


@pytest.mark.parametrize("origin", ["http://testserver", "http://TestServer:80", "HTTP://testserver"])
def test_the_same_origin_spelled_with_its_default_port_or_in_capitals_is_the_panel(
    client: TestClient, alice_session: str, origin: str
) -> None:
    headers = {"Cookie": f"{SESSION_COOKIE}={alice_session}", PANEL_HEADER: "1", "Origin": origin}

    assert client.post("/v1/memory", json={"content": "mine"}, headers=headers).status_code == 201


def test_a_request_with_an_authorization_header_is_judged_by_it_alone(
    client: TestClient, as_alice: Caller, alice_session: str
) -> None:
    headers = {**SAME_ORIGIN, "Cookie": f"{SESSION_COOKIE}={alice_session}", "Authorization": "Bearer mbk_forged"}

    assert client.get("/v1/memory", headers=headers).status_code == 401


def test_a_session_link_or_token_secret_is_not_a_bearer_token(
    client: TestClient, panel_sessions: PanelSessions, alice: User, alice_session: str
) -> None:
    for secret in (alice_session, _link(panel_sessions, alice)):
        assert client.get("/v1/memory", headers={"Authorization": f"Bearer {secret}"}).status_code == 401
