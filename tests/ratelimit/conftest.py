"""Fixtures for the rate limiter: each storage, and a private Redis a test may stop."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.redis_server import PrivateRedis, shared_redis_url


@pytest.fixture(params=["memory", "redis"])
def storage_url(request: pytest.FixtureRequest) -> str:
    """Each storage the limiter supports: in-process memory, and the shared test Redis."""
    if request.param == "memory":
        return "memory://"
    return shared_redis_url()


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()
