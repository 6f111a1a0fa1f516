"""operationIds and capability names follow the reference host's rules exactly."""

from __future__ import annotations

import pytest

from adapters_http import (
    MAX_NAME_LENGTH,
    MEMORY_ROUTES,
    OperationIdError,
    Param,
    RouteSpec,
    build_operation_id,
    capability_names,
    check_route_table,
    structural_shorten,
)
from adapters_http.handlers import MemoryHandlers
from adapters_http.operation_ids import fnv1a_32_base36
from memorybank_core import Operation


def test_the_memory_routes_keep_the_reference_names_and_the_account_routes_follow_the_rule() -> None:
    names = {(route.method, route.path): route.operation_id for route in MEMORY_ROUTES}

    assert names == {
        ("POST", "/v1/memory"): "postMemory",
        ("GET", "/v1/memory/search"): "getMemorySearch",
        ("GET", "/v1/memory"): "getMemory",
        ("DELETE", "/v1/memory/{id}"): "deleteMemoryById",
        ("PATCH", "/v1/memory/{id}"): "patchMemoryById",
        # The reference rule names the path parameter; its shortening drops `ByMemoryId` (below).
        ("GET", "/v1/memory/{memoryId}/revisions"): "getMemoryByMemoryIdRevisions",
        ("GET", "/v1/memory/usage"): "getMemoryUsage",
        ("GET", "/v1/memory/export"): "getMemoryExport",
        ("POST", "/v1/memory/delete-all"): "postMemoryDeleteAll",
    }


def test_capability_names_of_the_memory_routes_are_their_operation_ids_structurally_shortened() -> None:
    names = check_route_table(MEMORY_ROUTES)

    assert sorted(names.values()) == [
        "deleteMemoryById",
        "getMemory",
        "getMemoryExport",
        "getMemoryRevisions",
        "getMemorySearch",
        "getMemoryUsage",
        "patchMemoryById",
        "postMemory",
        "postMemoryDeleteAll",
    ]
    assert names["getMemoryByMemoryIdRevisions"] == "getMemoryRevisions"
    assert all(len(name) <= MAX_NAME_LENGTH for name in names.values())


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("GET", "/v1/api-keys", "getApiKeys"),
        ("post", "/v1/orgs/:orgId/apiKeys", "postOrgsByOrgIdApiKeys"),
        ("DELETE", "/v1/orgs/{orgId}/members/{memberId}", "deleteOrgsByOrgIdMembersByMemberId"),
        ("GET", "/v1/files/*", "getFilesWildcard"),
        ("GET", "/", "get"),
        ("PATCH", "//v1//workers//", "patchWorkers"),
        ("GET", "/v2/things_and-stuff", "getV2ThingsAndStuff"),
    ],
)
def test_build_operation_id_ports_the_reference_rule(method: str, path: str, expected: str) -> None:
    assert build_operation_id(method, path) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("deleteMemoryById", "deleteMemoryById"),
        ("getConnectorsByConnectorInstanceIdTools", "getConnectorsTools"),
        ("getV1Things", "getThings"),
        ("postOrgsByOrgIdMembersByMemberIdRoles", "postOrgsMembersRoles"),
        ("getV1OrgsByOrgId", "getOrgs"),
    ],
)
def test_structural_shorten_removes_version_markers_and_param_restatements(name: str, expected: str) -> None:
    assert structural_shorten(name) == expected


def test_fnv1a_matches_the_published_test_vectors() -> None:
    # FNV-1a 32: "" -> 0x811c9dc5, "a" -> 0xe40c292c, "foobar" -> 0xbf9cf968.
    assert fnv1a_32_base36("") == _base36(0x811C9DC5)
    assert fnv1a_32_base36("a") == _base36(0xE40C292C)
    assert fnv1a_32_base36("foobar") == _base36(0xBF9CF968)


def _base36(value: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while value:
        value, rest = divmod(value, 36)
        out = digits[rest] + out
    return out or "0"


def test_names_colliding_after_shortening_get_distinct_hash_suffixes() -> None:
    names = capability_names(["getOrgsByOrgIdMembers", "getOrgsByOrganizationIdMembers"])

    assert names["getOrgsByOrgIdMembers"] == "getOrgsMembers_" + fnv1a_32_base36("getOrgsByOrgIdMembers")
    assert names["getOrgsByOrganizationIdMembers"] == "getOrgsMembers_" + fnv1a_32_base36(
        "getOrgsByOrganizationIdMembers"
    )
    assert len(set(names.values())) == 2


def test_a_colliding_name_is_trimmed_to_fit_with_its_suffix() -> None:
    long_a = "get" + "A" * 60 + "ByXId"
    long_b = "get" + "A" * 60 + "ByYId"

    names = capability_names([long_a, long_b])

    assert all(len(name) == MAX_NAME_LENGTH for name in names.values())
    assert len(set(names.values())) == 2


def test_a_name_over_49_characters_fails_the_build() -> None:
    with pytest.raises(OperationIdError, match="over 49"):
        capability_names(["get" + "Long" * 12])  # 51 characters, nothing to shorten


def test_a_duplicate_operation_id_fails_the_build() -> None:
    with pytest.raises(OperationIdError, match="duplicate"):
        capability_names(["getMemory", "getMemory"])


def test_a_route_table_with_a_duplicate_route_fails_the_build() -> None:
    extra = RouteSpec(
        method="GET",
        path="/v1/memory/",  # same name as GET /v1/memory once empty segments are dropped
        summary="s",
        description="d",
        handler=MemoryHandlers.list,
        success_status=200,
        success_schema=None,
        error_statuses=(),
        required_scope="mcp:read",
        operation=Operation.LIST,
    )

    with pytest.raises(OperationIdError):
        check_route_table([*MEMORY_ROUTES, extra])


def test_a_route_table_with_an_over_long_name_fails_the_build() -> None:
    segment = "averyveryverylongsegmentname"
    extra = RouteSpec(
        method="GET",
        path=f"/v1/{segment}/{segment}",
        summary="s",
        description="d",
        handler=MemoryHandlers.list,
        success_status=200,
        success_schema=None,
        error_statuses=(),
        required_scope="mcp:read",
        operation=Operation.LIST,
        query_params=(Param(name="x", schema={}, description="x"),),
    )

    with pytest.raises(OperationIdError, match="over 49"):
        check_route_table([*MEMORY_ROUTES, extra])
