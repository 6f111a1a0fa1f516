"""The two tools of the rail: `search_capabilities` and `execute_capability`.

Memory is reached by executing a discovered capability, never by a bespoke tool. Every
failure an agent can fix (a bad argument, an unknown name, a missing scope, a 4xx from
the route) is a tool result with `isError`, so the model sees it and can correct itself.
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
import pydantic_core
from mcp_types import methods
from starlette.types import ASGIApp

from adapters_http import CallerRefusedError, DeferredPrincipal
from adapters_mcp.catalog import Capability, Catalog, JsonObject
from adapters_mcp.inprocess import HttpAnswer, call_app, fill_path, query_string
from adapters_mcp.memory_switch import memory_on
from adapters_mcp.ranking import rank
from memorybank_core import Principal
from memorybank_core.strict_json import strict_json

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

SEARCH_TOOL = "search_capabilities"
EXECUTE_TOOL = "execute_capability"
TOOL_NAMES = (SEARCH_TOOL, EXECUTE_TOOL)

DEFAULT_SEARCH_LIMIT = 5
MAX_SEARCH_LIMIT = 20
MAX_QUERY_LENGTH = 512
CAPABILITY_TIMEOUT_SECONDS = 180.0
"""The reference host's budget for one executed capability."""

NO_MATCH_HINT = "No matches. Try broader or different keywords."
MEMORY_OFF_HINT = (
    "Memory is switched off for this person's account by the operator of this memory bank: no memory capability "
    "is available. Tell the person their memory bank is switched off and that they can ask the people who run it."
)
#: What the agent should tell the person when a memory route refuses for one of these reasons.
_AGENT_ADVICE: dict[object, str] = {
    "quota_exceeded": "The person's memory bank is full, so this memory was NOT saved. Tell them, and offer to "
    "list their memories (getMemory) so they can choose old ones to delete (deleteMemoryById) before saving again.",
    "secret_detected": "This memory was NOT saved: it holds what looks like a credential (see details for the field, "
    "kind and character range). Never save the secret itself. Tell the person, then offer to save a pointer to "
    "where it is kept instead, e.g. \"the deploy token is in 1Password under 'ci-deploy'\", and save that only after "
    "they confirm.",
    "screen_budget_exceeded": "This memory was NOT saved: its text is too costly to check for credentials (a long "
    "run of assignments, keys or quotes). Save a shorter summary in plain words instead.",
    "revision_conflict": "This memory was NOT changed: it changed since the revision you based the edit on (the "
    "person or another agent edited it). `memory` above is how it is now. Show it to the person and ask whether your "
    "change still applies before editing again with its current `revision`.",
    "not_memory_author": "This team memory was NOT changed: only the person who saved it (its `author`) or an org "
    "admin may change or delete it. Tell the person, and suggest they ask its author.",
    "memory_disabled": "Memory is switched off for this person's account by the operator of this memory bank; "
    "nothing was read or written. Tell the person; only the people who run the bank can switch it back on.",
}

# Rail error codes (the reference host's), carried in the `error` field of a tool error.
INVALID_TOOL_INPUT = "invalid_tool_input"
UNKNOWN_CAPABILITY = "unknown_capability"
INSUFFICIENT_MCP_SCOPE = "insufficient_mcp_scope"
CAPABILITY_TIMEOUT = "capability_timeout"
CAPABILITY_FAILED = "capability_failed"

logger = logging.getLogger(__name__)

_OBJECT_OR_JSON = "an object, or a string holding a JSON object"

SEARCH_INPUT_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_QUERY_LENGTH,
            "description": 'What you want to do, in plain words: "save a memory", "search my memories".',
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_SEARCH_LIMIT,
            "default": DEFAULT_SEARCH_LIMIT,
            "description": f"How many matches at most: 1 to {MAX_SEARCH_LIMIT}, default {DEFAULT_SEARCH_LIMIT}.",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}

# Single-type `anyOf` branches rather than `type` arrays: clients that map tool schemas onto a
# single-type dialect (Gemini's OpenAPI subset) reject arrays; the Inspector's --strict flags them.
_SCALAR: JsonObject = {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}]}

