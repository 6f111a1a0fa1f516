"""What /mcp/agent settles before the SDK: POST only, one Authorization header, short protocol errors, a quiet log."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from adapters_http import MAX_BODY_BYTES
from harness.served import serving
from tests.http.conftest import TWO_AUTHORIZATION_HEADERS_ANSWER
from tests.mcp.conftest import MCP_ACCEPT, RpcCaller
from tests.rail_users import create_database, new_user

_LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


# GET is driven against a real server below: before the fix it opened a stream that never ended.
@pytest.mark.parametrize("method", ["DELETE", "PUT", "PATCH", "HEAD"])
def test_every_method_but_post_is_405_allow_post(client: TestClient, rpc_alice: RpcCaller, method: str) -> None:
    response = client.request(
        method,
        "/mcp/agent",
        headers={"Authorization": f"Bearer {rpc_alice.secret}", "Accept": "text/event-stream"},
    )

    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    if method != "HEAD":
        assert response.json() == {"error": "method_not_allowed", "message": "Method not allowed here."}


def _open_descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_fifty_event_stream_gets_leave_no_stream_or_descriptor_open(tmp_path: Path) -> None:
    db_url = create_database(tmp_path)
    secret = new_user(db_url).secret
    headers = {"Authorization": f"Bearer {secret}", "Accept": "text/event-stream"}

    with serving(db_url, log=tmp_path / "serve.log") as server:
        with httpx2.Client(base_url=server.base_url, headers=headers, timeout=5) as warm:
            warm.get("/mcp/agent")  # the first request opens lazily created descriptors; count after it
        before = _open_descriptors(server.pid)
        statuses = []
        for _ in range(50):
            # A new connection each time, closed afterwards: an open stream would hold the server's side open.
            with httpx2.Client(base_url=server.base_url, headers=headers, timeout=5) as client:
                statuses.append(client.get("/mcp/agent").status_code)
        after = _open_descriptors(server.pid)

    assert statuses == [405] * 50
    assert after - before < 5


def test_two_authorization_headers_are_400_never_the_first_one_wins(client: TestClient, rpc_alice: RpcCaller) -> None:
    response = client.post(
        "/mcp/agent",
        content=json.dumps(_LIST_TOOLS),
        headers=[
            ("Authorization", f"Bearer {rpc_alice.secret}"),
            ("Authorization", "Bearer mbk_someone-else"),
            ("Accept", MCP_ACCEPT),
            ("Content-Type", "application/json"),
        ],
    )

    assert response.status_code == 400
    assert response.json() == TWO_AUTHORIZATION_HEADERS_ANSWER


def _post_raw(client: TestClient, secret: str, body: bytes) -> Any:
    return client.post(
        "/mcp/agent",
        content=body,
        headers={"Authorization": f"Bearer {secret}", "Accept": MCP_ACCEPT, "Content-Type": "application/json"},
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"foo": 1}', 'Invalid request: "jsonrpc" must be "2.0"'),
        (b"[1, 2]", "Invalid request: send one JSON-RPC message per request, not a batch"),
        (b"not json", "Parse error: the body is not valid JSON"),
        (b'"text"', "Invalid request: the body must be a JSON-RPC message object"),
        (
            b'{"jsonrpc": "2.0", "id": {"x": 1}, "method": "tools/list"}',
            'Invalid request: "id" must be a string or an integer',
        ),
        (b'{"jsonrpc": "2.0", "id": 1, "method": 7}', 'Invalid request: "method" must be a string'),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": [1]}',
            'Invalid request: "params" must be an object',
        ),
        (
            b'{"jsonrpc": "2.0", "id": 1}',
            'Invalid request: a request needs "method"; a response needs "result" or "error"',
        ),
    ],
)
def test_a_malformed_message_gets_a_short_specific_error_not_a_validation_dump(
    client: TestClient, rpc_alice: RpcCaller, body: bytes, message: str
) -> None:
    response = _post_raw(client, rpc_alice.secret, body)

    assert response.status_code == 400
    assert response.json()["error"]["message"] == message


def test_deeply_nested_json_is_a_json_rpc_parse_error_not_a_500(client: TestClient, rpc_alice: RpcCaller) -> None:
    # Issue 27, finding 2: 200,000 brackets reached the SDK and a RecursionError answered a plain-text 500.
    body = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":' + b"[" * 200_000 + b"]" * 200_000 + b"}"

    response = _post_raw(client, rpc_alice.secret, body)

    assert response.status_code == 400
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error: the body is not valid JSON"},
    }


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc": "2.0", "id": 1, "id": 2, "method": "tools/list"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "execute_capability", '
        b'"arguments": {"name": "postMemory", "body": {"content": "first", "content": "second"}}}}',
    ],
    ids=["in the envelope", "in a tool's arguments"],
)
def test_a_message_that_names_a_key_twice_is_a_parse_error_and_saves_nothing(
    client: TestClient, rpc_alice: RpcCaller, body: bytes
) -> None:
    # Issue 27, finding 4: whoever reads the first key (a proxy, a log) must not judge another request.
    response = _post_raw(client, rpc_alice.secret, body)

    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": -32700,
        "message": "Parse error: an object in the body names the same key twice",
    }
    listed = rpc_alice.execute("getMemory")
    assert json.loads(listed["content"][0]["text"])["memories"] == []


def _padded_list_tools(size: int) -> bytes:
    """A valid `tools/list` message of exactly `size` bytes (padded in an ignored params field)."""
    bare = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"pad": ""}}).encode()
    return bare.replace(b'"pad": ""', b'"pad": "' + b"p" * (size - len(bare)) + b'"')


def _assert_refused_as_too_large(response: Any) -> None:
    assert response.status_code == 413
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": f"Request too large: the body must be at most {MAX_BODY_BYTES} bytes"},
    }


def test_a_3_mb_message_is_refused_with_a_json_rpc_413_at_the_rest_cap(
    client: TestClient, rpc_alice: RpcCaller
) -> None:
    response = _post_raw(client, rpc_alice.secret, _padded_list_tools(3 * 1000 * 1000))

    _assert_refused_as_too_large(response)


def test_a_chunked_message_without_content_length_is_refused_once_it_passes_the_cap(
    client: TestClient, rpc_alice: RpcCaller
) -> None:
    body = _padded_list_tools(3 * 1000 * 1000)

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(body), 64 * 1024):
            yield body[start : start + 64 * 1024]

    response = client.post(
        "/mcp/agent",
        content=chunks(),
        headers={
            "Authorization": f"Bearer {rpc_alice.secret}",
            "Accept": MCP_ACCEPT,
            "Content-Type": "application/json",
        },
    )

    assert "content-length" not in {name.lower() for name in response.request.headers}
    _assert_refused_as_too_large(response)


def test_a_message_of_exactly_the_cap_is_served(client: TestClient, rpc_alice: RpcCaller) -> None:
    response = _post_raw(client, rpc_alice.secret, _padded_list_tools(MAX_BODY_BYTES))

    assert response.status_code == 200, response.text[:200]
    _assert_refused_as_too_large(_post_raw(client, rpc_alice.secret, _padded_list_tools(MAX_BODY_BYTES + 1)))


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=8,
)
_MESSAGES = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2]),
        "id": _JSON,
        "method": st.sampled_from(["tools/list", "tools/call", "ping"]) | _JSON,
        "params": _JSON,
        "result": _JSON,
        "error": _JSON,
    },
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(message=_MESSAGES | _JSON)
def test_no_body_is_answered_with_the_input_echoed_back(client: TestClient, rpc_alice: RpcCaller, message: Any) -> None:
    response = _post_raw(client, rpc_alice.secret, json.dumps(message).encode())

    assert response.status_code < 500
    text = response.text
    assert "validation error" not in text.lower()
    assert "pydantic" not in text
    assert "input_value" not in text


def test_a_stateless_post_logs_no_terminating_session_line_but_errors_still_show(
    rpc_alice: RpcCaller, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        rpc_alice.post("tools/list")
        logging.getLogger("mcp.server.streamable_http").error("a real transport error")

    messages = [record.getMessage() for record in caplog.records]
    assert not any(message.startswith("Terminating session") for message in messages)
    assert "a real transport error" in messages
