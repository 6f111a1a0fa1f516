"""The panel's "Sign in with <provider>" over HTTP, against the real provider: the flow, and every way to abuse it.

The server runs in process (TestClient, which keeps cookies like a browser); the provider's login form is
driven by `tests.oauth.browser`. Headless Chromium does the same end to end in tests/browser.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import httpx2
import pytest
from starlette.testclient import TestClient

from adapters_http.panel import PANEL_HEADER, SESSION_COOKIE
from adapters_http.panel.oidc import PENDING_COOKIE, SECURE_PENDING_COOKIE
from adapters_oidc import SignInSettings, user_id_for
from tests.oauth.app import BASE_URL, Server, serving
from tests.oauth.browser import cancel_at_provider, sign_in_at_provider
from tests.oauth.idp import CLIENT_SECRETS, Idp, running_idp

CALLBACK = BASE_URL + "/panel/oidc/callback"
START = "/panel/oidc/start"
FROM_THE_PANEL = {"Origin": BASE_URL, "Sec-Fetch-Site": "same-origin"}
PANEL_CALL = {PANEL_HEADER: "1", "Origin": BASE_URL, "Sec-Fetch-Site": "same-origin"}


@pytest.fixture(scope="module")
def idp() -> Iterator[Idp]:
    with running_idp(panel_redirect_uris=[CALLBACK]) as provider:
        yield provider


def panel_client(idp: Idp, client_id: str = "memorybank-panel") -> SignInSettings:
    """The server's settings for one of the provider's web clients (a public one has no secret)."""
    secret = CLIENT_SECRETS.get(client_id)
    return SignInSettings(issuer=idp.issuer, client_id=client_id, client_secret=secret, display_name="Test IdP")


@pytest.fixture
def server(idp: Idp) -> Iterator[Server]:
    with serving([idp.issuer], panel_sign_in=panel_client(idp)) as running:
        yield running


def start(server: Server) -> str:
    """Press "Sign in with Test IdP": the provider URL the server sends the browser to."""
    response = server.client.post(START, headers=FROM_THE_PANEL, follow_redirects=False)
    assert response.status_code == 303, response.text
    location: str = response.headers["location"]
    return location


def callback(server: Server, answer: dict[str, str]) -> httpx2.Response:
    return server.client.get("/panel/oidc/callback", params=answer, follow_redirects=False)


def who(server: Server) -> httpx2.Response:
    return server.client.get("/panel/session", headers=PANEL_CALL)


def query_of(url: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}


def with_query(url: str, **changes: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(query=urlencode({**query_of(url), **changes})))


def refused_page(response: httpx2.Response, status: int, *words: str) -> str:
    """The problem page: its status, HTML in the panel's style, the way back, no session, no pending sign-in."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in response.headers["content-security-policy"]
    assert response.headers["cache-control"] == "no-store"
    assert "Back to the sign-in page" in response.text
    assert "Traceback" not in response.text
    for word in words:
        assert word in response.text
    assert "set-cookie" not in response.headers or SESSION_COOKIE not in response.headers["set-cookie"]
    return response.text


def signed_in_as(server: Server, login: str, idp: Idp) -> None:
    response = who(server)
    assert response.status_code == 200, response.text
    assert response.json()["user_id"] == user_id_for(idp.issuer, login)