EXECUTE_INPUT_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {
        "name": {
            "type": "string",
            "minLength": 1,
            "maxLength": 128,
            "description": "A capability name returned by search_capabilities, e.g. postMemory.",
        },
        "path": {
            "type": "object",
            "additionalProperties": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "description": 'Values for the capability\'s pathParams, e.g. {"id": "mem_..."}.',
        },
        "query": {
            "type": "object",
            "additionalProperties": {"anyOf": [*_SCALAR["anyOf"], {"type": "array", "items": _SCALAR}]},
            "description": 'Values for the capability\'s queryParams, e.g. {"q": "deploy target", "limit": 5}.',
        },
        "body": {
            "type": "object",
            "additionalProperties": True,
            "description": "The JSON body when hasBody is true: see the capability's summary and bodySchema.",
        },
    },
    "required": ["name"],
    "additionalProperties": False,
}

_MATCH_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "method": {"type": "string"},
        "path": {"type": "string"},
        "score": {"type": "number"},
        "summary": {"type": "string"},
        "pathParams": {"type": "array", "items": {"type": "string"}},
        "queryParams": {"type": "array", "items": {"type": "string"}},
        "hasBody": {"type": "boolean"},
        "bodySchema": {"type": "object", "additionalProperties": True},
    },
    "required": ["name", "method", "path", "score", "summary", "pathParams", "queryParams", "hasBody"],
    "additionalProperties": True,
}

SEARCH_OUTPUT_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {"matches": {"type": "array", "items": _MATCH_SCHEMA}, "hint": {"type": "string"}},
    "required": ["matches"],
    "additionalProperties": True,
}

EXECUTE_OUTPUT_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {
        "status": {"type": "integer", "description": "The route's HTTP status."},
        "body": {
            "anyOf": [{"type": "object", "additionalProperties": True}, {"type": "array"}, {"type": "null"}],
            "description": "The route's JSON body; null when it sent none (204).",
        },
    },
    "required": ["status", "body"],
    "additionalProperties": True,
}

SEARCH_DESCRIPTION = (
    "Find the capability (REST operation) that does what you need, ranked by relevance to a plain-words query "
    '("save a memory", "search my memories", "list my memories", "delete a memory"). Each match gives the name '
    "to pass to execute_capability, its method and path, its pathParams and queryParams, and whether it takes "
    "a JSON body (hasBody, bodySchema). Call this first; never guess a name."
)
EXECUTE_DESCRIPTION = (
    "Run one capability found with search_capabilities, as the signed-in user: name, plus path (values for its "
    'pathParams), query (values for its queryParams) and body (a JSON object when hasBody is true), e.g. {"name": '
    '"getMemorySearch", "query": {"q": "deploy target"}}. Returns the route\'s JSON answer; an HTTP status of 400 '
    "or more is reported as an error with the route's explanation."
)


class UnknownToolError(LookupError):
    """A `tools/call` named a tool the rail does not have (a protocol error, not a tool error)."""


def tool_definitions() -> list[types.Tool]:
    """The rail's two tools, with their schemas and annotations."""
    return [
        types.Tool(
            name=SEARCH_TOOL,
            title="Search capabilities",
            description=SEARCH_DESCRIPTION,
            input_schema=SEARCH_INPUT_SCHEMA,
            output_schema=SEARCH_OUTPUT_SCHEMA,
            annotations=types.ToolAnnotations(
                title="Search capabilities",
                read_only_hint=True,
                destructive_hint=False,
                idempotent_hint=True,
                open_world_hint=False,
            ),
        ),
        types.Tool(
            name=EXECUTE_TOOL,
            title="Execute a capability",
            description=EXECUTE_DESCRIPTION,
            input_schema=EXECUTE_INPUT_SCHEMA,
            output_schema=EXECUTE_OUTPUT_SCHEMA,
            annotations=types.ToolAnnotations(
                title="Execute a capability",
                read_only_hint=False,
                destructive_hint=True,
                idempotent_hint=False,
                open_world_hint=False,
            ),
        ),
    ]


