"""The four memory operations: parse the request, call the core in the thread pool, serialize.

No policy here: bounds, scopes and owner-scoping are the core's. Errors propagate to
`endpoint`, which maps them through the one error table.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from adapters_http.inputs import MAX_BODY_BYTES, integer_or_text, query_value, read_json_body
from adapters_http.serialization import memory_page_json, search_results_json
from memorybank_core.ports import Principal
from memorybank_core.use_cases import MemoryBank
from memorybank_core.wire import memory_json


class MemoryHandlers:
    """Request handlers over one MemoryBank; each takes the request and the already-resolved principal."""

    def __init__(self, bank: MemoryBank, *, max_body_bytes: int = MAX_BODY_BYTES) -> None:
        self._bank = bank
        self._max_body_bytes = max_body_bytes

    async def save(self, request: Request, principal: Principal) -> Response:
        """`POST /v1/memory` -> 201 `{"memory": {...}}`."""
        body = await read_json_body(request, max_bytes=self._max_body_bytes)
        memory = await run_in_threadpool(self._bank.save, principal, body)
        return JSONResponse({"memory": memory_json(memory)}, status_code=201)

    async def search(self, request: Request, principal: Principal) -> Response:
        """`GET /v1/memory/search?q=&limit=` -> 200 `{"results": [...]}`, empty when nothing matches."""
        query = query_value(request, "q")
        limit = integer_or_text(query_value(request, "limit"))
        results = await run_in_threadpool(self._bank.search, principal, query=query, limit=limit)
        return JSONResponse(search_results_json(results))

    async def list(self, request: Request, principal: Principal) -> Response:
        """`GET /v1/memory?limit=&cursor=` -> 200 `{"memories": [...], "next_cursor": ...}`."""
        limit = integer_or_text(query_value(request, "limit"))
        cursor = query_value(request, "cursor")
        page = await run_in_threadpool(self._bank.list, principal, limit=limit, cursor=cursor)
        return JSONResponse(memory_page_json(page))

    async def delete(self, request: Request, principal: Principal) -> Response:
        """`DELETE /v1/memory/{id}` -> 204; 404 for any id the caller does not own, well-formed or not."""
        memory_id = str(request.path_params["id"])
        await run_in_threadpool(self._bank.delete, principal, memory_id=memory_id)
        return Response(status_code=204)
