"""The browser tier: the management panel in headless Chromium (Debian's), driven by Selenium.

One browser for the whole session, reset between tests. The panel is served by the real
composition root (`bootstrap.build`, `Runtime.web_app`) over SQLite, in a uvicorn thread that a test can
stop and start again (the server going down). The bank's store can be told to fail or to
be slow. Elements are found by role and accessible name, as a person would find them.
axe-core (pinned in package-lock.json) runs on every state; its results and a screenshot
of every state land in build/panel/ (gitignored).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
import sqlalchemy as sa
import uvicorn
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.wait import WebDriverWait

from memorybank import bootstrap
from memorybank.settings import SearchChoice, Settings
from memorybank_core import (
    Embedder,
    ListPosition,
    Memory,
    MemoryBank,
    MemoryChange,
    MemoryControls,
    MemoryStore,
    PanelSessions,
    Quota,
    TokenPrincipal,
    TokenService,
    UnavailableError,
    Usage,
)
from memorybank_core.bodies import JsonValue
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id
from memorybank_core.offboarding import Offboarding
from tests.http.test_embedding import build_host, host_metadata

REPO_ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
AXE_SCRIPT = Path(__file__).resolve().parent / "node_modules" / "axe-core" / "axe.min.js"
ARTIFACTS = REPO_ROOT / "build" / "panel"
DESKTOP = (1280, 900)
PHONE = (360, 780)

#: What each role means in the panel's markup: the elements that can carry it.
ROLE_SELECTORS = {
    "button": "button, summary, [role=button]",
    "switch": "[role=switch]",
    "heading": "h1, h2, h3, [role=heading]",
    "link": "a[href]",
    "textbox": "input",
    "article": "article",
    "list": "ol, ul",
    "status": "[role=status], [aria-live]",
}


def _missing(problem: str) -> None:
    reason = (
        f"BROWSER TESTS NOT RUN: {problem}; install them as .ci/run does "
        "(apt-get install chromium chromium-driver; tests/browser/install.sh)"
    )
    if os.environ.get("CI", "").strip().lower() == "true":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def chromium() -> Iterator[webdriver.Chrome]:
    """One headless Chromium for the session; fails under CI=true, else skips, when it or axe-core is missing."""
    for path in (CHROMIUM, CHROMEDRIVER, AXE_SCRIPT):
        if not path.exists():
            _missing(f"{path} is missing")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        f"--window-size={DESKTOP[0]},{DESKTOP[1]}",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=str(CHROMEDRIVER)), options=options)
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)
    try:
        yield driver
    finally:
        driver.quit()


# --- the server side ----------------------------------------------------------------------------------------


class FaultyStore(MemoryStore):
    """The real store, with faults a test can switch on: listing or deleting fails, or listing is slow."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        self.fail_list = False
        self.fail_delete = False
        self.list_delay = 0.0

    def reset(self) -> None:
        self.fail_list = self.fail_delete = False
        self.list_delay = 0.0

    def add(
        self, *, user_id: str, memory: Memory, quota: Quota | None = None, retiring: Sequence[MemoryChange] = ()
    ) -> None:
        self._store.add(user_id=user_id, memory=memory, quota=quota, retiring=retiring)

    def usage(self, *, user_id: str) -> Usage:
        return self._store.usage(user_id=user_id)

    def get_many(self, *, user_id: str, memory_ids: Sequence[str]) -> Mapping[str, Memory]:
        return self._store.get_many(user_id=user_id, memory_ids=memory_ids)

    def list(
        self, *, user_id: str, limit: int, after: ListPosition | None, include_retired: bool = False
    ) -> Sequence[Memory]:
        time.sleep(self.list_delay)
        if self.fail_list:
            raise UnavailableError("list")
        return self._store.list(user_id=user_id, limit=limit, after=after, include_retired=include_retired)

    def revise(self, *, user_id: str, change: MemoryChange, quota: Quota | None = None) -> bool:
        return self._store.revise(user_id=user_id, change=change, quota=quota)

    def revisions(self, *, user_id: str, memory_id: str, limit: int, before: int | None) -> Sequence[Memory]:
        return self._store.revisions(user_id=user_id, memory_id=memory_id, limit=limit, before=before)

    def delete(self, *, user_id: str, memory_id: str) -> bool:
        if self.fail_delete:
            raise UnavailableError("delete")
        return self._store.delete(user_id=user_id, memory_id=memory_id)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class LiveServer:
    """An ASGI app served by uvicorn in a thread, on a fixed port, that can be stopped and started again."""

    def __init__(self, app: Any, port: int | None = None) -> None:
        self.app = app
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        # lifespan off: the MCP rail's session manager runs once per process, and the panel never uses it.
        config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the test server on {self.url} did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        if self._server is None or self._thread is None:
            return
        self._server.should_exit = True
        self._thread.join(timeout=20)
        self._server = None


