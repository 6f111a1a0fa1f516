"""The two tools, called directly on the rail: shapes, validation, scopes, and the REST answer passed through."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from adapters_mcp import EXECUTE_TOOL, SEARCH_TOOL, CapabilityRail, build_catalog, default_catalog, tool_definitions
from adapters_mcp.tools import NO_MATCH_HINT, UnknownToolError
from memorybank_core import READ_SCOPE, WRITE_SCOPE
from tests.conftest import User

pytestmark = pytest.mark.anyio


def payload(result: types.CallToolResult) -> Any:
    """The JSON of the result's only text block."""
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return json.loads(block.text)


async def execute(rail: CapabilityRail, user: User, name: str, **arguments: Any) -> types.CallToolResult:
    return await rail.call(EXECUTE_TOOL, {"name": name, **arguments}, user)


async def saved_id(rail: CapabilityRail, user: User, content: str) -> str:
    result = await execute(rail, user, "postMemory", body={"content": content})
    assert not result.is_error, payload(result)
    memory_id: str = payload(result)["memory"]["id"]
    return memory_id


# --- the tool list ---------------------------------------------------------------------------------


def test_there_are_exactly_two_tools_with_the_reference_names() -> None:
    assert [tool.name for tool in tool_definitions()] == ["search_capabilities", "execute_capability"]


def test_annotations_say_search_is_safe_and_execute_is_destructive_and_neither_is_open_world() -> None:
    search, execute_tool = tool_definitions()
    assert search.annotations is not None
    assert execute_tool.annotations is not None

    assert (search.annotations.read_only_hint, search.annotations.idempotent_hint) == (True, True)
    assert search.annotations.open_world_hint is False
    assert (execute_tool.annotations.read_only_hint, execute_tool.annotations.destructive_hint) == (False, True)
    assert execute_tool.annotations.open_world_hint is False


def test_free_form_schemas_say_object_rather_than_nothing() -> None:
    # An empty schema `{}` is what the Inspector's --strict check flags.
    execute_schema = tool_definitions()[1].input_schema
    assert execute_schema["properties"]["body"] == {**execute_schema["properties"]["body"], "type": "object"}
    assert all(schema != {} for schema in execute_schema["properties"].values())


# --- search_capabilities -----------------------------------------------------------------------------


async def test_search_returns_matches_as_text_and_identical_structured_content(rail: CapabilityRail) -> None:
    result = await rail.call(SEARCH_TOOL, {"query": "save a memory"}, User())

    assert not result.is_error
    assert payload(result) == result.structured_content
    matches = payload(result)["matches"]
    assert matches[0]["name"] == "postMemory"
    assert matches[0]["hasBody"] is True
    assert matches[0]["bodySchema"]["required"] == ["content"]
    assert "hint" not in payload(result)


async def test_search_limit_defaults_to_five_and_caps_the_matches(rest_app: Starlette) -> None:
    catalog = build_catalog(
        {
            "paths": {
                f"/v1/memory/x{i}": {"get": {"operationId": f"getMemoryX{i}", "tags": ["Memory"]}} for i in range(8)
            },
        }
    )
    many = CapabilityRail(catalog, rest_app)

    default = await many.call(SEARCH_TOOL, {"query": "memory"}, User())
    two = await many.call(SEARCH_TOOL, {"query": "memory", "limit": 2}, User())
    twenty = await many.call(SEARCH_TOOL, {"query": "memory", "limit": 20}, User())

    assert len(payload(default)["matches"]) == 5
    assert len(payload(two)["matches"]) == 2
    assert len(payload(twenty)["matches"]) == 8


@pytest.mark.parametrize("limit", [0, 21, -1, 2.5, "5", True])
async def test_a_limit_outside_1_to_20_is_an_invalid_tool_input_error(rail: CapabilityRail, limit: object) -> None:
    result = await rail.call(SEARCH_TOOL, {"query": "memory", "limit": limit}, User())

    assert result.is_error
    assert payload(result)["error"] == "invalid_tool_input"
    assert payload(result)["details"][0]["path"] == "limit"
    assert result.structured_content is None


@pytest.mark.parametrize("arguments", [{}, {"query": ""}, {"query": 3}, {"query": "x", "extra": 1}, None])
async def test_a_malformed_search_is_an_invalid_tool_input_error(
    rail: CapabilityRail, arguments: dict[str, Any] | None
) -> None:
    result = await rail.call(SEARCH_TOOL, arguments, User())

    assert result.is_error
    assert payload(result)["error"] == "invalid_tool_input"


async def test_no_match_is_an_empty_list_with_a_hint_not_an_error(rail: CapabilityRail) -> None:
    result = await rail.call(SEARCH_TOOL, {"query": "weather in paris"}, User())

    assert not result.is_error
    assert payload(result) == {"matches": [], "hint": NO_MATCH_HINT} == result.structured_content


async def test_an_unknown_tool_is_a_protocol_error_not_a_tool_error(rail: CapabilityRail) -> None:
    with pytest.raises(UnknownToolError):
        await rail.call("memory_save", {}, User())