class ToolInputError(ValueError):
    """Arguments that do not fit a tool's input schema; `details` names every problem by path."""

    def __init__(self, message: str, details: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.details = details or []


class CapabilityRail:
    """The rail over one catalog and one REST app: lists, searches and executes capabilities."""

    def __init__(self, catalog: Catalog, app: ASGIApp, *, timeout: float = CAPABILITY_TIMEOUT_SECONDS) -> None:
        """`app` is the REST app the catalog describes; it is called in-process with each caller's principal."""
        self.catalog = catalog
        self._app = app
        self._timeout = timeout
        self._tools = tool_definitions()

    @functools.cached_property
    def _validators(self) -> dict[str, Draft202012Validator]:
        # Built on the first call, not at start: jsonschema's import is a good part of a second of a stdio
        # rail's start-up, before it can answer `initialize` (docs/benchmarks.md, Start-up).
        from jsonschema import Draft202012Validator

        return {
            SEARCH_TOOL: Draft202012Validator(SEARCH_INPUT_SCHEMA),
            EXECUTE_TOOL: Draft202012Validator(EXECUTE_INPUT_SCHEMA),
        }

    def tools(self) -> list[types.Tool]:
        """The two tool definitions."""
        return [tool.model_copy(deep=True) for tool in self._tools]

    async def call(
        self, name: str, arguments: Mapping[str, Any] | None, principal: Principal | DeferredPrincipal
    ) -> types.CallToolResult:
        """Run tool `name` for `principal`; every failure but an unknown tool is a tool error.

        Raises:
            UnknownToolError: `name` is neither of the two tools.
        """
        started = time.perf_counter()
        if name == SEARCH_TOOL:
            result = self.search_capabilities(arguments)
            outcome = "error" if result.is_error else "ok"
            logger.info("mcp.tool tool=%s outcome=%s ms=%.1f", name, outcome, _ms(started))
            return result
        if name == EXECUTE_TOOL:
            result, capability, status = await self._execute(arguments, principal)
            logger.info(
                "mcp.tool tool=%s capability=%s status=%s outcome=%s ms=%.1f",
                name,
                capability or "-",
                status if status is not None else "-",
                "error" if result.is_error else "ok",
                _ms(started),
            )
            return result
        raise UnknownToolError(name)

    def search_capabilities(self, arguments: Mapping[str, Any] | None) -> types.CallToolResult:
        """`{query, limit?}` -> `{matches: [...]}`, best first; an empty list with a hint when nothing matches."""
        try:
            args = self._validated(SEARCH_TOOL, _without_nulls(arguments or {}))
        except ToolInputError as error:
            return _input_error(error)
        if not memory_on():
            # Every capability of this catalog is a memory capability: none is offered while memory is off.
            off: JsonObject = {"matches": [], "hint": MEMORY_OFF_HINT}
            return _success(off, off)
        limit = int(args.get("limit", DEFAULT_SEARCH_LIMIT))
        ranked = rank(self.catalog, str(args["query"]), limit=limit)
        answer: JsonObject = {"matches": [entry.capability.describe(score=entry.score) for entry in ranked]}
        if not ranked:
            answer["hint"] = NO_MATCH_HINT
        return _success(answer, answer)

    async def _execute(
        self, arguments: Mapping[str, Any] | None, principal: Principal | DeferredPrincipal
    ) -> tuple[types.CallToolResult, str | None, int | None]:
        outcome, name = await self._run(arguments, principal)
        if isinstance(outcome, HttpAnswer):
            return _route_result(name or "-", outcome), name, outcome.status
        return outcome, name, None

    async def execute_result_parts(
        self, arguments: Mapping[str, Any] | None, principal: Principal | DeferredPrincipal, *, protocol_version: str
    ) -> list[bytes]:
        """`execute_capability`'s `CallToolResult` as the JSON the SDK would send for it at `protocol_version`,
        with the route's JSON body spliced in as it came (never decoded and encoded again): in parts, for the
        transport to join once with its framing (an answer at the bounds is 1.7 MB; each join a copy of it).

        The HTTP transport's one-pass path (`adapters_mcp.exchange`); `call` is the same tool through the SDK.

        Raises:
            CallerRefusedError: `principal` is deferred and its check turned the caller away.
        """
        started = time.perf_counter()
        outcome, name = await self._run(arguments, principal)
        status = outcome.status if isinstance(outcome, HttpAnswer) else None
        spliced = route_result_parts(outcome) if isinstance(outcome, HttpAnswer) else None
        if spliced is None:
            result = _route_result(name or "-", outcome) if isinstance(outcome, HttpAnswer) else outcome
            dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
            spliced = [pydantic_core.to_json(methods.serialize_server_result("tools/call", protocol_version, dumped))]
            is_error = bool(result.is_error)
        else:
            is_error = status is not None and status >= 400
        logger.info(
            "mcp.tool tool=%s capability=%s status=%s outcome=%s ms=%.1f",
            EXECUTE_TOOL,
            name or "-",
            status if status is not None else "-",
            "error" if is_error else "ok",
            _ms(started),
        )
        return spliced

    async def _run(
        self, arguments: Mapping[str, Any] | None, principal: Principal | DeferredPrincipal
    ) -> tuple[HttpAnswer | types.CallToolResult, str | None]:
        """The route's answer to `arguments`, or the rail's own error result; and the capability's name."""
        try:
            args = self._validated(EXECUTE_TOOL, _decoded(_without_nulls(arguments or {})))
        except ToolInputError as error:
            return _input_error(error), None
        name = str(args["name"])
        capability = self.catalog.get(name)
        if capability is None:
            message = f'No capability named "{name}". Call search_capabilities to find a valid name.'
            return _rail_error(UNKNOWN_CAPABILITY, message), None
        try:
            path, query, body = _request_parts(capability, args)
        except ToolInputError as problem:
            return _input_error(problem), name
        try:
            # The deadline cancels the route's awaits; a storage call already running in the thread
            # pool finishes first (threads cannot be interrupted), so it bounds waiting, not work.
            with anyio.fail_after(self._timeout):
                answer = await call_app(
                    self._app, method=capability.method, path=path, query=query, body=body, principal=principal
                )
        except TimeoutError:
            message = f"{name} did not answer within {self._timeout:g} seconds; it may or may not have run."
            return _rail_error(CAPABILITY_TIMEOUT, message), name
        except CallerRefusedError:
            raise  # the caller was never admitted: the transport answers it
        except Exception:
            # The REST app answers its own errors; reaching here is a bug. Logged without arguments or content.
            logger.exception("mcp.tool capability=%s failed in-process", name)
            message = f"{name} failed unexpectedly; nothing about the failure is known to be the request's fault."
            return _rail_error(CAPABILITY_FAILED, message), name
        return answer, name

    def _validated(self, tool: str, arguments: Mapping[str, Any]) -> JsonObject:
        validator = self._validators[tool]
        errors = sorted(validator.iter_errors(arguments), key=lambda e: (list(e.absolute_path), e.message))
        if errors:
            details = [{"path": _dotted(error), "message": error.message} for error in errors]
            first = details[0]
            where = f"{first['path']}: " if first["path"] else ""
            raise ToolInputError(f"Invalid arguments for {tool}: {where}{first['message']}", details)
        return dict(arguments)


def _request_parts(capability: Capability, args: Mapping[str, Any]) -> tuple[str, bytes, object]:
    path_values = {key: str(value) for key, value in dict(args.get("path", {})).items()}
    for param in capability.path_params:
        if not path_values.get(param):
            raise ToolInputError(f"Missing path parameter: {param}")
    body = args.get("body")
    if body is not None and not capability.has_body:
        raise ToolInputError(f"{capability.name} takes no body; pass its parameters in path or query.")
    if body is None and capability.has_body:
        raise ToolInputError(f"Missing body: {capability.name} takes a JSON object body (see its summary).")
    # The body goes to the route as the data it already is: the core reads it after its gate.
    return fill_path(capability.path, path_values), query_string(dict(args.get("query", {}))), body


def _route_result(name: str, answer: HttpAnswer) -> types.CallToolResult:
    body = _json_body(answer)
    if answer.status == 403 and isinstance(body, dict) and isinstance(body.get("required_scope"), str):
        # The core refused the scope (it authorizes once); the rail words it as the reference host does.
        required = body["required_scope"]
        message = f"{name} needs the {required} scope, which this token does not have."
        return _rail_error(INSUFFICIENT_MCP_SCOPE, message, requiredScope=required)
    structured: JsonObject = {"status": answer.status, "body": body}
    if body is not None:
        # The body as the route gave it, then (for a refusal the person should hear of) what the agent should say.
        text = answer.body.decode("utf-8") + _advice(body)
    elif answer.body:
        # Not JSON (never expected from the REST app): the text is all there is to show.
        text = answer.body.decode("utf-8", "replace")
    else:
        text = json.dumps(structured)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=answer.status >= 400,
    )