@attrs.frozen(kw_only=True)
class Person:
    """A user of the bank, with an API token."""

    principal: TokenPrincipal
    token: str

    @property
    def user_id(self) -> str:
        return self.principal.user_id


@attrs.frozen(kw_only=True)
class World:
    """The server side of the browser tier."""

    server: LiveServer
    bank: MemoryBank
    tokens: TokenService
    sessions: PanelSessions
    store: FaultyStore
    controls: MemoryControls
    offboarding: Offboarding
    """The operator's purge (`memorybank purge`) over the same database."""

    def person(self, memories: Sequence[str | Mapping[str, Any]] = (), *, scopes: Sequence[str] = ()) -> Person:
        """A new user with a token, who saved `memories` in this order (so the last is the newest)."""
        user_id, org_id = new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX)
        issued = (
            self.tokens.issue(user_id=user_id, org_id=org_id, scopes=scopes)
            if scopes
            else self.tokens.issue(user_id=user_id, org_id=org_id)
        )
        writer = TokenPrincipal(user_id=user_id, organization_id=org_id, scopes=frozenset({"mcp:read", "mcp:write"}))
        for memory in memories:
            self.bank.save(writer, JsonValue({"content": memory} if isinstance(memory, str) else dict(memory)))
        principal = TokenPrincipal(user_id=user_id, organization_id=org_id, scopes=issued.token.scopes)
        return Person(principal=principal, token=issued.secret)

    def memory_ids(self, person: Person) -> list[str]:
        """Every memory the server holds for `person`, newest first."""
        reader = TokenPrincipal(
            user_id=person.user_id, organization_id=person.principal.organization_id, scopes=frozenset({"mcp:read"})
        )
        ids: list[str] = []
        cursor = None
        while True:
            page = self.bank.list(reader, limit=100, cursor=cursor)
            ids += [m.id for m in page.memories]
            if page.next_cursor is None:
                return ids
            cursor = page.next_cursor


@contextmanager
def running_world(
    database: Path, *, port: int | None = None, embedder: Embedder | None = None, **overrides: Any
) -> Iterator[World]:
    """The panel's server over an SQLite file: the real composition root, given `overrides` (`bootstrap.build`'s);
    with an `embedder`, hybrid search."""
    settings = Settings.for_database(f"sqlite:///{database}")
    if embedder is not None:
        settings = attrs.evolve(settings, search=SearchChoice(mode="hybrid"))
    with bootstrap.build(settings, embedder=embedder) as runtime:
        # The same database's ports, but a store that can be made to fail.
        store = FaultyStore(runtime.ports.store)
        served = bootstrap.build(settings, ports=runtime.ports, store=store, **overrides)
        services = served.services
        server = LiveServer(served.web_app(), port)
        server.start()
        try:
            assert services.controls is not None
            yield World(
                server=server,
                bank=services.bank,
                tokens=services.tokens,
                sessions=services.panel_sessions,
                store=store,
                controls=services.controls,
                offboarding=runtime.offboarding(),
            )
        finally:
            server.stop()


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with running_world(tmp_path_factory.mktemp("panel") / "panel.sqlite3") as running:
        yield running