# --- execute_capability: the happy paths ---------------------------------------------------------------


async def test_save_search_list_delete_pass_the_rest_answer_through(rail: CapabilityRail, alice: User) -> None:
    saved = await execute(rail, alice, "postMemory", body={"content": "The deploy target is a Daytona sandbox"})
    assert not saved.is_error
    assert saved.structured_content == {"status": 201, "body": payload(saved)}
    memory = payload(saved)["memory"]
    assert memory["content"] == "The deploy target is a Daytona sandbox"
    assert memory["scope"] == "user"

    found = await execute(rail, alice, "getMemorySearch", query={"q": "daytona", "limit": 5})
    assert (found.structured_content or {})["status"] == 200
    assert [r["id"] for r in payload(found)["results"]] == [memory["id"]]

    listed = await execute(rail, alice, "getMemory", query={"limit": 10})
    assert [m["id"] for m in payload(listed)["memories"]] == [memory["id"]]

    deleted = await execute(rail, alice, "deleteMemoryById", path={"id": memory["id"]})
    assert not deleted.is_error
    assert deleted.structured_content == {"status": 204, "body": None}
    assert payload(deleted) == {"status": 204, "body": None}

    gone = await execute(rail, alice, "getMemorySearch", query={"q": "daytona"})
    assert payload(gone) == {"results": []}


async def test_json_encoded_strings_for_path_query_and_body_are_accepted(rail: CapabilityRail, alice: User) -> None:
    saved = await execute(rail, alice, "postMemory", body=json.dumps({"content": "Prefers tabs over spaces"}))
    memory_id = payload(saved)["memory"]["id"]

    found = await execute(rail, alice, "getMemorySearch", query='{"q": "tabs"}')
    deleted = await execute(rail, alice, "deleteMemoryById", path=json.dumps({"id": memory_id}))

    assert [r["id"] for r in payload(found)["results"]] == [memory_id]
    assert (deleted.structured_content or {})["status"] == 204


async def test_null_optional_arguments_mean_absent(rail: CapabilityRail, alice: User) -> None:
    result = await execute(rail, alice, "getMemory", path=None, query=None, body=None)

    assert not result.is_error
    assert payload(result)["memories"] == []


async def test_scope_and_source_sent_by_the_agent_are_ignored_by_the_route(rail: CapabilityRail, alice: User) -> None:
    saved = await execute(rail, alice, "postMemory", body={"content": "x marks it", "scope": "org", "source": "evil"})

    assert payload(saved)["memory"]["scope"] == "user"
    assert payload(saved)["memory"]["source"] == "chat"


# --- execute_capability: errors ----------------------------------------------------------------------


async def test_an_unknown_capability_tells_the_agent_to_search(rail: CapabilityRail) -> None:
    result = await execute(rail, User(), "memory_save")

    assert result.is_error
    assert payload(result) == {
        "error": "unknown_capability",
        "message": 'No capability named "memory_save". Call search_capabilities to find a valid name.',
    }


@pytest.mark.parametrize(
    ("name", "arguments", "scopes", "required"),
    [
        ("postMemory", {"body": {"content": "x"}}, {READ_SCOPE}, WRITE_SCOPE),
        ("deleteMemoryById", {"path": {"id": "mem_x"}}, {READ_SCOPE}, WRITE_SCOPE),
        ("getMemorySearch", {"query": {"q": "x"}}, {WRITE_SCOPE}, READ_SCOPE),
        ("getMemory", {}, {WRITE_SCOPE}, READ_SCOPE),
    ],
)
async def test_a_missing_scope_names_the_required_one(
    rail: CapabilityRail, name: str, arguments: dict[str, Any], scopes: set[str], required: str
) -> None:
    result = await execute(rail, User(scopes=frozenset(scopes)), name, **arguments)

    assert result.is_error
    assert payload(result)["error"] == "insufficient_mcp_scope"
    assert payload(result)["requiredScope"] == required


async def test_a_write_only_token_can_save(rail: CapabilityRail) -> None:
    writer = User(scopes=frozenset({WRITE_SCOPE}))

    saved = await execute(rail, writer, "postMemory", body={"content": "write only"})

    assert (saved.structured_content or {})["status"] == 201


async def test_a_missing_path_parameter_is_an_invalid_tool_input(rail: CapabilityRail) -> None:
    for path in (None, {}, {"id": ""}, {"other": "x"}):
        result = await execute(rail, User(), "deleteMemoryById", path=path)
        assert result.is_error
        assert payload(result) == {"error": "invalid_tool_input", "message": "Missing path parameter: id"}


@pytest.mark.parametrize(
    "memory_id", ["../search", "../../openapi.json", "..%2F..%2Fx", "x/../../y", "a?q=1", "a#b", " ", "mem_x/"]
)
async def test_a_path_value_cannot_escape_its_segment(rail: CapabilityRail, alice: User, memory_id: str) -> None:
    await saved_id(rail, alice, "still here")

    result = await execute(rail, alice, "deleteMemoryById", path={"id": memory_id})

    assert result.is_error
    assert result.structured_content == {
        "status": 404,
        "body": {"error": "memory_not_found", "message": "No memory with this id."},
    }
    listed = await execute(rail, alice, "getMemory")
    assert len(payload(listed)["memories"]) == 1


