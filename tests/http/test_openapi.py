"""The OpenAPI document: generated from the route table, bounds from the core's limits."""

from __future__ import annotations

from typing import Any

import attrs
import jsonschema
import pytest
from openapi_spec_validator import validate
from starlette.testclient import TestClient

from adapters_http import MEMORY_ROUTES, build_openapi, build_operation_id
from memorybank_core import limits


def _operations(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {op["operationId"]: op for methods in document["paths"].values() for op in methods.values()}


def test_the_served_document_is_the_generated_one(client: TestClient) -> None:
    response = client.get("/openapi.json")

    assert response.headers["content-type"] == "application/json"
    assert response.json() == build_openapi()


#: The reference host's four routes, an agent's: tagged Memory, exposed over MCP.
AGENT_OPERATIONS = {
    "postMemory",
    "getMemorySearch",
    "getMemory",
    "deleteMemoryById",
    "patchMemoryById",
    "getMemoryByMemoryIdRevisions",
}
#: The person's own routes (issue 22), additive: tagged Account, never MCP capabilities.
ACCOUNT_OPERATIONS = {"getMemoryUsage", "getMemoryExport", "postMemoryDeleteAll"}


def test_every_operation_is_tagged_memory_or_account_and_named_by_the_reference_rule() -> None:
    document = build_openapi()

    found = {
        (method.upper(), path): operation
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
    }
    assert set(found) == {(route.method, route.path) for route in MEMORY_ROUTES}
    for (method, path), operation in found.items():
        assert operation["operationId"] == build_operation_id(method, path)
        expected_tag = "Memory" if operation["operationId"] in AGENT_OPERATIONS else "Account"
        assert operation["tags"] == [expected_tag]
        assert operation["summary"]


def test_the_save_summary_spells_out_the_body_shape() -> None:
    summary = _operations(build_openapi())["postMemory"]["summary"]

    assert summary == (
        'Save a memory. Body: {"content": "...", "tags"?: ["..."], "contexts"?: [{"snippet": "...", '
        '"conversation_id"?: "...", "message_id"?: "...", "origin"?: "active_conversation"|"searched_conversation"}], '
        '"supersedes"?: ["mem_..."]}. The answer lists similar memories you already have.'
    )


def test_request_bounds_come_from_the_cores_limits() -> None:
    document = build_openapi()
    operations = _operations(document)
    body = operations["postMemory"]["requestBody"]["content"]["application/json"]["schema"]
    context = body["properties"]["contexts"]["items"]
    search = {p["name"]: p for p in operations["getMemorySearch"]["parameters"]}
    listing = {p["name"]: p for p in operations["getMemory"]["parameters"]}

    assert body["required"] == ["content"]
    assert (body["properties"]["content"]["minLength"], body["properties"]["content"]["maxLength"]) == (
        limits.CONTENT.min,
        limits.CONTENT.max,
    )
    # No maxItems: repeats are dropped before the bound counts; the description names the bound.
    assert "maxItems" not in body["properties"]["tags"]
    assert f"Up to {limits.TAGS_MAX} distinct tags" in body["properties"]["tags"]["description"]
    assert body["properties"]["tags"]["items"]["maxLength"] == limits.TAG.max
    assert body["properties"]["contexts"]["maxItems"] == limits.CONTEXTS_MAX
    assert context["properties"]["snippet"]["maxLength"] == limits.SNIPPET.max
    assert context["properties"]["conversation_id"]["maxLength"] == limits.CITATION_ID.max
    assert context["properties"]["message_id"]["maxLength"] == limits.CITATION_ID.max
    assert search["q"]["required"] is True
    assert search["q"]["schema"]["maxLength"] == limits.QUERY.max
    assert (search["limit"]["schema"]["minimum"], search["limit"]["schema"]["maximum"]) == (
        limits.SEARCH_LIMIT.min,
        limits.SEARCH_LIMIT.max,
    )
    assert search["limit"]["schema"]["default"] == limits.SEARCH_LIMIT.default
    assert listing["limit"]["schema"]["maximum"] == limits.LIST_LIMIT.max
    assert listing["cursor"]["schema"]["maxLength"] == limits.CURSOR_MAX_LENGTH


def test_scopes_and_documented_errors_per_operation() -> None:
    operations = _operations(build_openapi())

    assert {name: op["security"] for name, op in operations.items()} == {
        "postMemory": [{"bearerAuth": ["mcp:write"]}],
        "getMemorySearch": [{"bearerAuth": ["mcp:read"]}],
        "getMemory": [{"bearerAuth": ["mcp:read"]}],
        "deleteMemoryById": [{"bearerAuth": ["mcp:write"]}],
        "patchMemoryById": [{"bearerAuth": ["mcp:write"]}],
        "getMemoryByMemoryIdRevisions": [{"bearerAuth": ["mcp:read"]}],
        "getMemoryUsage": [{"bearerAuth": ["mcp:read"]}],
        "getMemoryExport": [{"bearerAuth": ["mcp:read"]}],
        "postMemoryDeleteAll": [{"bearerAuth": ["mcp:write"]}],
    }
    assert set(operations["postMemory"]["responses"]) == {
        *("201", "400", "401", "403", "404", "412", "413", "415", "422", "429", "503")
    }
    assert set(operations["patchMemoryById"]["responses"]) == {
        *("200", "400", "401", "403", "404", "412", "413", "415", "422", "429", "503")
    }
    assert operations["patchMemoryById"]["responses"]["200"]["headers"]["ETag"]["required"] is True
    assert operations["postMemory"]["responses"]["201"]["headers"]["ETag"]["required"] is True
    assert [(p["name"], p["in"]) for p in operations["patchMemoryById"]["parameters"]] == [
        ("id", "path"),
        ("bankScope", "query"),
        ("If-Match", "header"),
    ]
    assert set(operations["deleteMemoryById"]["responses"]) == {"204", "400", "401", "403", "404", "429", "503"}
    assert "content" not in operations["deleteMemoryById"]["responses"]["204"]


@pytest.mark.parametrize("server_url", [None, "/api"])
def test_the_document_is_valid_openapi_3_1(server_url: str | None) -> None:
    validate(build_openapi(server_url=server_url))


def test_every_schema_is_valid_json_schema_2020_12() -> None:
    document = build_openapi()

    for schema in document["components"]["schemas"].values():
        jsonschema.Draft202012Validator.check_schema(schema)
    for operation in _operations(document).values():
        for parameter in operation["parameters"]:
            jsonschema.Draft202012Validator.check_schema(parameter["schema"])


def test_the_body_schema_is_self_contained_for_capability_catalogs() -> None:
    body = _operations(build_openapi())["postMemory"]["requestBody"]["content"]["application/json"]["schema"]

    assert "$ref" not in str(body)
    validator = jsonschema.Draft202012Validator(body)
    assert validator.is_valid({"content": "x", "contexts": [{"snippet": "s", "origin": "active_conversation"}]})
    assert not validator.is_valid({"content": "   "})
    assert not validator.is_valid({"content": "a\x00b"})
    assert not validator.is_valid({"content": "\x1c"})
    assert not validator.is_valid({"contexts": []})


def test_a_host_prefix_becomes_the_server_url_and_names_do_not_change() -> None:
    document = build_openapi(server_url="/api")

    assert document["servers"] == [{"url": "/api"}]
    assert set(_operations(document)) == AGENT_OPERATIONS | ACCOUNT_OPERATIONS


def test_each_call_returns_an_independent_copy() -> None:
    first = build_openapi()
    first["components"]["schemas"]["Memory"]["properties"].clear()

    assert build_openapi()["components"]["schemas"]["Memory"]["properties"]


def test_the_account_routes_describe_their_bodies_and_the_export_is_json_lines() -> None:
    operations = _operations(build_openapi())

    usage = operations["getMemoryUsage"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert usage == {"$ref": "#/components/schemas/MemoryUsage"}
    export = operations["getMemoryExport"]["responses"]["200"]["content"]
    assert list(export) == ["application/jsonl"]
    delete_all = operations["postMemoryDeleteAll"]
    assert delete_all["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/DeleteAllRequest"
    }
    assert set(delete_all["responses"]) == {"200", "400", "401", "403", "413", "415", "429", "503"}


def test_a_parameter_whose_default_an_operator_sets_is_documented_as_configured() -> None:
    # The page-size exercise of ADR 0032, on a real BankSettings field: the document (and the MCP catalog built
    # from it) shows the bank's configured value in the schema, the parameter's text and the route's summary.
    from adapters_http.routes import Param
    from adapters_mcp.catalog import build_catalog
    from memorybank_core.configuration import BankSettings

    listing = next(route for route in MEMORY_ROUTES if route.operation_id == "getMemory")
    limit = listing.query_params[0]
    configured = attrs.evolve(
        listing,
        query_params=(attrs.evolve(limit, configured_default="quota_memories"), *listing.query_params[1:]),
    )
    assert isinstance(limit, Param)
    assert "{limit.default}" in listing.summary

    document = build_openapi([configured], settings=BankSettings(quota_memories=7))
    operation = _operations(document)["getMemory"]

    assert operation["parameters"][0]["schema"]["default"] == 7
    assert "default 7;" in operation["parameters"][0]["description"]
    assert "default 7)" in operation["summary"]
    assert "default 7)" in build_catalog(document).capabilities[0].summary
    # Unconfigured, the document says the bound's own default: no `{…}` is ever left in it.
    assert "{" not in _operations(build_openapi())["getMemory"]["summary"]
    assert f"default {limits.LIST_LIMIT.default})" in _operations(build_openapi())["getMemory"]["summary"]


def test_the_served_document_is_built_from_the_banks_settings() -> None:
    from adapters_http import create_app
    from memorybank import bootstrap
    from memorybank.settings import Settings
    from memorybank_core import InMemoryStore
    from memorybank_core.configuration import BankSettings

    settings = BankSettings(quota_memories=3)
    bank = bootstrap.build(Settings.for_database("sqlite://", bank=settings), store=InMemoryStore()).services.bank

    async def nobody(_request: object) -> None:
        return None

    served = TestClient(create_app(bank, nobody)).get("/openapi.json").json()

    assert bank.settings is settings
    assert served == build_openapi(settings=settings)
