"""`PanelSessions`: signing people in to the management panel, whatever proved who they are.

Every sign-in method (a one-time link from `memorybank panel-link`, a pasted API token,
a host's OIDC callback) ends in `PanelSessions.start(principal)`, which returns the
session secret to put in the browser's cookie. Only SHA-256 hashes of link and session
secrets are stored (they carry 256 random bits, so a fast hash is right, as for API
tokens); every session expires and can be ended early (sign-out, `panel-link --revoke`).

A session remembers the credential it was made from. One made from an API token lives only while
the token does: it is checked on every request through the token service, which sees a revocation
by any process on its next call, and `token revoke` ends such sessions outright.
"""

from __future__ import annotations

import secrets
from collections.abc import Collection
from datetime import datetime, timedelta

import attrs

from memorybank_core import ids, limits
from memorybank_core.clock import SystemClock
from memorybank_core.entities import PanelCredential, PanelCredentialKind
from memorybank_core.errors import InvalidInputError
from memorybank_core.ports import Clock, PanelSessionStore, Principal
from memorybank_core.tokens import KNOWN_SCOPES, TOKEN_SCOPES, TokenPrincipal, TokenService, hash_secret

#: Secret prefixes, so a leaked one says what it is: a sign-in link code or a session cookie.
LINK_SECRET_PREFIX = "mbl_"  # noqa: S105 - a public marker, not a secret
SESSION_SECRET_PREFIX = "mbs_"  # noqa: S105 - a public marker, not a secret
_SECRET_MAX_LENGTH = 128


@attrs.frozen(kw_only=True)
class IssuedLink:
    """A sign-in link just created: the one-time code to put in its URL, shown once, and when it expires."""

    code: str
    user_id: str
    expires_at: datetime


@attrs.frozen(kw_only=True)
class StartedSession:
    """A panel session just started: the secret for the browser's cookie, and when it expires."""

    secret: str
    principal: TokenPrincipal
    expires_at: datetime


def check_link_ttl(ttl: timedelta) -> None:
    """Check a sign-in link's lifetime.

    Raises:
        InvalidInputError: ("ttl") outside 1 second to 1 day.
    """
    if not timedelta(seconds=1) <= ttl <= timedelta(seconds=limits.PANEL_LINK_TTL_MAX_SECONDS):
        raise InvalidInputError("ttl", "must be from 1 second to 24 hours")


