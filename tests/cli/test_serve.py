"""`memorybank serve`: a port already in use, and the Host names a reverse proxy forwards to the rail."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx2
import pytest

from harness.served import free_port, run_memorybank, served
from memorybank.commands import serve
from tests.rail_users import create_database, new_user

#: Real `memorybank serve` processes: the serve_processes tier (its own step in .ci/run).
pytestmark = pytest.mark.serve_processes

_LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


def test_a_port_in_use_is_one_clear_line_before_any_serving_banner(tmp_path: Path) -> None:
    port = free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()

        result = run_memorybank(["serve", "--port", str(port), "--db", f"sqlite:///{tmp_path / 'bank.sqlite3'}"])

    assert result.returncode == 1
    assert "serving" not in result.stdout
    assert result.stderr == (
        f"memorybank: error: port {port} on 127.0.0.1 is already in use: "
        "stop what listens there or choose another with --port\n"
    )


def _rail_status(base_url: str, secret: str, host: str) -> int:
    response = httpx2.post(
        f"{base_url}/mcp/agent",
        json=_LIST_TOOLS,
        headers={
            "Authorization": f"Bearer {secret}",
            "Accept": "application/json, text/event-stream",
            "Host": host,
            "Origin": f"https://{host}",
        },
        timeout=10,
    )
    return response.status_code


@pytest.mark.parametrize("how", ["option", "environment"])
def test_the_rail_serves_the_host_names_a_reverse_proxy_forwards_once_allowed(tmp_path: Path, how: str) -> None:
    db_url = create_database(tmp_path)
    secret = new_user(db_url).secret
    args = ["--allowed-host", "bank.example.com", "--allowed-host", "mcp.example.com"] if how == "option" else []
    env = {"MEMORYBANK_ALLOWED_HOSTS": "bank.example.com, mcp.example.com"} if how == "environment" else {}

    with served(db_url, log=tmp_path / "allowed.log", args=args, env=env) as base_url:
        allowed = [_rail_status(base_url, secret, host) for host in ("bank.example.com", "mcp.example.com")]
        loopback = _rail_status(base_url, secret, base_url.removeprefix("http://"))
        other = _rail_status(base_url, secret, "evil.example.net")
    with served(db_url, log=tmp_path / "default.log") as base_url:
        by_default = _rail_status(base_url, secret, "bank.example.com")

    assert allowed == [200, 200]
    assert loopback == 200
    assert other == 421
    assert by_default == 421


@pytest.mark.parametrize("value", ["https://bank.example.com", "bank.example.com/mcp", "bank example"])
def test_an_allowed_host_that_is_not_a_host_name_is_refused_in_one_line(tmp_path: Path, value: str) -> None:
    result = run_memorybank(
        ["serve", "--port", "0", "--allowed-host", value, "--db", f"sqlite:///{tmp_path / 'bank.sqlite3'}"]
    )

    assert result.returncode == 2
    assert result.stderr.startswith("memorybank: error: --allowed-host must be a Host header such as")
    assert result.stderr.count("\n") == 1


def test_the_single_worker_listener_hands_out_tcp_sockets_so_asyncio_turns_nagle_off() -> None:
    # asyncio sets TCP_NODELAY only on accepted sockets whose proto is IPPROTO_TCP; with proto 0
    # every keep-alive response waited ~40 ms for the client's delayed ACK.
    listener = serve._listen("127.0.0.1", 0)
    with listener:
        listener.listen()
        with socket.create_connection(listener.getsockname()[:2]):
            accepted, _ = listener.accept()
            with accepted:
                assert accepted.proto == socket.IPPROTO_TCP


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        (["--rate-limit", "search=lots"], {}, "--rate-limit must look like 120/minute"),
        (["--rate-limit", "find=10/minute"], {}, "--rate-limit must be OPERATION=LIMIT"),
        ([], {"MEMORYBANK_RATE_LIMITS": "save=1/minute,oops"}, "--rate-limit must be OPERATION=LIMIT"),
        (["--rate-limit-storage", "mysql://127.0.0.1/x"], {}, "--rate-limit-storage must be memory://"),
        ([], {"MEMORYBANK_RATE_LIMIT_STORAGE": "redis://h:port"}, "--rate-limit-storage is not a URL"),
    ],
)
def test_a_bad_rate_limit_setting_is_refused_in_one_line_before_serving(
    tmp_path: Path, args: list[str], env: dict[str, str], expected: str
) -> None:
    result = run_memorybank(["serve", "--port", "0", *args, "--db", f"sqlite:///{tmp_path / 'bank.sqlite3'}"], env=env)

    assert result.returncode == 2
    assert result.stderr.startswith(f"memorybank: error: {expected}"), result.stderr
    assert result.stderr.count("\n") == 1
    assert "serving" not in result.stdout


def test_serve_names_its_rate_limits_and_their_storage_without_a_password(tmp_path: Path) -> None:
    db_url = create_database(tmp_path)
    log = tmp_path / "serve.log"
    # redis-py takes the password in the user part or in the query: neither may reach the log.
    env = {"MEMORYBANK_RATE_LIMIT_STORAGE": "redis://:s3cretpw@127.0.0.1:1/0?password=0therpw"}

    with served(db_url, log=log, args=["--rate-limit", "search=300/minute"], env=env):
        pass

    text = log.read_text()
    assert "rate limits save=60/minute, search=300/minute, list=120/minute, delete=120/minute" in text
    assert "counted in redis://127.0.0.1:1/0" in text
    assert "s3cretpw" not in text
    assert "0therpw" not in text
