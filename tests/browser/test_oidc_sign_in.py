"""Signing in to the panel with the identity provider, in headless Chromium against the real provider.

The provider (tests/oauth/idp) is named `localhost` while the panel is on 127.0.0.1: two sites, as in life,
so the cookies' SameSite rules are the ones a real deployment meets.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium.webdriver.common.by import By

from adapters_oidc import IssuerTokenVerifier, ResourceServerSettings, SignInSettings, user_id_for
from memorybank_core import TokenPrincipal
from memorybank_core.bodies import JsonValue
from memorybank_core.ids import ORGANIZATION_PREFIX, new_id
from tests.browser.conftest import Panel, World, free_port, running_world
from tests.oauth.idp import CLIENT_SECRETS, Idp, running_idp

pytestmark = pytest.mark.browser

PROVIDER_NAME = "Test IdP"


@pytest.fixture(scope="module")
def provider_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[World, Idp]]:
    """A panel that offers "Sign in with Test IdP", and the provider, which knows the panel's redirect URI."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with running_idp(host="localhost", panel_redirect_uris=[f"{base}/panel/oidc/callback"]) as idp:
        issuers = IssuerTokenVerifier(ResourceServerSettings(issuers=(idp.issuer,), resource=f"{base}/mcp/agent"))
        client = "memorybank-panel"
        settings = SignInSettings(
            issuer=idp.issuer, client_id=client, client_secret=CLIENT_SECRETS[client], display_name=PROVIDER_NAME
        )
        database = tmp_path_factory.mktemp("oidc") / "panel.sqlite3"
        try:
            with running_world(database, port=port, issuers=issuers, panel_sign_in=settings) as world:
                yield world, idp
        finally:
            issuers.close()


@pytest.fixture
def panel(panel: Panel, provider_world: tuple[World, Idp]) -> Panel:
    """The clean browser of the browser tier, looking at the panel that offers the provider."""
    world, _idp = provider_world
    panel.world = world
    panel.base_url = world.server.url
    # Every site's cookies, the provider's too: each test logs in at the provider afresh.
    panel.driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
    return panel


def save_for(world: World, idp: Idp, login: str, content: str) -> None:
    """A memory of the person who logs in at the provider as `login`."""
    owner = TokenPrincipal(
        user_id=user_id_for(idp.issuer, login),
        organization_id=new_id(ORGANIZATION_PREFIX),
        scopes=frozenset({"mcp:read", "mcp:write"}),
    )
    world.bank.save(owner, JsonValue({"content": content}))


def log_in_at_provider(panel: Panel, login: str) -> None:
    """The provider's own pages: its login form, then its consent."""
    driver = panel.driver
    panel.until(lambda: driver.current_url.startswith("http://localhost:"))
    panel.until(lambda: driver.find_elements(By.NAME, "login"))
    driver.find_element(By.NAME, "login").send_keys(login)
    driver.find_element(By.NAME, "password").send_keys("any password")
    driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    panel.until(lambda: "/interaction/" not in driver.current_url or "Authorize" in driver.page_source)
    if "/interaction/" in driver.current_url:
        driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()


def test_a_person_signs_in_with_the_provider_sees_only_their_memories_and_signs_out(
    panel: Panel, provider_world: tuple[World, Idp]
) -> None:
    world, idp = provider_world
    save_for(world, idp, "carol", "Carol waters the office plants on Mondays")
    save_for(world, idp, "dave", "Dave's bike lock code is in the drawer")

    panel.open()
    panel.heading("Sign in to your memory bank")
    button = panel.button(f"Sign in with {PROVIDER_NAME}")
    panel.get("textbox", "API token")  # the other ways in stay
    panel.state("sign-in-with-provider")

    panel.click(button)
    log_in_at_provider(panel, "carol")

    panel.heading("Your memories")
    panel.settled()
    assert panel.driver.current_url == world.server.url + "/"
    assert panel.shown_texts() == ["Carol waters the office plants on Mondays"]
    assert panel.driver.find_element(By.ID, "who").text == user_id_for(idp.issuer, "carol")
    session = panel.driver.get_cookie("memorybank_session")
    assert session is not None
    assert session["httpOnly"] is True
    assert session["sameSite"] == "Strict"
    assert panel.driver.get_cookie("memorybank_oidc") is None  # the pending sign-in was used up
    panel.state("list-after-provider-sign-in")

    panel.button("Sign out").click()
    panel.heading("You’re signed out")
    assert panel.driver.get_cookie("memorybank_session") is None
    assert world.sessions.authenticate(session["value"]) is None  # ended on the server, not just forgotten
    assert panel.csp_violations() == []


def test_the_button_says_it_is_on_its_way_and_starts_one_sign_in_only(
    panel: Panel, provider_world: tuple[World, Idp]
) -> None:
    panel.open()
    button = panel.button(f"Sign in with {PROVIDER_NAME}")
    # Hold the form post so the page can be looked at in its busy state; note which posts the page let go.
    panel.driver.execute_script(
        "window.posted = [];"
        "window.addEventListener('submit', (event) => {"
        "  posted.push(!event.defaultPrevented);"
        "  event.preventDefault();"
        "});"
    )

    panel.click(button)
    panel.click(button)

    assert panel.driver.execute_script("return window.posted") == [True, False]  # the second click sent nothing
    assert button.get_attribute("aria-disabled") == "true"
    assert panel.driver.find_element(By.ID, "provider-status").text == f"Opening {PROVIDER_NAME}…"
    panel.state("sign-in-with-provider-busy")


def test_cancelling_at_the_provider_shows_a_clear_page_with_the_way_back(
    panel: Panel, provider_world: tuple[World, Idp]
) -> None:
    panel.open()
    panel.click(panel.button(f"Sign in with {PROVIDER_NAME}"))
    panel.until(lambda: panel.driver.find_elements(By.LINK_TEXT, "[ Cancel ]"))
    panel.driver.find_element(By.LINK_TEXT, "[ Cancel ]").click()

    panel.heading("Sign-in was cancelled")
    assert f"{PROVIDER_NAME} did not sign you in" in panel.driver.page_source
    panel.state("provider-sign-in-cancelled")

    panel.get("link", "Back to the sign-in page").click()
    panel.heading("Sign in to your memory bank")
    panel.button(f"Sign in with {PROVIDER_NAME}")
    assert panel.driver.get_cookie("memorybank_session") is None


def test_the_page_of_a_panel_without_a_provider_offers_no_provider_button(panel: Panel, world: World) -> None:
    panel.world = world
    panel.base_url = world.server.url
    panel.open()
    panel.heading("Sign in to your memory bank")

    assert panel.all("button", f"Sign in with {PROVIDER_NAME}") == []
    assert not panel.driver.find_element(By.ID, "provider-form").is_displayed()
