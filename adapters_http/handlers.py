"""The memory operations: parse the request, call the core, serialize the answer.

Handlers are plain functions: `endpoint` runs each in a worker thread, in the same call as
the credential check, inside the request's unit of work (one thread-pool hop, one database
connection per request). The response body is serialized there too, once, from the entities
the store built from its rows (`memorybank_core.wire`).

No policy here: bounds, scopes and owner-scoping are the core's. Errors propagate to
`endpoint`, which maps them through the one error table.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from adapters_http.auth import IN_PROCESS_PRINCIPAL_KEY
from adapters_http.inputs import query_value
from adapters_http.panel.csrf import is_panel_call
from adapters_http.serialization import (
    JsonResponse,
    deleted_batch_json,
    memory_page_json,
    revision_page_json,
    search_results_json,
    usage_json,
)
from memorybank_core.bodies import Body
from memorybank_core.entities import Door, Memory
from memorybank_core.ports import Principal
from memorybank_core.use_cases import MemoryBank
from memorybank_core.wire import etag, export_line, memory_json

EXPORT_MEDIA_TYPE = "application/jsonl"
"""The export's media type: JSON Lines (one JSON object per line, UTF-8)."""


class MemoryHandlers:
    """Request handlers over one MemoryBank; each takes the request, the resolved principal and the received body."""

    def __init__(self, bank: MemoryBank) -> None:
        self._bank = bank

    def save(self, request: Request, principal: Principal, body: Body | None) -> Response:
        """`POST /v1/memory` -> 201 `{"memory": {...}, "similar": [...]}` with the memory's `ETag`."""
        assert body is not None  # noqa: S101 - the route takes a body, so `endpoint` received one
        # Read by the core after its gate: a switched-off caller learns nothing from the body's validation.
        memory = self._bank.save(principal, body, door=door_of(request))
        # After the save committed; it never fails the save (an empty list when the look-up cannot run).
        similar = search_results_json(self._bank.similar(principal, memory))["results"]
        return _with_etag(JsonResponse({"memory": memory_json(memory), "similar": similar}, status_code=201), memory)

    def edit(self, request: Request, principal: Principal, body: Body | None) -> Response:
        """`PATCH /v1/memory/{id}` -> 200 `{"memory": {...}}` with its new `ETag`; 412 when `If-Match` is stale."""
        assert body is not None  # noqa: S101 - the route takes a body, so `endpoint` received one
        memory = self._bank.edit(
            principal,
            memory_id=str(request.path_params["id"]),
            request=body,
            if_match=if_match_revisions(request.headers.getlist("if-match")),
            door=door_of(request),
            bank=query_value(request, "bankScope"),
        )
        return _with_etag(JsonResponse({"memory": memory_json(memory)}), memory)

    def revisions(self, request: Request, principal: Principal, body: Body | None) -> Response:  # noqa: ARG002
        """`GET /v1/memory/{memoryId}/revisions?limit=&cursor=` -> 200 `{"memory", "revisions", "next_cursor"}`."""
        page = self._bank.revisions(
            principal,
            memory_id=str(request.path_params["memoryId"]),
            limit=query_value(request, "limit"),
            cursor=query_value(request, "cursor"),
            bank=query_value(request, "bankScope"),
        )
        return _with_etag(JsonResponse(revision_page_json(page)), page.memory)

    def search(self, request: Request, principal: Principal, body: Body | None) -> Response:  # noqa: ARG002
        """`GET /v1/memory/search?q=&limit=` -> 200 `{"results": [...]}`, empty when nothing matches."""
        query = query_value(request, "q")
        limit = query_value(request, "limit")
        bank = query_value(request, "bankScope")
        return JsonResponse(search_results_json(self._bank.search(principal, query=query, limit=limit, bank=bank)))

    def list(self, request: Request, principal: Principal, body: Body | None) -> Response:  # noqa: ARG002
        """`GET /v1/memory?limit=&cursor=&include=` -> 200 `{"memories": [...], "next_cursor": ...}`."""
        limit = query_value(request, "limit")
        cursor = query_value(request, "cursor")
        include = query_value(request, "include")
        bank = query_value(request, "bankScope")
        page = self._bank.list(principal, limit=limit, cursor=cursor, include=include, bank=bank)
        return JsonResponse(memory_page_json(page))

    def delete(self, request: Request, principal: Principal, body: Body | None) -> Response:  # noqa: ARG002
        """`DELETE /v1/memory/{id}` -> 204; 404 for any id the caller does not own, well-formed or not."""
        self._bank.delete(principal, memory_id=str(request.path_params["id"]), bank=query_value(request, "bankScope"))
        return Response(status_code=204)

    def usage(self, request: Request, principal: Principal, body: Body | None) -> Response:  # noqa: ARG002
        """`GET /v1/memory/usage?bankScope=` -> 200 `{"memories", "characters", "quota"}`: the caller's own numbers,
        or their organization's bank's."""
        return JsonResponse(usage_json(self._bank.usage(principal, bank=query_value(request, "bankScope"))))

    def export(self, request: Request, principal: Principal, body: Body | None) -> Response:  # noqa: ARG002
        """`GET /v1/memory/export` -> 200 JSON Lines, streamed a page at a time (`memorybank export`'s format)."""
        exported = self._bank.export(principal)  # the checks run now; the pages are read as the body streams

        def lines() -> Iterator[str]:
            for line in exported:
                yield export_line(line.memory, line.revisions) + "\n"

        return StreamingResponse(
            lines(),
            media_type=EXPORT_MEDIA_TYPE,
            headers={"Content-Disposition": 'attachment; filename="memories.jsonl"', "Cache-Control": "no-store"},
        )

    def delete_all(self, request: Request, principal: Principal, body: Body | None) -> Response:  # noqa: ARG002
        """`POST /v1/memory/delete-all` -> 200 `{"deleted", "remaining"}`: one bounded batch; call until 0 remain."""
        assert body is not None  # noqa: S101 - the route takes a body, so `endpoint` received one
        # Read by the core after its gate: a switched-off account learns nothing from the body's errors.
        batch = self._bank.delete_batch(principal, body)
        return JsonResponse(deleted_batch_json(batch))


def door_of(request: Request) -> Door:
    """Which door a request came through: the MCP rail (in-process), the panel (its header), else the REST API."""
    if request.scope.get(IN_PROCESS_PRINCIPAL_KEY) is not None:
        return Door.MCP
    if is_panel_call(request):
        return Door.PANEL
    return Door.REST


_ENTITY_TAG = re.compile(r'\s*(W/)?"([^"]*)"\s*')


def if_match_revisions(values: list[str]) -> frozenset[int] | None:
    """The revisions `If-Match` accepts: None without the header or with `*` (any); strong tags only, so a weak
    or malformed one matches none (RFC 9110 section 13.1.1), and the change then gets a 412."""
    if not values:
        return None
    accepted: set[int] = set()
    for value in values:
        for part in value.split(","):
            if part.strip() == "*":
                return None
            tag = _ENTITY_TAG.fullmatch(part)
            if tag is not None and tag.group(1) is None and tag.group(2).isascii() and tag.group(2).isdigit():
                accepted.add(int(tag.group(2)[:10]))
    return frozenset(accepted)


def _with_etag(response: Response, memory: Memory) -> Response:
    response.headers["ETag"] = etag(memory)
    return response
