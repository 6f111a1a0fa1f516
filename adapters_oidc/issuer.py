"""One trusted issuer: its metadata, discovered on first use, and its key cache."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx2
import jwt

from adapters_oidc.fetch import get_json
from adapters_oidc.jwks import KeyCache
from adapters_oidc.metadata import IssuerMetadata, discover


class TrustedIssuer:
    """An issuer named in the settings. Nothing is fetched until a token from it arrives (or `warm_up`)."""

    def __init__(
        self,
        issuer: str,
        http: httpx2.Client,
        *,
        max_age: float,
        refresh_interval: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.issuer = issuer
        self._http = http
        self._lock = threading.Lock()
        self._metadata: IssuerMetadata | None = None
        self.keys = KeyCache(self._fetch_keys, max_age=max_age, refresh_interval=refresh_interval, clock=clock)

    def metadata(self) -> IssuerMetadata:
        """The issuer's metadata, discovered once (and again after a failed attempt).

        Raises:
            UnavailableError: discovery failed.
        """
        with self._lock:
            if self._metadata is None:
                self._metadata = discover(self._http, self.issuer)
            return self._metadata

    def key(self, kid: str | None) -> jwt.PyJWK | None:
        """The issuer's verification key named `kid`, or None (see `KeyCache.key`).

        Raises:
            UnavailableError: the metadata or the key set could not be fetched.
        """
        return self.keys.key(kid)

    def _fetch_keys(self) -> Mapping[str, Any]:
        return get_json(self._http, self.metadata().jwks_uri, what="issuer key set")
