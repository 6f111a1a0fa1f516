"""An issuer's signing keys: fetched from its `jwks_uri`, cached, refetched when old or on an unknown `kid`."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import jwt

from memorybank_core import UnavailableError

logger = logging.getLogger("memorybank.oauth")

ASYMMETRIC_KEY_TYPES = frozenset({"RSA", "EC", "OKP"})
"""Only public keys verify issuer tokens: a shared-secret (`oct`) key in a published set is ignored."""


class KeyCache:
    """One issuer's key set, thread-safe.

    Keys are fetched on first use and again once `max_age` seconds old; a key set that cannot be
    fetched then is not used any longer (the caller gets `UnavailableError`, never a token checked
    against keys that may have been revoked). A token naming an unknown `kid` triggers one early
    refetch, at most once per `refresh_interval` seconds.
    """

    def __init__(
        self,
        fetch: Callable[[], Mapping[str, Any]],
        *,
        max_age: float,
        refresh_interval: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fetch = fetch
        self._max_age = max_age
        self._refresh_interval = refresh_interval
        self._clock = clock
        self._lock = threading.Lock()
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched_at: float | None = None

    def key(self, kid: str | None) -> jwt.PyJWK | None:
        """The verification key named `kid` (without a `kid`: the only key, if there is exactly one), or None.

        Raises:
            UnavailableError: the key set is due for a fetch and the fetch failed.
        """
        with self._lock:
            now = self._clock()
            if self._fetched_at is None or now - self._fetched_at >= self._max_age:
                self._refresh(now)
            found = self._lookup(kid)
            fetched_at = now if self._fetched_at is None else self._fetched_at
            if found is None and now - fetched_at >= self._refresh_interval:
                logger.info("oauth.jwks_refresh reason=unknown_kid")
                self._refresh(now)
                found = self._lookup(kid)
            return found

    def _lookup(self, kid: str | None) -> jwt.PyJWK | None:
        if kid is None:
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None
        return self._keys.get(kid)

    def _refresh(self, now: float) -> None:
        try:
            document = self._fetch()
        except UnavailableError:
            self._keys = {}
            self._fetched_at = None
            raise
        self._keys = _usable_keys(document)
        self._fetched_at = now


def _usable_keys(document: Mapping[str, Any]) -> dict[str, jwt.PyJWK]:
    keys: dict[str, jwt.PyJWK] = {}
    entries = document.get("keys")
    if not isinstance(entries, list):
        raise UnavailableError("the issuer's key set has no keys")
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("kty") not in ASYMMETRIC_KEY_TYPES:
            continue
        if entry.get("use", "sig") != "sig":
            continue
        try:
            key = jwt.PyJWK(entry)
        except jwt.PyJWTError:
            continue  # an algorithm or curve we do not support: skip it, as RFC 7517 section 5 advises
        keys[str(entry.get("kid", ""))] = key
    return keys