def route_result_parts(answer: HttpAnswer) -> list[bytes] | None:
    """`_route_result(name, answer)` as the JSON the SDK sends for it, in parts around the route's body bytes as
    they are; None when the answer needs more than wrapping (not a JSON object or array, or a scope refusal)."""
    raw = answer.body
    if answer.status == 403 or raw[:1] not in (b"{", b"[") or not _is_json(answer):
        return None
    text = raw.decode("utf-8")
    if answer.status >= 400:
        # A refusal is small: read for its error code, which may call for advice to the agent.
        text += _advice(json.loads(raw))
    return [
        b'{"content":[{"text":',
        pydantic_core.to_json(text),
        b',"type":"text"}],"isError":',
        b"true" if answer.status >= 400 else b"false",
        b',"structuredContent":{"status":',
        str(answer.status).encode("ascii"),
        b',"body":',
        raw,
        b"}}",
    ]


def _advice(body: object) -> str:
    advice = _AGENT_ADVICE.get(body.get("error")) if isinstance(body, dict) else None
    return "" if advice is None else f"\n{advice}"


def _is_json(answer: HttpAnswer) -> bool:
    content_type = (answer.header("content-type") or "").split(";")[0].strip().lower()
    return content_type == "application/json"


def _json_body(answer: HttpAnswer) -> Any:
    if not answer.body or not _is_json(answer):
        return None
    try:
        value = json.loads(answer.body)
    except ValueError:
        return None
    return value if isinstance(value, dict | list) else None


