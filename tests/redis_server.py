"""Redis for tests: the shared server named by MEMORYBANK_TEST_REDIS_URL, or a private one a test may stop.

Unset (or unreachable), Redis tests skip with a loud reason, except under CI=true, where they fail:
CI never silently skips Redis. A test that needs to take Redis down starts its own `redis-server`
on a free port and stops it by pid; the shared server is never touched beyond its own keys.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import redis

from harness.ci import in_ci
from harness.served import free_port

ENV_VAR = "MEMORYBANK_TEST_REDIS_URL"


def _unavailable(reason: str) -> None:
    if in_ci():
        pytest.fail(f"{reason}, and under CI=true Redis tests must run, not skip", pytrace=False)
    pytest.skip(f"REDIS TESTS SKIPPED: {reason}")


def shared_redis_url() -> str:
    """The shared test server's URL (checked with a PING); skips the calling test, or fails it under CI."""
    url = os.environ.get(ENV_VAR, "").strip()
    if not url:
        _unavailable(f"set {ENV_VAR}=redis://127.0.0.1:6379/0 to run them")
    try:
        with redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2) as client:
            client.ping()
    except redis.RedisError as error:
        _unavailable(f"the Redis server named by {ENV_VAR} cannot be reached ({type(error).__name__})")
    return url


class PrivateRedis:
    """A `redis-server` of our own on a free loopback port, without persistence, that a test may stop and restart."""

    def __init__(self, workdir: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            _unavailable("redis-server is not installed (apt-get install redis-server)")
        self._binary = binary or ""
        self._workdir = workdir
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start it and wait until it answers PING."""
        self._process = subprocess.Popen(  # noqa: S603 - a fixed binary and our own arguments
            [self._binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            cwd=self._workdir,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with redis.Redis(port=self.port, socket_timeout=0.5, socket_connect_timeout=0.5) as client:
                    client.ping()
                return
            except redis.ConnectionError:
                time.sleep(0.05)
        self.stop()
        pytest.fail("a private redis-server did not answer within 10 s", pytrace=False)

    def stop(self) -> None:
        """Stop it (by its pid) and wait for it to exit."""
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=10)
            self._process = None
