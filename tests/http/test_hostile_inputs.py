"""Hostile and malformed input: every one answered in the documented error shape, never a 5xx."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from adapters_http import MAX_BODY_BYTES
from memorybank_core import limits
from tests.http.conftest import Caller


def _post_raw(
    caller: Caller, body: bytes, content_type: str | None = "application/json"
) -> tuple[int, dict[str, object]]:
    headers = dict(caller.headers)
    if content_type is not None:
        headers["Content-Type"] = content_type
    response = caller.client.post("/v1/memory", content=body, headers=headers)
    return response.status_code, response.json()


def _invalid_paths(body: dict[str, object]) -> list[object]:
    assert body["error"] == "invalid_request"
    details = body["details"]
    assert isinstance(details, list)
    return [d["path"] for d in details]


@pytest.mark.parametrize(
    "raw",
    [
        b"{",
        b'{"content": "x",}',
        b"",
        b"null",
        b"not json",
        b'{"content": NaN}',
        b'{"content": "x"} trailing',
        b"\xff\xfe{}",
        b'{"content": "caf\xe9"}',  # Latin-1, not UTF-8
        b"\xef\xbb\xbf{}",  # a UTF-8 byte order mark
        b'{"content": 1' + b"0" * 5000 + b"}",  # over Python's integer-digits limit
    ],
)
def test_malformed_json_is_a_400_naming_the_body(as_alice: Caller, raw: bytes) -> None:
    status, body = _post_raw(as_alice, raw)

    assert status == 400
    assert _invalid_paths(body) in (["body"], ["content"])


@pytest.mark.parametrize(
    ("path", "raw"),
    [
        ("/v1/memory", b'{"content": "first", "content": "second"}'),
        ("/v1/memory", b'{"content": "x", "contexts": [{"snippet": "a", "snippet": "b"}]}'),
        ("/v1/memory/delete-all", b'{"confirm": "nope", "confirm": "delete all"}'),
    ],
    ids=["save", "a nested object", "delete-all"],
)
def test_a_body_that_names_a_key_twice_is_a_400_and_changes_nothing(as_alice: Caller, path: str, raw: bytes) -> None:
    # Issue 27, finding 4: last-one-wins let `{"confirm": "nope", "confirm": "delete all"}` delete everything, while
    # a proxy reading the first key saw "nope". Refused, as a repeated query parameter is.
    as_alice.saved_id("kept")
    headers = {**as_alice.headers, "Content-Type": "application/json"}

    response = as_alice.client.post(path, content=raw, headers=headers)

    assert response.status_code == 400
    assert response.json()["details"] == [{"path": "body", "message": "must not name the same key twice in one object"}]
    assert [m["content"] for m in as_alice.list().json()["memories"]] == ["kept"]


@pytest.mark.parametrize("raw", [b"[]", b'[{"content": "x"}]', b'"content"', b"42", b"true"])
def test_a_body_that_is_not_an_object_is_a_400(as_alice: Caller, raw: bytes) -> None:
    status, body = _post_raw(as_alice, raw)

    assert status == 400
    assert _invalid_paths(body) == ["body"]


def test_deeply_nested_json_is_a_400_not_a_crash(as_alice: Caller) -> None:
    depth = 200_000
    raw = b'{"content": "x", "tags": ' + b"[" * depth + b"]" * depth + b"}"
    assert len(raw) < MAX_BODY_BYTES

    status, body = _post_raw(as_alice, raw)

    assert status == 400
    assert _invalid_paths(body) == ["body"]


def test_deeply_nested_objects_in_an_ignored_field_are_a_400_too(as_alice: Caller) -> None:
    depth = 100_000
    raw = b'{"content": "x", "extra": ' + b'{"a":' * depth + b"1" + b"}" * depth + b"}"

    status, _ = _post_raw(as_alice, raw)

    assert status == 400


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        (b'{"content": "\\ud800"}', "content"),
        (b'{"content": "ok \\udfff ok"}', "content"),
        (b'{"content": "x", "tags": ["\\udc00"]}', "tags.0"),
        (b'{"content": "x", "contexts": [{"snippet": "\\ud83d"}]}', "contexts.0.snippet"),
        (b'{"content": "nul \\u0000 inside"}', "content"),
    ],
)
def test_lone_surrogates_and_nul_are_a_400_naming_the_field(as_alice: Caller, raw: bytes, path: str) -> None:
    status, body = _post_raw(as_alice, raw)

    assert status == 400
    assert _invalid_paths(body) == [path]


def test_a_valid_surrogate_pair_is_one_character_and_accepted(as_alice: Caller) -> None:
    status, body = _post_raw(as_alice, b'{"content": "rocket \\ud83d\\ude80"}')

    assert status == 201
    assert body["memory"]["content"] == "rocket \U0001f680"  # type: ignore[index]


def test_every_invalid_field_is_reported_at_once_with_dotted_paths(as_alice: Caller) -> None:
    response = as_alice.client.post(
        "/v1/memory",
        json={
            "content": "   ",
            "tags": ["ok", "", 7],
            "contexts": [{"snippet": "x" * (limits.SNIPPET.max + 1)}, {"snippet": "s", "origin": "elsewhere"}, "no"],
        },
        headers=as_alice.headers,
    )

    assert response.status_code == 400
    details = response.json()["details"]
    assert [d["path"] for d in details] == [
        "content",
        "tags.1",
        "tags.2",
        "contexts.0.snippet",
        "contexts.1.origin",
        "contexts.2",
    ]
    assert details[0]["message"] == limits.CONTENT.describe()


@pytest.mark.parametrize(
    "body",
    [
        {"content": "x" * (limits.CONTENT.max + 1)},
        {"content": "x", "tags": [f"t{n}" for n in range(limits.TAGS_MAX + 1)]},
        {"content": "x", "tags": ["t" * (limits.TAG.max + 1)]},
        {"content": "x", "contexts": [{"snippet": "s"}] * (limits.CONTEXTS_MAX + 1)},
        {"content": "x", "contexts": [{"snippet": "s", "message_id": "m" * (limits.CITATION_ID.max + 1)}]},
        {"content": "x", "tags": "not-a-list"},
        {"content": "x", "contexts": {"snippet": "not a list"}},
        {"content": ["x"]},
        {},
    ],
)
def test_out_of_bounds_saves_are_a_400_and_store_nothing(as_alice: Caller, body: dict[str, object]) -> None:
    response = as_alice.client.post("/v1/memory", json=body, headers=as_alice.headers)

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"
    assert as_alice.list().json()["memories"] == []


def test_content_at_the_bound_is_accepted(as_alice: Caller) -> None:
    assert as_alice.save("x" * limits.CONTENT.max).status_code == 201


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml"],
)
def test_a_save_that_is_not_json_is_a_415(as_alice: Caller, content_type: str | None) -> None:
    status, body = _post_raw(as_alice, b'{"content": "x"}', content_type=content_type)

    assert status == 415
    assert body["error"] == "unsupported_media_type"


@pytest.mark.parametrize(
    "content_type", ["application/json; charset=utf-8", "APPLICATION/JSON", "application/vnd.x+json"]
)
def test_json_media_types_with_parameters_or_suffixes_are_accepted(as_alice: Caller, content_type: str) -> None:
    status, _ = _post_raw(as_alice, b'{"content": "x"}', content_type=content_type)

    assert status == 201


def test_a_body_over_the_cap_is_a_413_and_nothing_is_stored(as_alice: Caller) -> None:
    raw = json.dumps({"content": "x", "padding": "p" * MAX_BODY_BYTES}).encode()

    status, body = _post_raw(as_alice, raw)

    assert status == 413
    assert body["error"] == "payload_too_large"
    assert str(MAX_BODY_BYTES) in str(body["message"])
    assert as_alice.list().json()["memories"] == []


def test_a_streamed_body_without_content_length_is_cut_off_at_the_cap(as_alice: Caller) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"content": "x", "padding": "'
        for _ in range(64):  # 4 MiB, chunked: only counting the bytes read can catch it
            yield b"p" * 65536
        yield b'"}'

    response = as_alice.client.post(
        "/v1/memory", content=chunks(), headers={**as_alice.headers, "Content-Type": "application/json"}
    )

    assert response.status_code == 413
    assert "content-length" not in {k.lower() for k in response.request.headers}


def test_the_largest_valid_save_fits_well_under_the_cap_even_fully_escaped(as_alice: Caller) -> None:
    astral = "\U0001f680"  # 4 bytes in UTF-8, 12 as a \\uXXXX\\uXXXX escape: the worst case per character
    body = {
        "content": astral * limits.CONTENT.max,
        "tags": [f"{i:02d}" + astral * (limits.TAG.max - 2) for i in range(limits.TAGS_MAX)],
        "contexts": [
            {
                "snippet": astral * limits.SNIPPET.max,
                "conversation_id": astral * limits.CITATION_ID.max,
                "message_id": astral * limits.CITATION_ID.max,
                "origin": "searched_conversation",
            }
        ]
        * limits.CONTEXTS_MAX,
    }
    raw = json.dumps(body, ensure_ascii=True).encode()
    assert len(raw) < MAX_BODY_BYTES

    status, saved = _post_raw(as_alice, raw)

    assert status == 201
    assert len(saved["memory"]["contexts"]) == limits.CONTEXTS_MAX  # type: ignore[index]


@pytest.mark.parametrize("limit", ["abc", "1.5", "", "-1", "0", "51", "99999999999999999999999", "1e3", " 5", "0x10"])
def test_a_bad_search_limit_is_rejected_not_clamped(as_alice: Caller, limit: str) -> None:
    response = as_alice.search("deploy", limit=limit)

    assert response.status_code == 400
    assert response.json()["details"] == [{"path": "limit", "message": limits.SEARCH_LIMIT.describe()}]


@pytest.mark.parametrize("limit", ["abc", "-5", "0", "101", "1" * 40])
def test_a_bad_list_limit_is_rejected_not_clamped(as_alice: Caller, limit: str) -> None:
    response = as_alice.list(limit=limit)

    assert response.status_code == 400
    assert response.json()["details"] == [{"path": "limit", "message": limits.LIST_LIMIT.describe()}]


def test_limits_at_the_bounds_are_accepted(as_alice: Caller) -> None:
    assert as_alice.search("x", limit=limits.SEARCH_LIMIT.max).status_code == 200
    assert as_alice.search("x", limit=limits.SEARCH_LIMIT.min).status_code == 200
    assert as_alice.list(limit=limits.LIST_LIMIT.max).status_code == 200


def test_a_repeated_query_parameter_is_a_400(client: TestClient, as_alice: Caller) -> None:
    response = client.get("/v1/memory?limit=5&limit=6", headers=as_alice.headers)

    assert response.status_code == 400
    assert response.json()["details"][0]["path"] == "limit"


@pytest.mark.parametrize("q", ["", "   ", "x" * (limits.QUERY.max + 1), "\x00"])
def test_a_bad_search_query_is_a_400_naming_q(as_alice: Caller, q: str) -> None:
    response = as_alice.search(q)

    assert response.status_code == 400
    assert [d["path"] for d in response.json()["details"]] == ["q"]


def test_a_search_without_q_is_a_400_naming_q(client: TestClient, as_alice: Caller) -> None:
    response = client.get("/v1/memory/search", headers=as_alice.headers)

    assert response.status_code == 400
    assert [d["path"] for d in response.json()["details"]] == ["q"]


@pytest.mark.parametrize("cursor", ["garbage", "x" * (limits.CURSOR_MAX_LENGTH + 1), "W10", "bnVsbA"])
def test_a_cursor_we_did_not_issue_is_a_400(as_alice: Caller, cursor: str) -> None:
    response = as_alice.list(cursor=cursor)

    assert response.status_code == 400
    assert response.json()["details"][0]["path"] == "cursor"


def test_an_unknown_path_is_a_json_404(client: TestClient) -> None:
    response = client.get("/v1/memories")

    assert response.status_code == 404
    assert response.json() == {"error": "not_found", "message": "No such route."}


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/v1/memory", {"GET", "HEAD", "POST"}),
        ("PATCH", "/v1/memory", {"GET", "HEAD", "POST"}),
        ("POST", "/v1/memory/search", {"GET", "HEAD"}),
        ("DELETE", "/v1/memory/search", {"GET", "HEAD"}),
        ("OPTIONS", "/v1/memory", {"GET", "HEAD", "POST"}),
        ("GET", "/v1/memory/mem_01h455vb4pex5vsknk084sn02q", {"DELETE", "PATCH"}),
        ("POST", "/v1/memory/mem_01h455vb4pex5vsknk084sn02q/revisions", {"GET", "HEAD"}),
        ("POST", "/openapi.json", {"GET", "HEAD"}),
    ],
)
def test_a_wrong_method_is_a_json_405_listing_the_allowed_ones(
    client: TestClient, as_alice: Caller, method: str, path: str, allowed: set[str]
) -> None:
    response = client.request(method, path, headers=as_alice.headers)

    assert response.status_code == 405
    assert response.json()["error"] == "method_not_allowed"
    assert {m.strip() for m in response.headers["Allow"].split(",")} == allowed
    assert response.headers["X-Request-Id"]


def test_a_body_that_is_not_json_is_told_where_it_broke_and_never_quoted() -> None:
    from memorybank_core import InvalidInputError, decode_json

    with pytest.raises(InvalidInputError) as raised:
        decode_json(b'{"content": "secret words",}')

    assert raised.value.problems[0].message.endswith("at line 1, column 28)")
    assert "secret" not in str(raised.value)