def _decoded(arguments: Mapping[str, Any]) -> JsonObject:
    # Agents often send path/query/body as JSON text; a string that is not a JSON object is left
    # for the schema check to reject with a message naming the field.
    decoded = dict(arguments)
    for key in ("path", "query", "body"):
        value = decoded.get(key)
        if isinstance(value, str):
            try:
                parsed = strict_json(value)
            except (ValueError, RecursionError) as error:
                message = f"Invalid arguments for {EXECUTE_TOOL}: {key} must be {_OBJECT_OR_JSON}"
                raise ToolInputError(message, [{"path": key, "message": f"must be {_OBJECT_OR_JSON}"}]) from error
            if parsed is not None:
                decoded[key] = parsed
            else:
                del decoded[key]
    return decoded


def _without_nulls(arguments: Mapping[str, Any]) -> JsonObject:
    # Agents send `"body": null` for "no body"; null is absence for every optional argument.
    return {key: value for key, value in arguments.items() if value is not None}


def _dotted(error: ValidationError) -> str:
    return ".".join(str(part) for part in error.absolute_path)


def _success(text_value: JsonObject, structured: JsonObject) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(text_value, ensure_ascii=False))],
        structured_content=structured,
    )


def _rail_error(code: str, message: str, **extra: str) -> types.CallToolResult:
    # Text only: structured content on an error would have to match the tool's output schema for
    # clients (the TypeScript SDK) that validate it even when isError is set.
    payload = {"error": code, "message": message, **extra}
    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(payload))], is_error=True)


def _input_error(error: ToolInputError) -> types.CallToolResult:
    payload: JsonObject = {"error": INVALID_TOOL_INPUT, "message": str(error)}
    if error.details:
        payload["details"] = error.details
    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(payload))], is_error=True)


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000
