"""A real provider whose signing key the test holds: it signs tokens naming any subject or claim.

As a hostile or compromised issuer would (tests/oauth/test_issuer_reach.py), or as a provider whose users carry
an organization claim (tests/oauth/test_team_bank.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import jwt

from tests.oauth.app import RESOURCE
from tests.oauth.idp import Idp, running_idp
from tests.oauth.test_key_rotation import private_jwk
from tests.oauth.test_resource_server import claims_of


class SigningIssuer:
    """A running provider and its private key; `defaults` are claims every token it signs carries."""

    def __init__(self, provider: Idp, key: dict[str, Any], defaults: dict[str, Any]) -> None:
        self.provider = provider
        self.key = key
        self.defaults = defaults

    @property
    def issuer(self) -> str:
        return self.provider.issuer

    def token_for(self, subject: str, *, key: dict[str, Any] | None = None, **claims: Any) -> str:
        """A token exactly like the provider's own, but for `subject` with `claims`; `key` signs it instead."""
        genuine = claims_of(self.provider.token(RESOURCE))
        signed = {**genuine, "sub": subject, "exp": int(time.time()) + 300, **self.defaults, **claims}
        signing = jwt.PyJWK(key or self.key).key
        return jwt.encode(signed, signing, algorithm="RS256", headers={"kid": self.key["kid"]})


@contextmanager
def signing_issuer(kid: str, **defaults: Any) -> Iterator[SigningIssuer]:
    """A provider started with a fresh key `kid`, stopped afterwards."""
    key = private_jwk(kid)
    with running_idp(keys=[key]) as provider:
        yield SigningIssuer(provider, key, defaults)
