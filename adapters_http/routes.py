"""THE route table: every memory route, described once.

The Starlette routes, the OpenAPI document and (through it) the MCP capability
catalog are all generated from `MEMORY_ROUTES`; operationIds are computed from
method and path, never written by hand.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import attrs
from starlette.requests import Request
from starlette.responses import Response

from adapters_http import schemas
from adapters_http.handlers import EXPORT_MEDIA_TYPE, MemoryHandlers
from adapters_http.operation_ids import build_operation_id, capability_names
from adapters_http.schemas import JsonSchema
from memorybank_core import limits
from memorybank_core.banks import BankScope
from memorybank_core.bodies import Body
from memorybank_core.entities import Origin
from memorybank_core.ports import Principal
from memorybank_core.rate_limits import Operation
from memorybank_core.requests import DELETE_ALL_CONFIRMATION
from memorybank_core.use_cases import INCLUDE_RETIRED, READ_SCOPE, WRITE_SCOPE

MEMORY_TAG = "Memory"
"""The tag every memory route an agent may call carries; capability catalogs include routes by tag."""
ACCOUNT_TAG = "Account"
"""The tag of routes for the person, not their agents (use, export, delete all): never an MCP capability."""

UnboundHandler = Callable[[MemoryHandlers, Request, Principal, Body | None], Response]
"""A `MemoryHandlers` method, before it is bound to a bank."""


@attrs.frozen(kw_only=True)
class Param:
    """A path or query parameter."""

    name: str
    schema: JsonSchema
    description: str
    """May say `{NAME.default}`: the document shows the default there, as configured (`configured_default`)."""
    required: bool = False
    configured_default: str | None = None
    """The `BankSettings` field an operator sets this parameter's default with, if any: the OpenAPI document
    (and the MCP catalog built from it) then shows the configured default, in the schema and wherever the
    route's summary or the parameter's description says `{NAME.default}`."""


@attrs.frozen(kw_only=True)
class RouteSpec:
    """One route: how it is matched, documented and handled."""

    method: str
    path: str
    """The documented path, OpenAPI style (`/v1/memory/{id}`)."""
    summary: str
    """One line that an agent may see alone: it must say how to call the route."""
    description: str
    handler: UnboundHandler
    success_status: int
    success_schema: JsonSchema | None
    """The success body; None for an empty one (204)."""
    success_media_type: str = "application/json"
    error_statuses: tuple[int, ...]
    required_scope: str
    """Documentation of the core's rule (the core enforces it): GET needs mcp:read, others mcp:write."""
    operation: Operation
    """The use case the route runs: whose rate limit it counts against."""
    tags: tuple[str, ...] = (MEMORY_TAG,)
    path_params: tuple[Param, ...] = ()
    query_params: tuple[Param, ...] = ()
    header_params: tuple[Param, ...] = ()
    """Request headers the route reads (documented; a capability catalog leaves them out)."""
    body_schema: JsonSchema | None = None
    """The JSON request body; None when the route takes none."""
    etag: bool = False
    """The success answer carries the memory's `ETag` (its revision)."""
    match_path: str | None = None
    """The Starlette path when it differs from `path` (e.g. a convertor)."""

    @property
    def operation_id(self) -> str:
        """The operationId, computed by the reference host's rule."""
        return build_operation_id(self.method, self.path)

    @property
    def starlette_path(self) -> str:
        """The path the router matches."""
        return self.match_path or self.path


def _count_param(
    name: str, bound: limits.CountBound, description: str, *, configured_default: str | None = None
) -> Param:
    return Param(
        name=name,
        schema={"type": "integer", "minimum": bound.min, "maximum": bound.max, "default": bound.default},
        description=f"{description} {bound.min} to {bound.max}, default {{{name}.default}}; out of range is a 400.",
        configured_default=configured_default,
    )


_ORIGINS = "|".join(f'"{origin.value}"' for origin in Origin)

SAVE_SUMMARY = (
    'Save a memory. Body: {"content": "...", "tags"?: ["..."], "contexts"?: [{"snippet": "...", '
    f'"conversation_id"?: "...", "message_id"?: "...", "origin"?: {_ORIGINS}}}], "supersedes"?: ["mem_..."]}}. '
    "The answer lists similar memories you already have."
)
EDIT_SUMMARY = (
    'Edit one of your memories (correct it, update it, restore it). Path: id (mem_...). Body: any of {"content": '
    '"...", "tags": ["..."], "contexts": [...], "retired": false, "revision": n}.'
)

