"""A real OpenID provider (the npm package `oidc-provider`, pinned in tests/oauth/idp/package-lock.json) per test.

Started with Node on a free loopback port; it prints its issuer URL when ready. See idp/provider.mjs for its
clients. Nothing in this module signs a token: tokens come from the provider's token endpoint.
"""

from __future__ import annotations

import json
import select
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2

from tests.node_packages import require_node

IDP_DIR = Path(__file__).resolve().parent / "idp"
PROVIDER = IDP_DIR / "provider.mjs"
OIDC_PROVIDER_PACKAGE = IDP_DIR / "node_modules" / "oidc-provider" / "package.json"
STARTUP_SECONDS = 30

CLIENT_SECRETS = {
    "rs-tests": "rs-tests-secret",
    "short-lived": "short-lived-secret",
    "opaque-client": "opaque-secret",
    "memorybank-rs": "memorybank-rs-secret",
    "memorybank-panel": "memorybank-panel-secret",
    "other-panel": "other-panel-secret",
    "expiring-panel": "expiring-panel-secret",
}


def require_provider() -> str:
    """The node executable with the provider installed; fails under CI=true, else skips, when either is absent."""
    return require_node(
        tier="OAUTH",
        installed=[OIDC_PROVIDER_PACKAGE],
        where=IDP_DIR / "node_modules",
        install="tests/oauth/idp/install.sh",
    )


class Idp:
    """A running provider: its issuer URL, and its token endpoint for client-credentials tokens."""

    def __init__(self, process: subprocess.Popen[str], issuer: str) -> None:
        self.process = process
        self.issuer = issuer

    def token(self, resource: str, *, client: str = "rs-tests", scope: str | None = "mcp:read mcp:write") -> str:
        """A fresh access token for `resource` from the client-credentials grant."""
        form = {"grant_type": "client_credentials", "resource": resource}
        if scope is not None:
            form["scope"] = scope
        response = httpx2.post(
            f"{self.issuer}/token", data=form, auth=httpx2.BasicAuth(client, CLIENT_SECRETS[client]), timeout=10
        )
        assert response.status_code == 200, response.text
        token: str = response.json()["access_token"]
        return token

    def jwks(self) -> dict[str, Any]:
        """The provider's published key set."""
        document: dict[str, Any] = httpx2.get(f"{self.issuer}/jwks", timeout=10).json()
        return document

    @property
    def port(self) -> int:
        """The port the provider listens on."""
        return int(self.issuer.rsplit(":", 1)[1])

    def stop(self) -> None:
        """Stop the provider (idempotent)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


@contextmanager
def running_idp(
    *,
    port: int = 0,
    host: str = "127.0.0.1",
    keys: Sequence[dict[str, Any]] = (),
    panel_redirect_uris: Sequence[str] = (),
) -> Iterator[Idp]:
    """Run a provider until the block ends."""
    idp = start_idp(port=port, host=host, keys=keys, panel_redirect_uris=panel_redirect_uris)
    try:
        yield idp
    finally:
        idp.stop()


def start_idp(
    *,
    port: int = 0,
    host: str = "127.0.0.1",
    keys: Sequence[dict[str, Any]] = (),
    panel_redirect_uris: Sequence[str] = (),
) -> Idp:
    """Start a provider and wait for its issuer line; a second try if the first printed none.

    The second try is for the machine, not the provider: a provider that starts in 0.3-0.5 s here once printed
    nothing in a CI run with only Node's version warning on stderr. Both tries' reasons reach the error.

    Raises:
        RuntimeError: neither try printed the issuer line in time (each try's exit code and stderr).
    """
    node = require_provider()
    config = {"port": port, "host": host, "keys": list(keys), "panelRedirectUris": list(panel_redirect_uris)}
    failures: list[str] = []
    for _ in range(2):
        started = _try_start(node, config)
        if isinstance(started, Idp):
            return started
        failures.append(started)
    raise RuntimeError("the OpenID provider did not start: " + " | ".join(failures))


def _try_start(node: str, config: dict[str, Any]) -> Idp | str:
    """A running provider, or why it is not one (its exit code or the timeout, and its stderr's end)."""
    # stderr goes to a file, not a pipe nobody reads (a full pipe would block the provider).
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(  # noqa: S603 - our pinned provider, no shell
            [node, str(PROVIDER), json.dumps(config)],
            cwd=IDP_DIR,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
        assert process.stdout is not None
        # Wait for the first line with a deadline: a provider that hangs before printing must fail the
        # test with its stderr, not hang the whole run.
        ready, _, _ = select.select([process.stdout], [], [], STARTUP_SECONDS)
        line = process.stdout.readline() if ready else ""
        if line:
            return Idp(process, json.loads(line)["issuer"])
        exited = process.poll()
        reason = f"no line in {STARTUP_SECONDS} s" if exited is None else f"exited with {exited} before its line"
        process.kill()
        process.wait(timeout=STARTUP_SECONDS)
        process.stdout.close()
        log.seek(0)
        return f"{reason}; stderr: {log.read()[-2000:]}"