def test_the_sign_in_page_offers_the_provider_and_a_person_lands_in_the_panel_with_only_their_memories(
    server: Server, idp: Idp
) -> None:
    page = server.client.get("/")
    assert '<meta name="memorybank-identity-provider" content="Test IdP">' in page.text

    location = start(server)
    pending = server.client.cookies.get(PENDING_COOKIE)
    set_cookie = server.client.post(START, headers=FROM_THE_PANEL, follow_redirects=False).headers["set-cookie"]
    sent = query_of(location)
    assert location.startswith(idp.issuer)
    assert sent["redirect_uri"] == CALLBACK
    assert sent["code_challenge_method"] == "S256"
    assert sent["client_id"] == "memorybank-panel"
    assert {"state", "nonce", "code_challenge"} <= sent.keys()
    assert pending is not None
    assert sent["code_challenge"] not in pending  # the challenge is public; the verifier stays in the cookie
    assert "HttpOnly" in set_cookie
    assert "SameSite=lax" in set_cookie
    assert "Max-Age=600" in set_cookie

    landed = callback(server, sign_in_at_provider(start(server), login="carol", redirect_uri=CALLBACK))

    assert landed.status_code == 303
    assert landed.headers["location"] == "/"
    assert "samesite=strict" in landed.headers["set-cookie"].lower()
    assert server.client.cookies.get(PENDING_COOKIE) is None  # the pending sign-in is used up
    signed_in_as(server, "carol", idp)
    assert who(server).json()["scopes"] == ["mcp:read", "mcp:write"]
    saved = server.client.post("/v1/memory", json={"content": "Carol's locker is 42"}, headers=PANEL_CALL)
    assert saved.status_code == 201, saved.text

    server.client.cookies.clear()
    callback(server, sign_in_at_provider(start(server), login="dave", redirect_uri=CALLBACK))
    signed_in_as(server, "dave", idp)
    assert server.client.get("/v1/memory", headers=PANEL_CALL).json()["memories"] == []


def test_the_panel_user_is_the_same_person_as_their_access_tokens(server: Server, idp: Idp) -> None:
    callback(server, sign_in_at_provider(start(server), login="rs-tests", redirect_uri=CALLBACK))
    saved = server.client.post("/v1/memory", json={"content": "Shared between doors"}, headers=PANEL_CALL)
    assert saved.status_code == 201

    # A client-credentials token's subject is its client id: the same (issuer, subject), the same owner.
    found = server.search(idp.token(BASE_URL + "/mcp/agent"), "doors")
    assert [hit["id"] for hit in found.json()["results"]] == [saved.json()["memory"]["id"]]


def test_a_public_client_signs_in_with_pkce_alone(idp: Idp) -> None:
    with serving([idp.issuer], panel_sign_in=panel_client(idp, "memorybank-panel-public")) as server:
        callback(server, sign_in_at_provider(start(server), login="erin", redirect_uri=CALLBACK))
        signed_in_as(server, "erin", idp)


def test_a_forged_state_is_refused_and_the_pending_sign_in_is_gone(server: Server) -> None:
    answer = sign_in_at_provider(start(server), login="carol", redirect_uri=CALLBACK)

    response = callback(server, {**answer, "state": "forged-" + answer["state"][7:]})

    refused_page(response, 401, "Sign-in refused", "state does not match")
    assert server.client.cookies.get(PENDING_COOKIE) is None
    assert who(server).status_code == 401
    # The real answer no longer works either: its pending sign-in was used up by the forgery.
    refused_page(callback(server, answer), 400, "can&#x27;t be completed")


def test_an_answer_for_another_browser_is_refused(server: Server, idp: Idp) -> None:
    # Login CSRF: an attacker's own authorization code, delivered to the victim's browser.
    with serving([idp.issuer], panel_sign_in=panel_client(idp)) as attacker:
        attackers_answer = sign_in_at_provider(start(attacker), login="mallory", redirect_uri=CALLBACK)
    start(server)  # the victim has a sign-in of their own pending

    refused_page(callback(server, attackers_answer), 401, "state does not match")
    server.client.cookies.clear()
    refused_page(callback(server, attackers_answer), 400, "started more than 10 minutes ago")
    assert who(server).status_code == 401


def test_a_replayed_answer_is_refused(server: Server, idp: Idp) -> None:
    answer = sign_in_at_provider(start(server), login="carol", redirect_uri=CALLBACK)
    pending = server.client.cookies[PENDING_COOKIE]
    callback(server, answer)
    signed_in_as(server, "carol", idp)

    server.client.cookies.clear()
    refused_page(callback(server, answer), 400)  # the browser no longer holds the sign-in
    server.client.cookies.set(PENDING_COOKIE, pending)  # nor does a copy of its cookie help: a code works once
    refused_page(callback(server, answer), 401, "refused the sign-in code")
    assert who(server).status_code == 401