# --- the browser side ---------------------------------------------------------------------------------------


class Panel:
    """The panel in the browser, seen the way a person sees it: by role and accessible name."""

    def __init__(self, driver: webdriver.Chrome, world: World) -> None:
        self.driver = driver
        self.world = world
        self.base_url = world.server.url

    # navigation and sign-in

    def open(self, path: str = "/") -> None:
        self.driver.get(self.base_url + path)

    def sign_in(self, person: Person) -> None:
        """Open a fresh one-time link for `person` and wait for their memories (or the empty state)."""
        link = self.world.sessions.issue_link(user_id=person.user_id, org_id=person.principal.organization_id)
        self.open(f"/#link={link.code}")
        self.heading("Your memories")
        self.settled()

    def settled(self) -> None:
        """Wait until the list is no longer busy."""
        self.until(lambda: self.driver.find_element(By.ID, "list-region").get_attribute("aria-busy") == "false")

    # finding things

    def all(self, role: str, name: str | None = None, *, exact: bool = True) -> list[WebElement]:
        found = []
        for element in self.driver.find_elements(By.CSS_SELECTOR, ROLE_SELECTORS[role]):
            try:
                if not element.is_displayed():
                    continue
                if name is not None:
                    label = element.accessible_name
                    if (label != name) if exact else (name not in label):
                        continue
                found.append(element)
            except StaleElementReferenceException:
                continue
        return found

    def get(self, role: str, name: str, *, exact: bool = True, timeout: float = 10) -> WebElement:
        """The one visible element with this role and name, waiting for it to appear."""

        def one() -> WebElement | None:
            matches = self.all(role, name, exact=exact)
            return matches[0] if len(matches) == 1 else None

        try:
            found: WebElement = self.until(one, timeout=timeout)
            return found
        except TimeoutException:
            names = [e.accessible_name for e in self.all(role)]
            raise AssertionError(f"no single visible {role} named {name!r}; visible {role}s: {names}") from None

    def click(self, element: WebElement) -> None:
        """Click as a person would: first scroll the element to the middle (toasts sit at the bottom)."""
        self.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
        element.click()

    def press(self, role: str, name: str, **kwargs: Any) -> None:
        """Find the element with this role and name and click it."""
        self.click(self.get(role, name, **kwargs))

    def heading(self, name: str, **kwargs: Any) -> WebElement:
        return self.get("heading", name, **kwargs)

    def button(self, name: str, **kwargs: Any) -> WebElement:
        return self.get("button", name, **kwargs)

    def gone(self, role: str, name: str, *, exact: bool = True, timeout: float = 10) -> None:
        self.until(lambda: not self.all(role, name, exact=exact), timeout=timeout)

    def memories(self) -> list[WebElement]:
        return self.driver.find_elements(By.CSS_SELECTOR, "#memory-list article")

    def shown_ids(self) -> list[str]:
        ids: list[str] = self.driver.execute_script(
            "return [...document.querySelectorAll('#memory-list article')].map(a => a.dataset.memoryId)"
        )
        return ids

    def shown_texts(self) -> list[str]:
        texts: list[str] = self.driver.execute_script(
            "return [...document.querySelectorAll('#memory-list .memory-content')].map(p => p.textContent)"
        )
        return texts

    def announced(self) -> str:
        """What the panel's status region last said to screen readers."""
        region = self.driver.find_element(By.ID, "announcer")
        assert region.get_attribute("role") == "status"
        return str(region.get_attribute("textContent"))

    def active(self) -> WebElement:
        return self.driver.switch_to.active_element

    def toast_texts(self) -> list[str]:
        texts: list[str] = self.driver.execute_script(
            "return [...document.querySelectorAll('#toasts .toast')].map(t => t.textContent)"
        )
        return texts

    def call(self, method: str, path: str, body: object = None) -> int:
        """Call the page's own origin from the page (its cookies, the panel's header); the answer's status."""
        status: int = self.driver.execute_async_script(
            "const [method, path, body, done] = arguments;"
            "fetch(path, {method, headers: {'X-Memorybank-Panel': '1', 'Content-Type': 'application/json'},"
            " body: body === null ? undefined : JSON.stringify(body)}).then(r => done(r.status), e => done(0));",
            method,
            path,
            body,
        )
        return status

    def until(self, condition: Callable[[], Any], *, timeout: float = 10) -> Any:
        """Wait until `condition()` is truthy; return it."""
        return WebDriverWait(self.driver, timeout, poll_frequency=0.05).until(lambda _driver: condition())

    # conditions of the browser

    def set_offline(self, offline: bool) -> None:
        self.driver.execute_cdp_cmd(
            "Network.emulateNetworkConditions",
            {"offline": offline, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
        )

    def set_dark(self, dark: bool) -> None:
        scheme = "dark" if dark else "light"
        self.driver.execute_cdp_cmd(
            "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]}
        )

    def set_size(self, size: tuple[int, int]) -> None:
        self.driver.set_window_size(*size)

    def horizontal_overflow(self) -> int:
        return int(self.driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth"))

    # evidence

    def shot(self, name: str) -> Path:
        path = ARTIFACTS / f"{name}.png"
        self.driver.save_screenshot(str(path))
        return path

    def check_accessibility(self, state: str) -> None:
        """Run axe-core on the page as it is; no violation of any impact. Results go to build/panel/axe/."""
        self.driver.execute_script(AXE_SCRIPT.read_text(encoding="utf-8"))
        results = self.driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "axe.run(document, {resultTypes: ['violations']}).then(r => done(r.violations), e => done(String(e)));"
        )
        assert isinstance(results, list), results
        summary = [
            {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]], "help": v["help"]}
            for v in results
        ]
        (ARTIFACTS / "axe").mkdir(exist_ok=True)
        (ARTIFACTS / "axe" / f"{state}.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
        # Every impact counts: a "moderate" or "minor" finding is still something a person meets.
        assert summary == [], f"axe-core found violations in state {state!r}: {summary}"

    def state(self, name: str) -> None:
        """Record one designed state: its screenshot and its accessibility check."""
        self.shot(name)
        self.check_accessibility(name)

    def console_errors(self) -> list[str]:
        return [e["message"] for e in browser_log(self.driver) if e["level"] == "SEVERE"]

    def csp_violations(self) -> list[str]:
        return [m for m in self.console_errors() if "Content Security Policy" in m]


def browser_log(driver: webdriver.Chrome) -> list[dict[str, Any]]:
    """The browser's console messages since the last call (Selenium leaves `get_log` untyped)."""
    entries: list[dict[str, Any]] = driver.get_log("browser")  # type: ignore[no-untyped-call]
    return entries


@pytest.fixture
def host_server(tmp_path: Path) -> Iterator[LiveServer]:
    """The panel mounted in a host app (docs/embedding.md): the host's /login and session cookie, /memory, /api."""
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'host.sqlite3'}")
    host_metadata.create_all(engine)
    server = LiveServer(build_host(engine))
    server.start()
    try:
        yield server
    finally:
        server.stop()
        engine.dispose()


@pytest.fixture
def panel(chromium: webdriver.Chrome, world: World) -> Iterator[Panel]:
    """The panel in a clean browser: no cookies or storage, online, desktop size, light scheme, no faults."""
    world.store.reset()
    page = Panel(chromium, world)
    page.set_offline(False)
    page.set_dark(False)
    page.set_size(DESKTOP)
    chromium.get(world.server.url + "/panel/assets/icon.svg")  # an origin page, to clear its storage
    chromium.delete_all_cookies()
    chromium.execute_script("localStorage.clear(); sessionStorage.clear();")
    browser_log(chromium)  # drop what earlier tests logged
    yield page
    chromium.get("about:blank")  # closes every undo window of this test before the next one starts
    world.store.reset()