class PanelSessions:
    """Issues sign-in links, starts sessions for any signed-in principal, checks and ends them."""

    def __init__(
        self,
        *,
        store: PanelSessionStore,
        tokens: TokenService | None = None,
        clock: Clock | None = None,
        session_ttl: timedelta = timedelta(seconds=limits.PANEL_SESSION_TTL_SECONDS),
    ) -> None:
        """`tokens` checks the API tokens sessions were made from; without it such sessions are refused."""
        self._store = store
        self._tokens = tokens
        self._clock = clock or SystemClock()
        self._session_ttl = session_ttl

    def issue_link(
        self,
        *,
        user_id: str,
        org_id: str,
        ttl: timedelta = timedelta(seconds=limits.PANEL_LINK_TTL_DEFAULT_SECONDS),
    ) -> IssuedLink:
        """A one-time sign-in link for `user_id` (both scopes), valid for `ttl`.

        Raises:
            InvalidInputError: a malformed `usr_`/`org_` id, or a `ttl` outside 1 second to 1 day.
        """
        ids.parse_id(user_id, prefix=ids.USER_PREFIX, field="user")
        ids.parse_id(org_id, prefix=ids.ORGANIZATION_PREFIX, field="org")
        check_link_ttl(ttl)
        code, credential = self._new(PanelCredentialKind.LINK, user_id, org_id, KNOWN_SCOPES, ttl)
        return IssuedLink(code=code, user_id=user_id, expires_at=credential.expires_at)

    def redeem_link(self, code: str) -> StartedSession | None:
        """Use a sign-in link: a new session for its user, or None for an unknown, used or expired code.

        A code is used once only, even by two browsers racing with it.
        """
        link = self._live(code, LINK_SECRET_PREFIX, PanelCredentialKind.LINK)
        if link is None or not self._store.end(link.id, at=self._clock.now()):
            return None
        return self.start(
            TokenPrincipal(user_id=link.user_id, organization_id=link.org_id, scopes=link.scopes, credential_id=link.id)
        )

    def start(self, principal: Principal) -> StartedSession:
        """THE way into the panel: a session for a principal that some sign-in method has just proven.

        The session carries the principal's known scopes (a read-only token makes a read-only session), and
        remembers the principal's `credential_id` when it is one of ours (an API token or a sign-in link). Only a
        session made from one of our API tokens inherits the token's organization scopes (`org:read`, `org:write`,
        `org:admin`, granted with `token create --scope`); every other principal (a link, an issuer, a host) gets
        the memory scopes alone (docs/panel.md, "The team's bank").

        Raises:
            InvalidInputError: the principal has no memory scope.
        """
        source = getattr(principal, "credential_id", None)
        made_from = source if _is_token(source) or ids.is_id(source, prefix=ids.PANEL_CREDENTIAL_PREFIX) else None
        scopes = frozenset(principal.scopes) & (TOKEN_SCOPES if _is_token(made_from) else KNOWN_SCOPES)
        if not scopes & KNOWN_SCOPES:
            raise InvalidInputError("scope", "the principal has no memory bank scope")
        secret, credential = self._new(
            PanelCredentialKind.SESSION,
            principal.user_id,
            principal.organization_id,
            scopes,
            self._session_ttl,
            made_from=made_from,
        )
        return StartedSession(
            secret=secret,
            principal=TokenPrincipal(user_id=credential.user_id, organization_id=credential.org_id, scopes=scopes),
            expires_at=credential.expires_at,
        )

    def authenticate(self, secret: str) -> TokenPrincipal | None:
        """The principal of a live session, or None for an unknown, ended or expired one, or one made from an
        API token that is no longer live."""
        session = self._live(secret, SESSION_SECRET_PREFIX, PanelCredentialKind.SESSION)
        if session is None:
            return None
        if _is_token(session.made_from) and (
            self._tokens is None or self._tokens.live_principal(str(session.made_from)) is None
        ):
            return None
        return TokenPrincipal(
            user_id=session.user_id, organization_id=session.org_id, scopes=session.scopes, credential_id=session.id
        )

    def end(self, secret: str) -> bool:
        """Sign out: end the session with this secret; False if it was not a live session."""
        session = self._live(secret, SESSION_SECRET_PREFIX, PanelCredentialKind.SESSION)
        return session is not None and self._store.end(session.id, at=self._clock.now())

    def end_made_from(self, token_id: str) -> int:
        """End every live session made from the API token `token_id` (just revoked); how many."""
        return self._store.end_made_from(credential_id=token_id, at=self._clock.now())

    def revoke_user(self, user_id: str) -> int:
        """End every unused link and live session of `user_id`; how many.

        Raises:
            InvalidInputError: a malformed `usr_` id.
        """
        ids.parse_id(user_id, prefix=ids.USER_PREFIX, field="user")
        return self._store.end_all(user_id=user_id, at=self._clock.now())

    def _new(
        self,
        kind: PanelCredentialKind,
        user_id: str,
        org_id: str,
        scopes: Collection[str],
        ttl: timedelta,
        *,
        made_from: str | None = None,
    ) -> tuple[str, PanelCredential]:
        prefix = LINK_SECRET_PREFIX if kind is PanelCredentialKind.LINK else SESSION_SECRET_PREFIX
        secret = prefix + secrets.token_urlsafe(32)
        now = self._clock.now()
        credential = PanelCredential(
            id=ids.new_id(ids.PANEL_CREDENTIAL_PREFIX),
            kind=kind,
            secret_hash=hash_secret(secret),
            user_id=user_id,
            org_id=org_id,
            scopes=scopes,
            created_at=now,
            expires_at=now + ttl,
            made_from=made_from,
        )
        self._store.add(credential)
        return secret, credential

    def _live(self, secret: str, prefix: str, kind: PanelCredentialKind) -> PanelCredential | None:
        if not secret.startswith(prefix) or len(secret) > _SECRET_MAX_LENGTH:
            return None
        credential = self._store.find_by_hash(hash_secret(secret))
        if credential is None or credential.kind is not kind or not credential.is_live(self._clock.now()):
            return None
        return credential


def _is_token(credential_id: object) -> bool:
    return ids.is_id(credential_id, prefix=ids.TOKEN_PREFIX)