def test_a_pending_sign_in_without_its_pkce_verifier_is_refused(server: Server) -> None:
    answer = sign_in_at_provider(start(server), login="carol", redirect_uri=CALLBACK)
    state, nonce, _verifier = server.client.cookies[PENDING_COOKIE].split(".")
    server.client.cookies.delete(PENDING_COOKIE)
    server.client.cookies.set(PENDING_COOKIE, f"{state}.{nonce}")

    refused_page(callback(server, answer), 401, "malformed")
    assert who(server).status_code == 401


def test_an_id_token_with_another_nonce_is_refused(server: Server) -> None:
    location = start(server)
    answer = sign_in_at_provider(with_query(location, nonce="n" * 43), login="carol", redirect_uri=CALLBACK)

    refused_page(callback(server, answer), 401, "not for this sign-in")
    assert who(server).status_code == 401


class AnotherClientsTokens(httpx2.BaseTransport):
    """The network between server and provider, where the code exchange is done as another client."""

    def __init__(self, client_id: str, secret: str) -> None:
        self._real = httpx2.HTTPTransport()
        self._auth = httpx2.BasicAuth(client_id, secret)
        self.active = False

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        if self.active and request.url.path == "/token":
            del request.headers["authorization"]
            request = next(self._auth.auth_flow(request))
        return self._real.handle_request(request)

    def close(self) -> None:
        self._real.close()


def test_an_id_token_issued_to_another_client_is_refused(idp: Idp) -> None:
    network = AnotherClientsTokens("other-panel", CLIENT_SECRETS["other-panel"])
    with serving([idp.issuer], panel_sign_in=panel_client(idp), transport=network) as server:
        location = start(server)
        # The provider signs in the other client, with our state, nonce and PKCE challenge.
        answer = sign_in_at_provider(
            with_query(location, client_id="other-panel"), login="carol", redirect_uri=CALLBACK
        )
        network.active = True

        refused_page(callback(server, answer), 401, "issued for another resource")
        assert who(server).status_code == 401


class SlowNetwork(httpx2.BaseTransport):
    """The provider's token answers arrive `delay` seconds late."""

    def __init__(self, delay: float) -> None:
        self._real = httpx2.HTTPTransport()
        self._delay = delay

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response = self._real.handle_request(request)
        if request.url.path == "/token":
            time.sleep(self._delay)
        return response

    def close(self) -> None:
        self._real.close()


def test_an_expired_id_token_is_refused(idp: Idp) -> None:
    settings = panel_client(idp, "expiring-panel")  # its ID tokens live 1 second
    with serving([idp.issuer], panel_sign_in=settings, transport=SlowNetwork(2.2), leeway_seconds=0) as server:
        answer = sign_in_at_provider(start(server), login="carol", redirect_uri=CALLBACK)

        refused_page(callback(server, answer), 401, "expired")
        assert who(server).status_code == 401


def test_an_answer_naming_another_issuer_or_none_is_refused(server: Server) -> None:
    answer = sign_in_at_provider(start(server), login="carol", redirect_uri=CALLBACK)
    refused_page(callback(server, {**answer, "iss": "https://evil.example.com"}), 401, "another issuer")

    answer = sign_in_at_provider(start(server), login="carol", redirect_uri=CALLBACK)
    del answer["iss"]
    refused_page(callback(server, answer), 401, "without its issuer")


def test_a_repeated_parameter_is_refused(server: Server) -> None:
    answer = sign_in_at_provider(start(server), login="carol", redirect_uri=CALLBACK)
    query = urlencode(answer) + "&state=" + answer["state"]

    refused_page(server.client.get(f"/panel/oidc/callback?{query}", follow_redirects=False), 401, "repeats")


def test_cancelling_at_the_provider_shows_a_clear_page(server: Server) -> None:
    answer = cancel_at_provider(start(server), redirect_uri=CALLBACK)
    assert answer["error"] == "access_denied"

    text = refused_page(callback(server, answer), 403, "Sign-in was cancelled", "Test IdP did not sign you in")
    assert "End-User aborted" not in text  # the provider's own words are not shown


def test_another_provider_error_is_named_and_free_text_is_never_shown(server: Server, idp: Idp) -> None:
    start(server)
    state = server.client.cookies[PENDING_COOKIE].split(".")[0]
    answer = {"state": state, "iss": idp.issuer, "error": "temporarily_unavailable", "error_description": "<b>x</b>"}

    text = refused_page(callback(server, answer), 502, "Test IdP could not sign you in", "temporarily_unavailable")
    assert "<b>x</b>" not in text

    start(server)
    state = server.client.cookies[PENDING_COOKIE].split(".")[0]
    text = refused_page(callback(server, {"state": state, "iss": idp.issuer, "error": "<script>"}), 502)
    assert "<script>" not in text


