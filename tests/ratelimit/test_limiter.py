"""`LimitsRateLimiter` on each storage: the moving window, its sharing, and its outages."""

from __future__ import annotations

import hashlib
import logging
import re
import socket
from collections.abc import Iterator

import pytest
import redis

from adapters_ratelimit import LimitsRateLimiter
from harness.served import REPO_ROOT, free_port
from memorybank_core import InvalidInputError, RateLimit
from memorybank_core.ids import TOKEN_PREFIX, USER_PREFIX, new_id
from memorybank_core.rate_limits import Operation, rate_limit_key
from tests.redis_server import PrivateRedis, shared_redis_url

THREE_PER_MINUTE = RateLimit(3, 60)


def _user_key() -> str:
    return rate_limit_key(Operation.SEARCH, user_id=new_id(USER_PREFIX))


def test_the_limit_allows_n_requests_then_refuses_and_a_refusal_is_not_counted(storage_url: str) -> None:
    limiter = LimitsRateLimiter(storage_url)
    key = _user_key()

    states = [limiter.hit(key=key, limit=THREE_PER_MINUTE) for _ in range(5)]

    assert all(state is not None for state in states)
    assert [(s.allowed, s.remaining) for s in states if s is not None] == [
        (True, 2),
        (True, 1),
        (True, 0),
        (False, 0),
        (False, 0),
    ]
    refused = states[-1]
    assert refused is not None
    assert refused.limit == 3
    assert refused.window_seconds == 60
    assert 58 < refused.reset_seconds <= 60
    assert refused.retry_after() in (59, 60)


def test_each_key_has_its_own_window(storage_url: str) -> None:
    limiter = LimitsRateLimiter(storage_url)
    flooded, quiet = _user_key(), _user_key()
    for _ in range(4):
        limiter.hit(key=flooded, limit=THREE_PER_MINUTE)

    state = limiter.hit(key=quiet, limit=THREE_PER_MINUTE)

    assert state is not None
    assert (state.allowed, state.remaining) == (True, 2)


def test_two_limiters_on_one_redis_share_the_count_as_two_processes_would() -> None:
    url = shared_redis_url()
    first, second = LimitsRateLimiter(url), LimitsRateLimiter(url)
    key = _user_key()

    answers = [(first if n % 2 else second).hit(key=key, limit=THREE_PER_MINUTE) for n in range(4)]

    assert [a.allowed for a in answers if a is not None] == [True, True, True, False]


def test_two_limiters_in_memory_count_alone() -> None:
    first, second = LimitsRateLimiter(), LimitsRateLimiter()
    key = _user_key()
    for _ in range(3):
        first.hit(key=key, limit=THREE_PER_MINUTE)

    state = second.hit(key=key, limit=THREE_PER_MINUTE)

    assert state is not None
    assert state.allowed


def _documented_key() -> str:
    """The key docs/operations.md shows an operator, e.g. `memorybank:ratelimit/search:u:usr_…/120/60/second`."""
    match = re.search(r"Keys look like\s+`([^`]+)`", (REPO_ROOT / "docs" / "operations.md").read_text())
    assert match, "docs/operations.md no longer shows a rate-limit key"
    return match.group(1)


def test_redis_keys_are_the_documented_ones_naming_the_user_but_never_a_credential() -> None:
    # An operator finds and clears a user's counters by the key docs/operations.md shows.
    documented = _documented_key()
    # memorybank:ratelimit / <operation>:u:usr_… / <amount> / <seconds> / second
    _, operation_and_user, amount, seconds, _ = documented.split("/")
    operation = operation_and_user.split(":")[0]
    url = shared_redis_url()
    user_id, token_id = new_id(USER_PREFIX), new_id(TOKEN_PREFIX)
    limit = RateLimit(int(amount), int(seconds))
    limiter = LimitsRateLimiter(url)
    limiter.hit(key=rate_limit_key(Operation(operation), user_id=user_id), limit=limit)
    limiter.hit(key=rate_limit_key(Operation(operation), credential_id=token_id), limit=limit)

    token_digest = hashlib.sha256(token_id.encode()).hexdigest()
    with redis.Redis.from_url(url) as client:
        assert client.exists(documented.replace("usr_…", user_id))
        assert client.exists(documented.replace("u:usr_…", f"t:{token_digest}"))
        keys = [key.decode() for key in client.scan_iter(match="memorybank:*")]
    assert all(token_id not in key for key in keys)


@pytest.mark.parametrize(
    "url",
    ["mysql://127.0.0.1/x", "http://127.0.0.1:6379", "memcached://127.0.0.1:11211", "redis", "redis://host:notaport"],
)
def test_an_unusable_storage_url_is_refused_at_start(url: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        LimitsRateLimiter(url)

    assert raised.value.problems[0].path == "rate_limit_storage"


def test_a_password_in_the_storage_url_never_reaches_a_log(caplog: pytest.LogCaptureFixture) -> None:
    port = free_port()
    limiter = LimitsRateLimiter(f"redis://:hunter2secret@127.0.0.1:{port}/0")

    with caplog.at_level(logging.WARNING, logger="memorybank.ratelimit"):
        assert limiter.hit(key=_user_key(), limit=THREE_PER_MINUTE) is None

    assert caplog.records
    assert "hunter2secret" not in caplog.text


def test_redis_on_a_dead_port_allows_every_request_and_logs_once(caplog: pytest.LogCaptureFixture) -> None:
    limiter = LimitsRateLimiter(f"redis://127.0.0.1:{free_port()}/0", outage_pause=0.0)

    with caplog.at_level(logging.WARNING, logger="memorybank.ratelimit"):
        answers = [limiter.hit(key=_user_key(), limit=RateLimit(1, 60)) for _ in range(5)]

    assert answers == [None] * 5
    outages = [r for r in caplog.records if "rate_limit.storage_unavailable" in r.getMessage()]
    assert len(outages) == 1
    assert "ConnectionError" in outages[0].getMessage()


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP port that accepts connections and never answers: a hung Redis."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield listener.getsockname()[1]


def test_a_redis_that_never_answers_times_out_and_allows_the_request(silent_server: int) -> None:
    limiter = LimitsRateLimiter(f"redis://127.0.0.1:{silent_server}/0", timeout_seconds=0.1)

    assert limiter.hit(key=_user_key(), limit=THREE_PER_MINUTE) is None
    # During the pause after a failure the store is not asked at all: no second timeout per request.
    assert limiter.hit(key=_user_key(), limit=THREE_PER_MINUTE) is None


def test_a_redis_that_stops_then_returns_fails_open_then_limits_again(
    private_redis: PrivateRedis, caplog: pytest.LogCaptureFixture
) -> None:
    limiter = LimitsRateLimiter(private_redis.url, outage_pause=0.0)
    key = _user_key()
    one_per_minute = RateLimit(1, 60)
    first = limiter.hit(key=key, limit=one_per_minute)
    assert first is not None
    assert first.allowed

    private_redis.stop()
    with caplog.at_level(logging.WARNING, logger="memorybank.ratelimit"):
        during = [limiter.hit(key=key, limit=one_per_minute) for _ in range(3)]
        private_redis.start()  # same port, empty (no persistence): the count starts again
        after = [limiter.hit(key=key, limit=one_per_minute) for _ in range(2)]

    assert during == [None, None, None]
    assert [(a.allowed if a else None) for a in after] == [True, False]
    messages = [r.getMessage() for r in caplog.records]
    assert sum("rate_limit.storage_unavailable" in m for m in messages) == 1
    assert sum("rate_limit.storage_recovered" in m for m in messages) == 1
