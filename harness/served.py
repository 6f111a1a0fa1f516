"""Run `memorybank serve` as a real process on a free port, for end-to-end tests and the benchmark."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import attrs
import httpx2

REPO_ROOT = Path(__file__).resolve().parent.parent
STARTUP_SECONDS = 90.0

NO_RATE_LIMITS = ("--rate-limit", "*=off")
"""`serve` arguments for load tests of something else: their synthetic users send far more than a person does."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def memorybank_command(*args: str, module: str = "memorybank", python: str = sys.executable) -> list[str]:
    """The argv that runs the `memorybank` command from this checkout (or a `module` that wraps it).

    `python` is another environment's interpreter (the install tier's wheel-installed virtualenv).
    """
    return [python, "-m", module, *args]


def run_memorybank(
    args: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run one `memorybank` command to completion, capturing its output."""
    return subprocess.run(  # noqa: S603 - our own command, no shell
        memorybank_command(*args),
        cwd=REPO_ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_shell(
    command: str, *, cwd: Path, env: Mapping[str, str], timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run a documented shell command with bash (`-euo pipefail`), as a reader would paste it; capture its output."""
    return subprocess.run(  # noqa: S603 - commands from our own docs
        ["bash", "-euo", "pipefail", "-c", command],  # noqa: S607
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@attrs.frozen
class Server:
    """A running `memorybank serve`: where it answers, and its process (to inspect its file descriptors)."""

    base_url: str
    pid: int
    process: subprocess.Popen[str]
    """The supervisor (to signal it), or the one process without workers."""


@contextmanager
def served(
    db_url: str | None,
    *,
    env: Mapping[str, str] | None = None,
    log: Path | None = None,
    args: Sequence[str] = (),
) -> Iterator[str]:
    """Run `memorybank serve [args]` until the block ends; yield its base URL once it answers.

    Raises:
        RuntimeError: the server exited or did not answer in time (with its output).
    """
    with serving(db_url, env=env, log=log, args=args) as server:
        yield server.base_url


@contextmanager
def serving(
    db_url: str | None,
    *,
    env: Mapping[str, str] | None = None,
    log: Path | None = None,
    args: Sequence[str] = (),
    module: str = "memorybank",
    port: int | None = None,
    python: str = sys.executable,
    cwd: Path = REPO_ROOT,
) -> Iterator[Server]:
    """Like `served`, yielding the process too (to signal it, or to read its CPU time).

    `module` runs the command through a wrapper (the throughput benchmark's profiler); `port` is one
    chosen in advance (e.g. registered at an identity provider), else a free one. `python` and `cwd`
    run another environment's memorybank from outside this checkout (the install tier's wheel).

    Raises:
        RuntimeError: the server exited or did not answer in time (with its output).
    """
    port = port or free_port()
    argv = ["serve", "--port", str(port), *args] + (["--db", db_url] if db_url is not None else [])
    log_path = log or Path(os.devnull)
    with log_path.open("w") as output:
        process = subprocess.Popen(  # noqa: S603 - our own command, no shell
            memorybank_command(*argv, module=module, python=python),
            cwd=cwd,
            env={**os.environ, **(env or {})},
            stdout=output,
            stderr=subprocess.STDOUT,
            text=True,
        )
        base_url = f"http://127.0.0.1:{port}"
        try:
            _wait_until_answering(process, base_url, log_path)
            yield Server(base_url=base_url, pid=process.pid, process=process)
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_until_answering(process: subprocess.Popen[str], base_url: str, log_path: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"memorybank serve exited with {process.returncode}: {_tail(log_path)}")
        try:
            if httpx2.get(f"{base_url}/openapi.json", timeout=1).status_code == 200:
                return
        except httpx2.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"memorybank serve did not answer within {STARTUP_SECONDS} s: {_tail(log_path)}")


def _tail(log_path: Path) -> str:
    try:
        return log_path.read_text()[-2000:]
    except OSError:
        return "(no log)"