def test_there_is_no_open_redirect_and_the_redirect_uri_is_never_taken_from_the_request(server: Server) -> None:
    hostile = {"return_to": "https://evil.example", "next": "//evil.example", "redirect_uri": "https://evil.example"}
    response = server.client.post(
        f"{START}?{urlencode(hostile)}",
        # Another name of this server than the one the provider knows (a rebound name is not served at all, issue
        # 27): neither it nor the query sets the redirect URI.
        headers={"Host": "localhost:8000", "Origin": "http://localhost:8000", "Sec-Fetch-Site": "same-origin"},
        follow_redirects=False,
    )
    assert response.status_code == 303
    assert query_of(response.headers["location"])["redirect_uri"] == CALLBACK

    answer = sign_in_at_provider(response.headers["location"], login="carol", redirect_uri=CALLBACK)
    landed = callback(server, {**answer, **hostile})
    assert landed.status_code == 303
    assert landed.headers["location"] == "/"


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"},
        {"Origin": "http://127.0.0.1:9999", "Sec-Fetch-Site": "same-site"},
        {"Origin": "http://evil.example"},
        {},
    ],
)
def test_a_sign_in_cannot_be_started_from_another_site(server: Server, headers: dict[str, str]) -> None:
    response = server.client.post(START, headers=headers, follow_redirects=False)

    refused_page(response, 403, "did not start on the memory bank")
    assert server.client.cookies.get(PENDING_COOKIE) is None


def test_signing_out_ends_the_session_and_another_site_cannot_sign_me_out(server: Server, idp: Idp) -> None:
    callback(server, sign_in_at_provider(start(server), login="carol", redirect_uri=CALLBACK))
    session = server.client.cookies[SESSION_COOKIE]

    for forged in (
        {},
        {"Origin": "http://evil.example", PANEL_HEADER: "1"},
        {**PANEL_CALL, "Sec-Fetch-Site": "cross-site"},
    ):
        assert server.client.delete("/panel/session", headers=forged).status_code == 403
    signed_in_as(server, "carol", idp)

    assert server.client.delete("/panel/session", headers=PANEL_CALL).status_code == 204
    server.client.cookies.set(SESSION_COOKIE, session)  # a copy of the cookie is worthless now
    assert who(server).status_code == 401
    assert server.sessions.authenticate(session) is None


def test_an_unreachable_provider_is_a_clear_page(idp: Idp) -> None:
    with running_idp(panel_redirect_uris=[CALLBACK]) as doomed:
        issuer = doomed.issuer
    with serving([issuer], panel_sign_in=panel_client(doomed)) as server:
        response = server.client.post(START, headers=FROM_THE_PANEL, follow_redirects=False)

        refused_page(response, 503, "Test IdP can&#x27;t be reached")


def test_without_a_panel_client_there_is_no_provider_sign_in(idp: Idp) -> None:
    with serving([idp.issuer]) as server:
        assert '<meta name="memorybank-identity-provider" content="">' in server.client.get("/").text
        assert server.client.post(START, headers=FROM_THE_PANEL).status_code in (404, 405)
        assert server.client.get("/panel/oidc/callback").status_code in (404, 405)


def test_over_https_the_pending_cookie_is_secure_and_host_only(server: Server) -> None:
    browser = TestClient(server.client.app, base_url="https://127.0.0.1:8000")  # no `with`: the app already runs
    origin = {"Origin": "https://127.0.0.1:8000", "Sec-Fetch-Site": "same-origin"}
    response = browser.post(START, headers=origin, follow_redirects=False)

    assert response.status_code == 303
    set_cookie = response.headers["set-cookie"]
    assert set_cookie.startswith(SECURE_PENDING_COOKIE + "=")
    assert {"Secure", "HttpOnly", "Path=/", "SameSite=lax"} <= {part.strip() for part in set_cookie.split(";")}
    assert "Domain" not in set_cookie
