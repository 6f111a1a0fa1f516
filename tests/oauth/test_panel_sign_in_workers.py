"""`memorybank serve --workers 2` with the panel's "Sign in with <provider>": any worker completes any sign-in."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from adapters_http.panel import PANEL_HEADER, SESSION_COOKIE
from adapters_http.panel.oidc import PENDING_COOKIE
from adapters_oidc import user_id_for
from harness.served import free_port, serving
from memorybank.settings import SERVE_SETTINGS_ENV
from tests.oauth.browser import sign_in_at_provider
from tests.oauth.idp import CLIENT_SECRETS, running_idp

pytestmark = pytest.mark.serve_processes

SIGN_INS = 6


def test_two_workers_complete_each_others_sign_ins_and_the_secret_stays_in_its_file(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    callback = f"{base}/panel/oidc/callback"
    secret = CLIENT_SECRETS["memorybank-panel"]
    secret_file = tmp_path / "panel-client-secret"
    secret_file.write_text(secret + "\n")
    with running_idp(panel_redirect_uris=[callback]) as idp:
        args = [
            "--workers", "2",
            "--oauth-issuer", idp.issuer,
            "--oauth-panel-client-id", "memorybank-panel",
            "--oauth-panel-client-secret-file", str(secret_file),
            "--oauth-panel-name", "Test IdP",
        ]  # fmt: skip
        with serving(
            f"sqlite:///{tmp_path / 'bank.sqlite3'}", port=port, args=args, log=tmp_path / "serve.log"
        ) as server:
            assert 'content="Test IdP"' in httpx2.get(base + "/", timeout=30).text
            banner = f"panel sign-in with {idp.issuer} as client memorybank-panel; its redirect URI: {callback}"
            assert banner in (tmp_path / "serve.log").read_text()
            for n in range(SIGN_INS):
                # A new connection for every request, so the kernel spreads them over both workers.
                started = httpx2.post(
                    base + "/panel/oidc/start",
                    headers={"Origin": base, "Sec-Fetch-Site": "same-origin"},
                    follow_redirects=False,
                    timeout=30,
                )
                assert started.status_code == 303, started.text
                answer = sign_in_at_provider(started.headers["location"], login=f"person-{n}", redirect_uri=callback)
                landed = httpx2.get(
                    callback, params=answer, cookies={PENDING_COOKIE: started.cookies[PENDING_COOKIE]}, timeout=30
                )
                assert landed.status_code == 303, landed.text
                who = httpx2.get(
                    base + "/panel/session",
                    headers={PANEL_HEADER: "1"},
                    cookies={SESSION_COOKIE: landed.cookies[SESSION_COOKIE]},
                    timeout=30,
                )
                assert who.status_code == 200, who.text
                assert who.json()["user_id"] == user_id_for(idp.issuer, f"person-{n}")
            # The workers get the settings in their environment: the secret's path, never the secret.
            workers = [
                environment
                for child in Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
                if SERVE_SETTINGS_ENV.encode() in (environment := Path(f"/proc/{child}/environ").read_bytes())
            ]
            assert len(workers) >= 2  # the two workers (and multiprocessing's helper, spawned alike)
            for environment in workers:
                assert str(secret_file).encode() in environment
                assert secret.encode() not in environment