_BANK_CHOICE = (
    '"user" (the default) is your own bank; "org" is the bank your organization shares, for memories the person '
    "says are for the team (it needs the org:read or org:write scope)"
)
_BANK_SCOPE = Param(
    name="bankScope",
    schema={"type": "string", "enum": [BankScope.USER.value, BankScope.ORG.value], "default": BankScope.USER.value},
    description=f"Which bank: {_BANK_CHOICE}.",
)
_SEARCH_BANK_SCOPE = Param(
    name="bankScope",
    schema={"type": "string", "enum": [bank.value for bank in BankScope], "default": BankScope.USER.value},
    description=(
        f'Which bank: {_BANK_CHOICE}; "all" searches every bank you may read. Each result\'s memory says its '
        "bank in `scope`."
    ),
)

_MEMORY_ID = Param(
    name="id",
    schema={"type": "string", "minLength": 1},
    description="The memory's id, `mem_` and 26 base32 characters.",
    required=True,
)

MEMORY_ROUTES: tuple[RouteSpec, ...] = (
    RouteSpec(
        method="POST",
        path="/v1/memory",
        summary=SAVE_SUMMARY,
        description=(
            f"Saves one human-verified memory in the caller's own bank. `content` holds 1 to {limits.CONTENT.max} "
            f"characters; up to {limits.TAGS_MAX} tags of 1 to {limits.TAG.max}; up to {limits.CONTEXTS_MAX} "
            f"contexts, each a snippet of 1 to {limits.SNIPPET.max} characters with optional conversation and "
            f"message ids (1 to {limits.CITATION_ID.max}). Text is stored trimmed. `scope` and `source` are "
            "set by the server; unknown fields are ignored. Every invalid field is reported at once. A memory "
            "holding what looks like a credential (an API key, a token, a private key, a password in a URL) is "
            "refused with 422 `secret_detected`, naming each field, kind and character range, never the secret. "
            f"`supersedes` names up to {limits.SUPERSEDES_MAX} of the caller's memories the new one replaces: in "
            "the same transaction they are retired (left out of search and lists, readable by id with "
            "`retired_by`, restorable); an id that is not the caller's is the one 404 and nothing is saved. "
            f"The answer's `similar` lists up to {limits.SIMILAR_MAX} of the caller's current memories the new one "
            "most resembles (by the server's search engine): ask the person whether it replaces one of them, then "
            'edit that one (PATCH) or save with `supersedes` naming it. `bankScope` "org" saves in the bank '
            "the caller's organization shares (needs `org:write`; only when the person says the memory is for the "
            'team, never anything personal): the memory then says `scope` "org" and its `author`.'
        ),
        handler=MemoryHandlers.save,
        success_status=201,
        success_schema=schemas.ref("SavedMemory"),
        error_statuses=(400, 401, 403, 404, 412, 413, 415, 422, 429, 503),
        required_scope=WRITE_SCOPE,
        operation=Operation.SAVE,
        body_schema=schemas.SAVE_REQUEST,
        etag=True,
    ),
    RouteSpec(
        method="GET",
        path="/v1/memory/search",
        summary=(
            f"Search your memories by keywords. Query: q (1-{limits.QUERY.max} characters), limit? "
            f"(1-{limits.SEARCH_LIMIT.max}, default {{limit.default}}), bankScope? (user|org|all). Most relevant "
            "first; no match gives an empty list."
        ),
        description=(
            "Full-text search over the caller's own memories (hybrid search: fused with the meaning of the words), "
            "ranked by relevance (ties: newest first). Each result is the memory with its contexts, a positive "
            "`score`, and `match`: `words`, `meaning` (it shares no word with the query) or `both`."
        ),
        handler=MemoryHandlers.search,
        success_status=200,
        success_schema=schemas.ref("SearchResults"),
        error_statuses=(400, 401, 403, 429, 503),
        required_scope=READ_SCOPE,
        operation=Operation.SEARCH,
        query_params=(
            Param(
                name="q",
                schema=schemas.text(limits.QUERY),
                description=(
                    f"What to look for, in the person's own words: {limits.QUERY.min} to {limits.QUERY.max} "
                    "characters after trimming."
                ),
                required=True,
            ),
            _count_param("limit", limits.SEARCH_LIMIT, "How many results at most:"),
            _SEARCH_BANK_SCOPE,
        ),
    ),
    RouteSpec(
        method="GET",
        path="/v1/memory",
        summary=(
            f"List your memories, newest first. Query: limit? (1-{limits.LIST_LIMIT.max}, default "
            "{limit.default}), cursor? (the next_cursor of the previous page), bankScope? (user|org)."
        ),
        description=(
            "One page of the caller's memories with their contexts, newest first. `next_cursor` is null on "
            "the last page; a memory that exists for the whole walk is listed exactly once."
        ),
        handler=MemoryHandlers.list,
        success_status=200,
        success_schema=schemas.ref("MemoryPage"),
        error_statuses=(400, 401, 403, 429, 503),
        required_scope=READ_SCOPE,
        operation=Operation.LIST,
        query_params=(
            _count_param("limit", limits.LIST_LIMIT, "Page size:"),
            Param(
                name="cursor",
                schema={"type": "string", "minLength": 1, "maxLength": limits.CURSOR_MAX_LENGTH},
                description="Where to continue: the `next_cursor` of the previous page.",
            ),
            Param(
                name="include",
                schema={"type": "string", "enum": [INCLUDE_RETIRED]},
                description=(
                    "`retired` also lists the memories a later save replaced (they carry `retired_by`); "
                    "without it they are left out."
                ),
            ),
            _BANK_SCOPE,
        ),
    ),
    RouteSpec(
        method="GET",
        path="/v1/memory/usage",
        summary="How many memories you have and your quota. Query: bankScope? (user|org).",
        description=(
            "The caller's own use: how many memories, and how many characters of content, tags and snippets "
            "together, with the quota that applies to them. Never another user's numbers. With `bankScope=org`, "
            "the numbers and quota of the bank the caller's organization shares (needs `org:read`)."
        ),
        handler=MemoryHandlers.usage,
        success_status=200,
        success_schema=schemas.ref("MemoryUsage"),
        error_statuses=(400, 401, 403, 429, 503),
        required_scope=READ_SCOPE,
        operation=Operation.LIST,
        query_params=(_BANK_SCOPE,),
        tags=(ACCOUNT_TAG,),
    ),
    RouteSpec(
        method="GET",
        path="/v1/memory/export",
        summary="Download all your memories as JSON Lines (the format of `memorybank export`). No parameters.",
        description=(
            "Every memory of the caller with its contexts, newest first, one JSON object per line, streamed "
            "a page at a time whatever the count; `memorybank import` reads it back as exactly these memories."
        ),
        handler=MemoryHandlers.export,
        success_status=200,
        success_schema=schemas.EXPORT_LINES,
        success_media_type=EXPORT_MEDIA_TYPE,
        error_statuses=(401, 403, 429, 503),
        required_scope=READ_SCOPE,
        operation=Operation.LIST,
        tags=(ACCOUNT_TAG,),
    ),
    RouteSpec(
        method="POST",
        path="/v1/memory/delete-all",
        summary=(
            f'Delete all your memories, one batch per call. Body: {{"confirm": "{DELETE_ALL_CONFIRMATION}", '
            f'"limit"?: {limits.DELETE_ALL_BATCH.min}-{limits.DELETE_ALL_BATCH.max}}}; call again until remaining is 0.'
        ),
        description=(
            f"Hard-deletes up to `limit` (default {limits.DELETE_ALL_BATCH.default}) of the caller's memories with "
            "their contexts, in one transaction, and says how many are left. A wrong `confirm` is a 400 and "
            "deletes nothing. Other devices see the result on their next request."
        ),
        handler=MemoryHandlers.delete_all,
        success_status=200,
        success_schema=schemas.ref("DeletedBatch"),
        error_statuses=(400, 401, 403, 413, 415, 429, 503),
        required_scope=WRITE_SCOPE,
        operation=Operation.DELETE,
        tags=(ACCOUNT_TAG,),
        body_schema=schemas.ref("DeleteAllRequest"),
    ),
    RouteSpec(
        method="GET",
        # `memoryId`, not `id`: the reference host's naming rule then gives the capability `getMemoryRevisions`
        # (`ByMemoryId` restates the path parameter and is shortened away). Before the `{id}` routes, whose
        # `path` convertor would match this path too.
        path="/v1/memory/{memoryId}/revisions",
        match_path="/v1/memory/{memoryId:path}/revisions",
        summary=(
            f"See a memory and its history: every version kept, newest first. Path: memoryId (mem_...). Query: "
            f"limit? (1-{limits.REVISIONS_LIMIT.max}, default {limits.REVISIONS_LIMIT.default}), cursor?, "
            "bankScope? (user|org)."
        ),
        description=(
            "The memory as it is now (also a retired one, with `retired_by`) and a page of its versions, newest "
            "first: the current one leads the first page, then the earlier versions the server keeps (the last "
            "`MEMORYBANK_REVISIONS_KEPT`, 20 by default), each with when it was written, through which door (`rest`, "
            "`mcp`, `panel`, `import`) and with which credential (an id or an issuer, never a secret). Any id that "
            "is not one of the caller's memories gets the same 404. The answer's `ETag` is the memory's revision."
        ),
        handler=MemoryHandlers.revisions,
        success_status=200,
        success_schema=schemas.ref("MemoryRevisions"),
        error_statuses=(400, 401, 403, 404, 429, 503),
        required_scope=READ_SCOPE,
        operation=Operation.LIST,
        path_params=(
            Param(
                name="memoryId",
                schema={"type": "string", "minLength": 1},
                description="The memory's id, `mem_` and 26 base32 characters.",
                required=True,
            ),
        ),
        query_params=(
            _count_param("limit", limits.REVISIONS_LIMIT, "Page size:"),
            Param(
                name="cursor",
                schema={"type": "string", "minLength": 1, "maxLength": limits.CURSOR_MAX_LENGTH},
                description="Where to continue: the `next_cursor` of the previous page.",
            ),
            _BANK_SCOPE,
        ),
        etag=True,
    ),
    RouteSpec(
        method="PATCH",
        path="/v1/memory/{id}",
        match_path="/v1/memory/{id:path}",
        summary=EDIT_SUMMARY,
        description=(
            "Changes one of the caller's memories: each of `content`, `tags` and `contexts` given replaces the "
            'stored one, with a save\'s bounds and secret screen; `{"retired": false}` restores a memory a later '
            "save replaced. The id and `created_at` stay, `updated_at` moves, and the version replaced is kept "
            "(see the revisions route). `If-Match` (the `ETag` of an earlier answer) or the body's `revision` "
            "names the version the change is based on: if the memory changed since, nothing is written and the "
            "answer is 412 `revision_conflict` with the memory as it is now. A change that changes nothing "
            "answers the memory as it is. Any id that is not one of the caller's memories gets the same 404. In the "
            "org bank (`bankScope=org`) only a memory's author or an `org:admin` may change it: anyone else gets 403 "
            "`not_memory_author`."
        ),
        handler=MemoryHandlers.edit,
        success_status=200,
        success_schema=schemas.ref("EditedMemory"),
        error_statuses=(400, 401, 403, 404, 412, 413, 415, 422, 429, 503),
        required_scope=WRITE_SCOPE,
        operation=Operation.SAVE,
        path_params=(_MEMORY_ID,),
        query_params=(_BANK_SCOPE,),
        header_params=(
            Param(
                name="If-Match",
                schema={"type": "string", "minLength": 1},
                description=(
                    'The `ETag` of the version the change is based on (`"3"`), or several, comma-separated; `*` '
                    "accepts any. A weak or stale tag gets 412 `revision_conflict`."
                ),
            ),
        ),
        body_schema=schemas.ref("EditMemoryRequest"),
        etag=True,
    ),
    RouteSpec(
        method="DELETE",
        path="/v1/memory/{id}",
        # `path` convertor: an id with slashes (path traversal) still reaches the handler and gets the one 404.
        match_path="/v1/memory/{id:path}",
        summary=(
            "Delete one of your memories and its contexts, permanently. Path: id (mem_...). Query: bankScope? "
            "(user|org)."
        ),
        description=(
            "Hard-deletes the memory with all its contexts and every kept earlier version. Any id that is not one "
            "of the caller's memories (malformed, never existing, already deleted, someone else's) gets the same 404. "
            "In the org bank (`bankScope=org`) only a memory's author or an `org:admin` may delete it: anyone else "
            "gets 403 `not_memory_author`."
        ),
        handler=MemoryHandlers.delete,
        success_status=204,
        success_schema=None,
        error_statuses=(400, 401, 403, 404, 429, 503),
        required_scope=WRITE_SCOPE,
        operation=Operation.DELETE,
        path_params=(_MEMORY_ID,),
        query_params=(_BANK_SCOPE,),
    ),
)
"""The memory routes, in matching order (the search route precedes the `{id}` route)."""


def check_route_table(routes: Sequence[RouteSpec]) -> Mapping[str, str]:
    """Validate a route table's names; return each operationId's capability name.

    Raises:
        OperationIdError: a duplicate operationId, or a name over 49 characters or colliding.
    """
    return capability_names(route.operation_id for route in routes)
