"""The capability catalog: which REST operations an agent may reach through the rail, and how to call them.

Built from the HTTP facade's OpenAPI document, with the reference host's policy, so
a route becomes a capability by being documented and tagged, never by hand-written
MCP code.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from adapters_http import MEMORY_TAG, OperationIdError, build_openapi, capability_names
from memorybank_core.configuration import BankSettings

JsonObject = dict[str, Any]
"""A JSON object as plain data."""

SAFE_INCLUDED_TAGS: frozenset[str] = frozenset({MEMORY_TAG})
"""Tags whose operations an agent may call (the reference host's safe list, for this API)."""

BLOCKED_TAGS: frozenset[str] = frozenset({"Admin", "Authentication", "System", "Webhooks"})
"""Tags that keep an operation out whatever else it carries, `x-mcp: true` included."""

BLOCKED_OPERATION_IDS: frozenset[str] = frozenset(
    {
        # What these routes would be called if this API ever grows them: an agent must never mint or
        # revoke the credentials it runs with, nor delete an organization.
        "postTokens",
        "deleteTokensById",
        "postApiKeys",
        "deleteApiKeysById",
        "deleteOrgsById",
    }
)
"""operationIds never exposed as capabilities, whatever their tags (the reference host keeps such a list)."""

BLOCKED_PATH_PREFIXES: tuple[str, ...] = ("/api/auth",)
BLOCKED_PATH_PARTS: tuple[str, ...] = ("/webhooks", "/admin")

X_MCP = "x-mcp"
"""The OpenAPI extension that forces an operation out (`false`) or in (`true`)."""

HTTP_METHODS: tuple[str, ...] = ("get", "post", "put", "patch", "delete")


class CatalogError(ValueError):
    """The OpenAPI document cannot give a sound catalog: a name over 49 characters, a collision, a broken entry."""


@attrs.frozen(kw_only=True)
class Capability:
    """One REST operation an agent can execute: its name, how to call it, and the scope it needs."""

    name: str
    """The tool-facing name: the operationId after `structural_shorten` (≤ 49 characters)."""
    operation_id: str
    method: str
    """Upper case: `GET`, `POST`, ..."""
    path: str
    """OpenAPI style, parameters in braces: `/v1/memory/{id}`."""
    summary: str
    description: str
    tags: tuple[str, ...]
    path_params: tuple[str, ...]
    query_params: tuple[str, ...]
    body_schema: Mapping[str, Any] | None
    """The JSON request body's schema with every `$ref` inlined; None when the operation takes no body."""
    required_scope: str | None
    """The scope the operation's `security` requirement names (`mcp:read`, `mcp:write`); None if it names none.

    Read from the OpenAPI document, never re-derived here: the core enforces it, the catalog shows it.
    """

    @property
    def has_body(self) -> bool:
        """Whether the operation takes a JSON request body."""
        return self.body_schema is not None

    def describe(self, *, score: float) -> JsonObject:
        """The match entry `search_capabilities` returns for this capability."""
        entry: JsonObject = {
            "name": self.name,
            "method": self.method,
            "path": self.path,
            "score": score,
            "summary": self.summary,
            "pathParams": list(self.path_params),
            "queryParams": list(self.query_params),
            "hasBody": self.has_body,
        }
        if self.body_schema is not None:
            entry["bodySchema"] = copy.deepcopy(dict(self.body_schema))
        return entry


@attrs.frozen
class Catalog:
    """The capabilities, by name, in document order."""

    capabilities: tuple[Capability, ...]

    def __iter__(self) -> Iterator[Capability]:
        return iter(self.capabilities)

    def __len__(self) -> int:
        return len(self.capabilities)

    def get(self, name: str) -> Capability | None:
        """The capability called `name`, or None."""
        return next((capability for capability in self.capabilities if capability.name == name), None)

    @property
    def names(self) -> tuple[str, ...]:
        """Every capability name, in document order."""
        return tuple(capability.name for capability in self.capabilities)


def default_catalog(settings: BankSettings | None = None) -> Catalog:
    """The catalog of the HTTP facade's own memory routes, from their OpenAPI document as `settings` configure
    the bank (`MemoryBank.settings`): an agent reads the defaults the bank applies."""
    return build_catalog(build_openapi(settings=settings))


def is_exposed(
    path: str,
    operation: Mapping[str, Any],
    *,
    safe_tags: frozenset[str] = SAFE_INCLUDED_TAGS,
    blocked_operation_ids: frozenset[str] = BLOCKED_OPERATION_IDS,
) -> bool:
    """The reference host's inclusion policy for one operation, rules in its order.

    `x-mcp: false` excludes; a missing or blocked operationId excludes; a path under
    `/api/auth` or containing `/webhooks` or `/admin` excludes; a blocked tag excludes;
    `x-mcp: true` includes; otherwise the operation is in iff one of its tags is safe.
    """
    flag = operation.get(X_MCP)
    operation_id = operation.get("operationId")
    tags = _tags(operation)
    if flag is False:
        return False
    if not isinstance(operation_id, str) or not operation_id or operation_id in blocked_operation_ids:
        return False
    if path.startswith(BLOCKED_PATH_PREFIXES) or any(part in path for part in BLOCKED_PATH_PARTS):
        return False
    if tags & BLOCKED_TAGS:
        return False
    if flag is True:
        return True
    return bool(tags & safe_tags)


def build_catalog(
    document: Mapping[str, Any],
    *,
    safe_tags: Iterable[str] = SAFE_INCLUDED_TAGS,
    blocked_operation_ids: Iterable[str] = BLOCKED_OPERATION_IDS,
) -> Catalog:
    """The catalog of an OpenAPI 3.x document under the inclusion policy (see `is_exposed`).

    Raises:
        CatalogError: a name over 49 characters or colliding after shortening, or an unusable entry.
    """
    safe = frozenset(safe_tags)
    blocked = frozenset(blocked_operation_ids)
    included: list[tuple[str, str, Mapping[str, Any]]] = []
    for path, item in _mapping(document.get("paths"), "paths").items():
        shared_parameters = _sequence(_mapping(item, f"paths.{path}").get("parameters", []), f"{path} parameters")
        for method in HTTP_METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            operation = _mapping(operation, f"{method.upper()} {path}")
            if is_exposed(path, operation, safe_tags=safe, blocked_operation_ids=blocked):
                merged = {**operation, "parameters": [*shared_parameters, *operation.get("parameters", [])]}
                included.append((method, path, merged))
    try:
        names = capability_names(operation["operationId"] for _, _, operation in included)
    except OperationIdError as error:
        raise CatalogError(f"the capability catalog cannot be built: {error}") from error
    capabilities = tuple(
        _capability(names[operation["operationId"]], method, path, operation, document)
        for method, path, operation in included
    )
    return Catalog(capabilities)


def _capability(
    name: str, method: str, path: str, operation: Mapping[str, Any], document: Mapping[str, Any]
) -> Capability:
    parameters = [_mapping(_resolve(p, document), f"{name} parameter") for p in operation["parameters"]]
    path_params = tuple(str(p["name"]) for p in parameters if p.get("in") == "path")
    query_params = tuple(str(p["name"]) for p in parameters if p.get("in") == "query")
    templated = {segment[1:-1] for segment in path.split("/") if segment.startswith("{") and segment.endswith("}")}
    if templated != set(path_params):
        raise CatalogError(f"{name}: path parameters {sorted(path_params)} do not match the path {path}")
    return Capability(
        name=name,
        operation_id=str(operation["operationId"]),
        method=method.upper(),
        path=path,
        summary=str(operation.get("summary", "")),
        description=str(operation.get("description", "")),
        tags=tuple(sorted(_tags(operation))),
        path_params=path_params,
        query_params=query_params,
        body_schema=_body_schema(name, operation, document),
        required_scope=_required_scope(operation, document),
    )


def _required_scope(operation: Mapping[str, Any], document: Mapping[str, Any]) -> str | None:
    # The operation's own security requirement, else the document's; the first scope it names.
    requirements = operation.get("security", document.get("security", []))
    for requirement in requirements if isinstance(requirements, list) else []:
        for scopes in requirement.values() if isinstance(requirement, Mapping) else []:
            if isinstance(scopes, list) and scopes and isinstance(scopes[0], str):
                return scopes[0]
    return None


def _body_schema(name: str, operation: Mapping[str, Any], document: Mapping[str, Any]) -> JsonObject | None:
    body = operation.get("requestBody")
    if body is None:
        return None
    content = _mapping(_mapping(_resolve(body, document), f"{name} requestBody").get("content", {}), name)
    media = content.get("application/json")
    if media is None:
        raise CatalogError(f"{name}: the rail can only send JSON bodies")
    schema = _mapping(media, f"{name} body").get("schema", {"type": "object"})
    # Inlined: an agent sees the schema alone, without the document its $refs point into.
    inlined = _inline_refs(schema, document, seen=())
    if not isinstance(inlined, dict):
        raise CatalogError(f"{name}: the body schema is not an object")
    return inlined


def _inline_refs(node: Any, document: Mapping[str, Any], *, seen: Sequence[str]) -> Any:
    if isinstance(node, dict):
        reference = node.get("$ref")
        if isinstance(reference, str):
            if reference in seen:
                raise CatalogError(f"recursive schema reference {reference}")
            target = _inline_refs(_follow(reference, document), document, seen=(*seen, reference))
            siblings = {k: _inline_refs(v, document, seen=seen) for k, v in node.items() if k != "$ref"}
            return {**target, **siblings} if isinstance(target, dict) else target
        return {key: _inline_refs(value, document, seen=seen) for key, value in node.items()}
    if isinstance(node, list):
        return [_inline_refs(item, document, seen=seen) for item in node]
    return copy.deepcopy(node)


def _resolve(node: Any, document: Mapping[str, Any]) -> Any:
    reference = node.get("$ref") if isinstance(node, Mapping) else None
    return _follow(reference, document) if isinstance(reference, str) else node


def _follow(reference: str, document: Mapping[str, Any]) -> Any:
    if not reference.startswith("#/"):
        raise CatalogError(f"only local references are supported, not {reference}")
    target: Any = document
    for part in reference[2:].split("/"):
        key = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(target, Mapping) or key not in target:
            raise CatalogError(f"unresolvable reference {reference}")
        target = target[key]
    return target


def _tags(operation: Mapping[str, Any]) -> frozenset[str]:
    tags = operation.get("tags")
    if not isinstance(tags, list):
        return frozenset()
    return frozenset(tag for tag in tags if isinstance(tag, str))


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise CatalogError(f"{where} must be an object")
    return value


def _sequence(value: Any, where: str) -> Sequence[Any]:
    if not isinstance(value, list):
        raise CatalogError(f"{where} must be an array")
    return value