async def test_an_encoded_slash_never_reaches_a_route_with_more_segments() -> None:
    async def one(request: Request) -> Response:
        return JSONResponse({"route": "one", "id": request.path_params["id"]})

    async def two(_request: Request) -> Response:
        return JSONResponse({"route": "two"})

    app = Starlette(routes=[Route("/v1/things/{id}", one), Route("/v1/things/{a}/{b}", two)])
    catalog = build_catalog(
        {
            "paths": {
                "/v1/things/{id}": {
                    "get": {
                        "operationId": "getThingsById",
                        "tags": ["Memory"],
                        "parameters": [{"name": "id", "in": "path", "required": True}],
                    }
                }
            }
        }
    )
    rail = CapabilityRail(catalog, app)

    result = await execute(rail, User(), "getThingsById", path={"id": "../secret"})

    assert payload(result) == {"route": "one", "id": "..%2Fsecret"}


async def test_a_body_route_without_a_body_and_a_bodyless_route_with_one_are_input_errors(
    rail: CapabilityRail,
) -> None:
    missing = await execute(rail, User(), "postMemory")
    extra = await execute(rail, User(), "getMemory", body={"content": "x"})

    assert payload(missing)["error"] == payload(extra)["error"] == "invalid_tool_input"
    assert "Missing body" in payload(missing)["message"]
    assert "takes no body" in payload(extra)["message"]


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"name": ""},
        {"name": 5},
        {"name": "getMemory", "query": "not json"},
        {"name": "getMemory", "query": "[1, 2]"},
        {"name": "getMemory", "query": {"q": {"nested": 1}}},
        {"name": "deleteMemoryById", "path": {"id": ["a"]}},
        {"name": "postMemory", "body": ["content"]},
        {"name": "postMemory", "body": '"just a string"'},
        {"name": "getMemory", "verb": "GET"},
    ],
)
async def test_arguments_outside_the_input_schema_are_invalid_tool_input(
    rail: CapabilityRail, arguments: dict[str, Any]
) -> None:
    result = await rail.call(EXECUTE_TOOL, arguments, User())

    assert result.is_error
    assert payload(result)["error"] == "invalid_tool_input"
    assert result.structured_content is None


async def test_a_rest_validation_failure_is_a_tool_error_carrying_the_rest_body(rail: CapabilityRail) -> None:
    result = await execute(rail, User(), "postMemory", body={"content": "   ", "tags": ["x" * 65]})

    assert result.is_error
    assert result.structured_content is not None
    assert result.structured_content["status"] == 400
    body = payload(result)
    assert body["error"] == "invalid_request"
    assert {d["path"] for d in body["details"]} == {"content", "tags.0"}


async def test_a_rest_bound_on_query_parameters_is_the_routes_own(rail: CapabilityRail) -> None:
    result = await execute(rail, User(), "getMemorySearch", query={"q": "x", "limit": 51})

    assert result.is_error
    assert payload(result)["error"] == "invalid_request"


async def test_query_lists_repeat_the_key_and_the_route_decides(rail: CapabilityRail) -> None:
    result = await execute(rail, User(), "getMemorySearch", query={"q": ["a", "b"]})

    assert result.is_error
    assert payload(result)["details"][0]["path"] == "q"


async def test_a_slow_capability_times_out_as_a_tool_error() -> None:
    async def slow(_request: Request) -> Response:
        await anyio.sleep(5)
        return JSONResponse({})

    app = Starlette(routes=[Route("/v1/memory", slow, methods=["GET"])])
    rail = CapabilityRail(default_catalog(), app, timeout=0.05)

    result = await execute(rail, User(), "getMemory")

    assert result.is_error
    assert payload(result)["error"] == "capability_timeout"


async def test_an_app_that_crashes_is_a_generic_tool_error(caplog: pytest.LogCaptureFixture) -> None:
    async def broken(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("boom with secret content")

    rail = CapabilityRail(default_catalog(), broken)

    result = await execute(rail, User(), "postMemory", body={"content": "a secret thing"})

    assert result.is_error
    assert payload(result)["error"] == "capability_failed"
    assert "boom" not in json.dumps(payload(result))
    assert "a secret thing" not in caplog.text


async def test_tool_calls_are_logged_without_arguments_or_content(
    rail: CapabilityRail, alice: User, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")

    await execute(rail, alice, "postMemory", body={"content": "Zanzibar holiday plans", "tags": ["travelling"]})
    await execute(rail, alice, "getMemorySearch", query={"q": "Zanzibar"})
    await rail.call(SEARCH_TOOL, {"query": "quixotic phrasing"}, alice)

    assert "capability=postMemory status=201" in caplog.text
    for secret in ("Zanzibar", "travelling", "quixotic"):
        assert secret not in caplog.text
