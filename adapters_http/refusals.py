"""The errors only the facades raise (the core knows nothing of transports); `errors.ERROR_TABLE` answers each.

Three families: the REST routes' own (no credentials), the MCP rail's
gate (the reference host's `*_mcp_*` codes), and the panel's sign-in routes.
"""

from __future__ import annotations

from collections.abc import Sequence


class HttpFacadeError(Exception):
    """Base of the errors only a facade raises."""


class UnauthorizedError(HttpFacadeError):
    """No principal: no credentials, or credentials that are unknown, malformed or revoked."""


class RailRefusedError(HttpFacadeError):
    """The MCP rail's gate turned a request away; `scopes` are the rail's, named in the bearer challenge."""

    def __init__(self, scopes: Sequence[str]) -> None:
        self.scopes = tuple(scopes)
        super().__init__(type(self).__doc__)


class RailTokenMissingError(RailRefusedError):
    """No bearer token on a request to the rail."""


class RailTokenRefusedError(RailRefusedError):
    """The rail's bearer token is unknown or revoked, or was refused for `reason` (expired, badly signed, ...)."""

    def __init__(self, scopes: Sequence[str], reason: str | None = None) -> None:
        self.reason = reason
        super().__init__(scopes)


class RailScopeMissingError(RailRefusedError):
    """The token carries none of the rail's scopes."""


class PanelSignInError(HttpFacadeError):
    """The panel's sign-in routes refused a request."""


class CrossSiteRefusedError(PanelSignInError):
    """A sign-in or sign-out that did not come from the panel's own page."""


class SignedOutError(PanelSignInError):
    """No live panel session."""


class LinkRejectedError(PanelSignInError):
    """A sign-in link already used, expired or unknown."""


class TokenRejectedError(PanelSignInError):
    """A pasted API token that is unknown or revoked."""


class BadSignInError(PanelSignInError):
    """A sign-in body that is not `{"link": ...}` or `{"token": ...}` as JSON."""
