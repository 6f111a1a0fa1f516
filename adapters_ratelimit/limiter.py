"""`LimitsRateLimiter`: moving-window counting with the `limits` library, in memory or in Redis.

In memory (`memory://`, the default) each process counts alone: right for one process, N times
the limit for `serve --workers N`. Redis (`redis://host:port/db`, `rediss://` for TLS) is shared
by every worker and every host pointed at it; each check is two short Lua calls.

An outage of the store must not become an outage of the bank: a failed or slow call (socket
timeouts of a quarter second, no client-side retries) allows the request, and for the next
`outage_pause` seconds requests are allowed without asking the store at all, so a dead Redis
costs one timeout per pause per process, not one per request. It is logged once per
`log_interval`, with the exception's type only (never the URL: it may hold a password).
"""

from __future__ import annotations

import logging
import threading
import time
from urllib.parse import urlsplit

from limits import RateLimitItemPerSecond
from limits.errors import ConfigurationError, StorageError
from limits.storage import MemoryStorage, RedisStorage, Storage, storage_from_string
from limits.strategies import MovingWindowRateLimiter

from memorybank_core.distribution import install_command
from memorybank_core.errors import InvalidInputError
from memorybank_core.ports import RateLimiter
from memorybank_core.rate_windows import RateLimit, WindowState

DEFAULT_STORAGE = "memory://"
"""In-process counters: nothing to run, nothing shared."""

KEY_PREFIX = "memorybank"
"""Every Redis key the limiter writes starts with this (then `:ratelimit/<operation>:...`, docs/operations.md)."""

NAMESPACE = "ratelimit"

#: Seconds a Redis call may take (connect, or wait for an answer) before the request is allowed anyway.
REDIS_TIMEOUT_SECONDS = 0.25

_SCHEMES = ("memory", "redis", "rediss", "redis+unix")

_log = logging.getLogger("memorybank.ratelimit")


def describe_storage(url: str) -> str:
    """The storage for logs: scheme, host and port, never a password."""
    parts = urlsplit(url)
    if parts.scheme == "memory":
        return "memory"
    host = parts.hostname or "localhost"
    return f"{parts.scheme}://{host}:{parts.port or 6379}{parts.path}"


class LimitsRateLimiter(RateLimiter):
    """The `RateLimiter` port on `limits`' moving window, over `memory://` or `redis://` storage."""

    def __init__(
        self,
        storage_url: str = DEFAULT_STORAGE,
        *,
        timeout_seconds: float = REDIS_TIMEOUT_SECONDS,
        outage_pause: float = 2.0,
        log_interval: float = 60.0,
    ) -> None:
        """Open (lazily: no connection is made here) the storage named by `storage_url`.

        Raises:
            InvalidInputError: ("rate_limit_storage") a URL that is not memory:// or redis(s)://,
                or Redis storage without the redis client installed.
        """
        try:
            scheme = urlsplit(storage_url).scheme
            urlsplit(storage_url).port  # noqa: B018 - parsed for its ValueError on a malformed port
        except ValueError:
            raise InvalidInputError("rate_limit_storage", "is not a URL (redis://host:port/db)") from None
        if scheme not in _SCHEMES:
            raise InvalidInputError(
                "rate_limit_storage", f"must be memory:// or a redis://host:port/db URL, not a {scheme or 'bare'} one"
            )
        self.storage_name = describe_storage(storage_url)
        self._storage = _open(storage_url, timeout_seconds)
        self._strategy = MovingWindowRateLimiter(self._storage)
        self._outage_pause = outage_pause
        self._log_interval = log_interval
        self._lock = threading.Lock()
        self._paused_until = 0.0
        self._last_logged = -float("inf")
        self._failures = 0

    def hit(self, *, key: str, limit: RateLimit) -> WindowState | None:
        """Count one request against `key` (moving window); None while the storage is unreachable."""
        if self._paused_until and time.monotonic() < self._paused_until:
            return None
        item = RateLimitItemPerSecond(limit.amount, limit.seconds, namespace=NAMESPACE)
        try:
            allowed = self._strategy.hit(item, key)
            stats = self._strategy.get_window_stats(item, key)
        except StorageError as error:
            self._outage(error.storage_error)
            return None
        if self._paused_until:
            self._recovered()
        return WindowState(
            allowed=allowed,
            limit=limit.amount,
            window_seconds=limit.seconds,
            remaining=max(0, stats.remaining),
            reset_seconds=max(0.0, stats.reset_time - time.time()),
        )

    def clear(self) -> None:
        """Forget every count (tests and benchmarks)."""
        self._storage.reset()

    def _outage(self, error: Exception) -> None:
        now = time.monotonic()
        with self._lock:
            self._paused_until = now + self._outage_pause
            self._failures += 1
            if now - self._last_logged < self._log_interval:
                return
            self._last_logged, failures, self._failures = now, self._failures, 0
        _log.warning(
            "rate_limit.storage_unavailable storage=%s error=%s failures=%d: requests are allowed unlimited "
            "until it answers",
            self.storage_name,
            type(error).__name__,
            failures,
            extra={
                "event": "rate_limit.storage_unavailable",
                "event_fields": {"error": type(error).__name__, "failures": failures},
            },
        )

    def _recovered(self) -> None:
        with self._lock:
            if not self._paused_until:
                return
            self._paused_until = 0.0
        _log.warning(
            "rate_limit.storage_recovered storage=%s",
            self.storage_name,
            extra={"event": "rate_limit.storage_recovered", "event_fields": {}},
        )


def _open(url: str, timeout_seconds: float) -> Storage:
    if url.startswith("memory"):
        return MemoryStorage()
    try:
        from redis.backoff import NoBackoff
        from redis.retry import Retry
    except ModuleNotFoundError as error:
        raise InvalidInputError(
            "rate_limit_storage", f"Redis storage needs the redis client: {install_command('redis')}"
        ) from error
    try:
        storage = storage_from_string(
            url,
            key_prefix=KEY_PREFIX,
            wrap_exceptions=True,
            socket_timeout=timeout_seconds,
            socket_connect_timeout=timeout_seconds,
            # redis-py retries a failed call 3 times with backoff by default: seconds, not a quarter second.
            retry=Retry(NoBackoff(), 0),  # type: ignore[arg-type]
        )
    except (ConfigurationError, ValueError) as error:
        raise InvalidInputError("rate_limit_storage", f"is not a usable Redis URL ({type(error).__name__})") from error
    if not isinstance(storage, RedisStorage):
        raise InvalidInputError("rate_limit_storage", "must be memory:// or a redis://host:port/db URL")
    return storage
