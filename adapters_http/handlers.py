"""The four memory operations: read the request's inputs, call the core, serialize.

They run in a worker thread, inside the request's unit of work (see `endpoint.guarded`, which
reads the body first, on the event loop). No policy here: bounds, scopes and owner-scoping
are the core's. Errors propagate to `endpoint`, which maps them through the one error table.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from adapters_http.inputs import integer_or_text, query_value
from adapters_http.serialization import memory_json, memory_page_json, search_results_json
from memorybank_core.ports import Principal
from memorybank_core.use_cases import MemoryBank


class MemoryHandlers:
    """Request handlers over one MemoryBank; each takes the request, its JSON body (if any) and the principal."""

    def __init__(self, bank: MemoryBank) -> None:
        self._bank = bank

    def save(self, _request: Request, body: object, principal: Principal) -> Response:
        """`POST /v1/memory` -> 201 `{"memory": {...}}`."""
        memory = self._bank.save(principal, body)
        return JSONResponse({"memory": memory_json(memory)}, status_code=201)

    def search(self, request: Request, _body: object, principal: Principal) -> Response:
        """`GET /v1/memory/search?q=&limit=` -> 200 `{"results": [...]}`, empty when nothing matches."""
        query = query_value(request, "q")
        limit = integer_or_text(query_value(request, "limit"))
        return JSONResponse(search_results_json(self._bank.search(principal, query=query, limit=limit)))

    def list(self, request: Request, _body: object, principal: Principal) -> Response:
        """`GET /v1/memory?limit=&cursor=` -> 200 `{"memories": [...], "next_cursor": ...}`."""
        limit = integer_or_text(query_value(request, "limit"))
        cursor = query_value(request, "cursor")
        return JSONResponse(memory_page_json(self._bank.list(principal, limit=limit, cursor=cursor)))

    def delete(self, request: Request, _body: object, principal: Principal) -> Response:
        """`DELETE /v1/memory/{id}` -> 204; 404 for any id the caller does not own, well-formed or not."""
        self._bank.delete(principal, memory_id=str(request.path_params["id"]))
        return Response(status_code=204)
