"""The catalog: the reference host's inclusion policy, names, scopes, and the shape agents see."""

from __future__ import annotations

from typing import Any

import pytest

from adapters_http import MEMORY_ROUTES, build_openapi
from adapters_mcp import BLOCKED_OPERATION_IDS, CatalogError, build_catalog, default_catalog, is_exposed


def operation(
    operation_id: str | None = "getThings", tags: list[str] | None = None, *, x_mcp: bool | None = None, **extra: Any
) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": "Things.", "responses": {"200": {"description": "OK"}}, **extra}
    if x_mcp is not None:
        op["x-mcp"] = x_mcp
    if operation_id is not None:
        op["operationId"] = operation_id
    if tags is not None:
        op["tags"] = tags
    return op


def document(paths: dict[str, dict[str, Any]], components: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": paths, "components": components or {}}


def test_the_default_catalog_holds_exactly_the_six_memory_capabilities() -> None:
    catalog = default_catalog()

    assert sorted(catalog.names) == [
        "deleteMemoryById",
        "getMemory",
        "getMemoryRevisions",
        "getMemorySearch",
        "patchMemoryById",
        "postMemory",
    ]
    # The account routes (use, export, delete all) are the person's, never an agent's.
    assert len(catalog) == len([route for route in MEMORY_ROUTES if "Memory" in route.tags]) == 6


def test_get_capabilities_need_read_and_all_others_write() -> None:
    scopes = {c.name: c.required_scope for c in default_catalog()}

    assert scopes == {
        "postMemory": "mcp:write",
        "getMemorySearch": "mcp:read",
        "getMemory": "mcp:read",
        "deleteMemoryById": "mcp:write",
        "patchMemoryById": "mcp:write",
        "getMemoryRevisions": "mcp:read",
    }


def test_capabilities_carry_their_parameters_and_body() -> None:
    catalog = default_catalog()
    save, search, listing, delete = (
        catalog.get(n) for n in ("postMemory", "getMemorySearch", "getMemory", "deleteMemoryById")
    )
    assert save is not None
    assert search is not None
    assert listing is not None
    assert delete is not None

    assert (save.method, save.path, save.has_body, save.path_params, save.query_params) == (
        "POST",
        "/v1/memory",
        True,
        (),
        (),
    )
    assert search.query_params == ("q", "limit", "bankScope")
    assert not search.has_body
    assert listing.query_params == ("limit", "cursor", "include", "bankScope")
    assert (delete.method, delete.path, delete.path_params) == ("DELETE", "/v1/memory/{id}", ("id",))
    edit, history = catalog.get("patchMemoryById"), catalog.get("getMemoryRevisions")
    assert edit is not None
    assert history is not None
    # If-Match is a header an agent cannot send: the body's `revision` says the same.
    assert (edit.method, edit.path, edit.path_params, edit.query_params, edit.has_body) == (
        "PATCH",
        "/v1/memory/{id}",
        ("id",),
        ("bankScope",),
        True,
    )
    assert edit.body_schema is not None
    assert set(edit.body_schema["properties"]) == {"content", "tags", "contexts", "retired", "revision"}
    assert (history.path, history.path_params, history.query_params) == (
        "/v1/memory/{memoryId}/revisions",
        ("memoryId",),
        ("limit", "cursor", "bankScope"),
    )
    assert "supersedes" in dict(save.body_schema or {})["properties"]
    assert save.body_schema is not None
    assert save.body_schema["required"] == ["content"]


def test_a_match_entry_has_the_reference_shape() -> None:
    save = default_catalog().get("postMemory")
    assert save is not None

    entry = save.describe(score=3.5)

    assert list(entry) == [
        "name",
        "method",
        "path",
        "score",
        "summary",
        "pathParams",
        "queryParams",
        "hasBody",
        "bodySchema",
    ]
    assert entry["summary"].startswith('Save a memory. Body: {"content": "..."')
    delete = default_catalog().get("deleteMemoryById")
    assert delete is not None
    assert "bodySchema" not in delete.describe(score=1)


def test_body_schema_refs_are_inlined_so_the_agent_sees_a_self_contained_schema() -> None:
    doc = document(
        {
            "/v1/things": {
                "post": operation(
                    "postThings",
                    ["Memory"],
                    requestBody={"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}},
                )
            }
        },
        {
            "schemas": {
                "Thing": {"type": "object", "properties": {"part": {"$ref": "#/components/schemas/Part"}}},
                "Part": {"type": "string"},
            }
        },
    )

    (capability,) = build_catalog(doc)

    assert capability.body_schema == {"type": "object", "properties": {"part": {"type": "string"}}}


def test_a_recursive_body_schema_fails_loudly() -> None:
    doc = document(
        {
            "/v1/t": {
                "post": operation(
                    "postT",
                    ["Memory"],
                    requestBody={"content": {"application/json": {"schema": {"$ref": "#/components/schemas/N"}}}},
                )
            }
        },
        {"schemas": {"N": {"type": "object", "properties": {"next": {"$ref": "#/components/schemas/N"}}}}},
    )

    with pytest.raises(CatalogError, match="recursive"):
        build_catalog(doc)


@pytest.mark.parametrize(
    ("path", "op", "included"),
    [
        pytest.param("/v1/things", operation(tags=["Memory"]), True, id="safe tag"),
        pytest.param("/v1/things", operation(tags=["Workers"]), False, id="other tag"),
        pytest.param("/v1/things", operation(tags=None), False, id="untagged"),
        pytest.param("/v1/things", operation(tags=[]), False, id="empty tags"),
        pytest.param("/v1/things", operation(tags=["Workers", "Memory"]), True, id="one safe tag is enough"),
        pytest.param("/v1/things", operation(tags=["Memory"], x_mcp=False), False, id="x-mcp false"),
        pytest.param("/v1/things", operation(tags=["Workers"], x_mcp=True), True, id="x-mcp true"),
        pytest.param("/v1/things", operation(tags=None, x_mcp=True), True, id="x-mcp true untagged"),
        pytest.param("/v1/things", operation(None, ["Memory"]), False, id="no operationId"),
        pytest.param("/v1/things", operation("", ["Memory"]), False, id="empty operationId"),
        pytest.param("/api/auth/session", operation(tags=["Memory"], x_mcp=True), False, id="auth path"),
        pytest.param("/v1/webhooks/in", operation(tags=["Memory"]), False, id="webhooks path"),
        pytest.param("/v1/admin/users", operation(tags=["Memory"], x_mcp=True), False, id="admin path"),
        pytest.param("/v1/things", operation(tags=["Memory", "Admin"]), False, id="blocked tag Admin"),
        pytest.param(
            "/v1/things", operation(tags=["Authentication", "Memory"]), False, id="blocked tag Authentication"
        ),
        pytest.param("/v1/things", operation(tags=["System"], x_mcp=True), False, id="blocked tag beats x-mcp"),
        pytest.param("/v1/things", operation(tags=["Webhooks", "Memory"]), False, id="blocked tag Webhooks"),
    ],
)
def test_inclusion_policy(path: str, op: dict[str, Any], included: bool) -> None:
    assert is_exposed(path, op) is included


@pytest.mark.parametrize("blocked", sorted(BLOCKED_OPERATION_IDS))
def test_a_blocked_operation_id_stays_out_even_when_forced_in(blocked: str) -> None:
    assert not is_exposed("/v1/things", operation(blocked, ["Memory"], x_mcp=True))


def test_building_applies_the_policy_per_operation_and_keeps_document_order() -> None:
    doc = document(
        {
            "/v1/notes": {
                "get": operation("getNotes", ["Memory"]),
                "delete": operation("deleteNotes", ["Memory"], x_mcp=False),
            },
            "/v1/admin/notes": {"get": operation("getAdminNotes", ["Memory"])},
            "/v1/workers": {"post": operation("postWorkers", ["Workers"])},
            "/v1/notes/{noteId}": {
                "parameters": [{"name": "noteId", "in": "path", "required": True, "schema": {"type": "string"}}],
                # The scope comes from the document's security requirement, whatever the method.
                "patch": {**operation("patchNotesByNoteId", ["Memory"]), "security": [{"bearer": ["notes:edit"]}]},
            },
        }
    )

    catalog = build_catalog(doc)

    assert catalog.names == ("getNotes", "patchNotes")
    patch = catalog.get("patchNotes")
    assert patch is not None
    assert patch.path_params == ("noteId",)
    assert patch.required_scope == "notes:edit"
    assert catalog.get("getNotes") is not None
    assert catalog.get("getNotes").required_scope is None  # type: ignore[union-attr]


def test_the_safe_tags_can_be_chosen_by_the_host() -> None:
    doc = document({"/v1/workers": {"get": operation("getWorkers", ["Workers"])}})

    assert build_catalog(doc).names == ()
    assert build_catalog(doc, safe_tags={"Workers"}).names == ("getWorkers",)


def test_a_name_longer_than_49_characters_fails_the_build_loudly() -> None:
    long_id = "get" + "Verylongsegment" * 4
    assert len(long_id) > 49

    with pytest.raises(CatalogError, match="49"):
        build_catalog(document({"/v1/x": {"get": operation(long_id, ["Memory"])}}))


def test_names_that_collide_after_shortening_are_made_unique_as_the_reference_does() -> None:
    doc = document(
        {
            "/v1/a": {"get": operation("getItemsByItemId", ["Memory"])},
            "/v1/b": {"get": operation("getItemsByOtherId", ["Memory"])},
        }
    )

    names = build_catalog(doc).names

    assert len(set(names)) == 2
    assert all(name.startswith("getItems_") and len(name) <= 49 for name in names)


def test_a_duplicated_operation_id_fails_the_build_loudly() -> None:
    doc = document({"/v1/a": {"get": operation("getA", ["Memory"])}, "/v1/b": {"get": operation("getA", ["Memory"])}})

    with pytest.raises(CatalogError, match="duplicate"):
        build_catalog(doc)


def test_path_parameters_must_match_the_path_template() -> None:
    doc = document({"/v1/things/{id}": {"delete": operation("deleteThingsById", ["Memory"])}})

    with pytest.raises(CatalogError, match="path parameters"):
        build_catalog(doc)


def test_a_non_json_body_cannot_be_sent_by_the_rail() -> None:
    doc = document(
        {
            "/v1/up": {
                "post": operation(
                    "postUp", ["Memory"], requestBody={"content": {"multipart/form-data": {"schema": {}}}}
                )
            }
        }
    )

    with pytest.raises(CatalogError, match="JSON"):
        build_catalog(doc)


def test_the_catalog_of_the_served_document_is_the_default_one() -> None:
    assert build_catalog(build_openapi(server_url="/memorybank")) == default_catalog()
