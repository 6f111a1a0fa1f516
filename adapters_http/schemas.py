"""JSON Schemas of the wire format, every bound taken from `memorybank_core.limits`.

They feed the OpenAPI document and, through it, the MCP capability catalog and
the schemathesis run, so the documented bounds are the enforced ones.
"""

from __future__ import annotations

from typing import Any

from memorybank_core import limits
from memorybank_core.banks import BankScope
from memorybank_core.entities import MATCH_KINDS, Door, Origin, Scope, Source
from memorybank_core.requests import DELETE_ALL_CONFIRMATION
from memorybank_core.validation import INVISIBLE_CHARACTERS

JsonSchema = dict[str, Any]
"""A JSON Schema (2020-12, as OpenAPI 3.1 uses it) as plain JSON data."""

# Bounds count characters after trimming, and the core refuses NUL and invisible-only text: so a
# client string must hold a character that Python's str.strip() keeps (ECMA `\s` lacks \x1c-\x1f
# and \x85) and that is not invisible, and no NUL anywhere.
_NOT_BLANK = rf"^[^\u0000]*[^\s\u0000\u001c-\u001f\u0085{INVISIBLE_CHARACTERS}][^\u0000]*$"


def _ref(name: str) -> JsonSchema:
    return {"$ref": f"#/components/schemas/{name}"}


def _text(bound: limits.TextBound, description: str) -> JsonSchema:
    return {
        **text(bound),
        "description": f"{description} {bound.min} to {bound.max} characters after trimming surrounding whitespace.",
    }


def text(bound: limits.TextBound) -> JsonSchema:
    """A client-sent string within `bound` once trimmed (so not blank)."""
    return {"type": "string", "minLength": bound.min, "maxLength": bound.max, "pattern": _NOT_BLANK}


def _optional(schema: JsonSchema) -> JsonSchema:
    # The core reads `null` as "not given", so the schema must admit it wherever a field is optional.
    return {**schema, "type": [schema["type"], "null"]}


def _stored_text(bound: limits.TextBound, description: str) -> JsonSchema:
    return {"type": "string", "minLength": bound.min, "maxLength": bound.max, "description": description}


def _timestamp(description: str) -> JsonSchema:
    return {"type": "string", "format": "date-time", "description": f"{description} ISO-8601, UTC."}


def _nullable_enum(values: list[str], description: str) -> JsonSchema:
    return {"type": ["string", "null"], "enum": [*values, None], "description": description}


def _origins() -> list[str]:
    return [origin.value for origin in Origin]


CONTEXT_INPUT: JsonSchema = {
    "type": "object",
    "description": "Provenance for the memory: a snippet the agent gathered, and where it came from.",
    "required": ["snippet"],
    "properties": {
        "snippet": _text(limits.SNIPPET, "The excerpt,"),
        "conversation_id": _optional(_text(limits.CITATION_ID, "The conversation the snippet came from,")),
        "message_id": _optional(_text(limits.CITATION_ID, "The message the snippet came from,")),
        "origin": _nullable_enum(
            _origins(), "Whether the snippet came from the conversation at hand or from a searched one."
        ),
    },
}

_TAGS_INPUT: JsonSchema = {
    # No maxItems: exact repeats are dropped before the bound is counted (33 copies of one
    # tag are one tag), which JSON Schema cannot say; the core refuses more distinct tags.
    "type": "array",
    "items": _text(limits.TAG, "A tag,"),
    "description": f"Up to {limits.TAGS_MAX} distinct tags; exact repeats are dropped.",
}
_CONTEXTS_INPUT: JsonSchema = {
    "type": "array",
    "maxItems": limits.CONTEXTS_MAX,
    # Inlined, not a $ref: capability catalogs show this schema to agents as it stands.
    "items": CONTEXT_INPUT,
    "description": f"Up to {limits.CONTEXTS_MAX} snippets backing the memory.",
}

SAVE_REQUEST: JsonSchema = {
    "type": "object",
    "description": (
        "A human-verified memory to save. Unknown fields are ignored, and so are `scope` and `source`: the "
        "server stores the memory in the caller's own bank, or with `bankScope` `org` in their organization's."
    ),
    "required": ["content"],
    "properties": {
        "content": _text(limits.CONTENT, "The memory: one crisp, self-contained statement,"),
        "tags": _optional(_TAGS_INPUT),
        "contexts": _optional(_CONTEXTS_INPUT),
        "supersedes": _optional(
            {
                "type": "array",
                "maxItems": limits.SUPERSEDES_MAX,
                "items": {"type": "string", "minLength": limits.ID.min, "maxLength": limits.ID.max},
                "description": (
                    f"Ids (`mem_…`) of up to {limits.SUPERSEDES_MAX} of your memories this one replaces, once the "
                    "person confirmed it: they are retired in the same transaction (left out of search and lists, "
                    "kept, restorable). An id that is not one of yours is a 404 and nothing is saved."
                ),
            }
        ),
        "bankScope": {
            # null is the field not given, as for the other optional fields: the caller's own bank.
            "type": ["string", "null"],
            "enum": [BankScope.USER.value, BankScope.ORG.value, None],
            "default": BankScope.USER.value,
            "description": (
                "`user` (the default): your own bank. `org`: the bank your organization shares (needs `org:write`), "
                "only when the person says the memory is for the team, never for anything personal."
            ),
        },
    },
}

EDIT_REQUEST: JsonSchema = {
    "type": "object",
    "description": (
        "What to change: each field given replaces the stored one (with a save's bounds); the others stay. "
        "At least one of content, tags, contexts or retired."
    ),
    "properties": {
        "content": _text(limits.CONTENT, "The new wording,"),
        "tags": _optional(_TAGS_INPUT),
        "contexts": _optional(_CONTEXTS_INPUT),
        "retired": {
            "type": ["boolean", "null"],
            "enum": [False, None],
            "description": "`false` restores a memory a later save replaced (`retired_by`) into search and lists.",
        },
        "revision": {
            "type": ["integer", "null"],
            "minimum": 1,
            "description": (
                "The revision your change is based on (as `If-Match` says it, for callers that cannot send "
                "headers): if the memory changed since, nothing is written and the answer is 412 "
                "`revision_conflict` with the memory as it is now."
            ),
        },
    },
    # "At least one" said in the schema too, so a client that validates before sending (and a fuzzer) knows `{}`
    # and `{"revision": 3}` change nothing (400). A null is a field not given.
    "anyOf": [
        {"required": ["content"], "properties": {"content": {"type": "string"}}},
        {"required": ["tags"], "properties": {"tags": {"type": "array"}}},
        {"required": ["contexts"], "properties": {"contexts": {"type": "array"}}},
        {"required": ["retired"], "properties": {"retired": {"const": False}}},
    ],
}

CITATION: JsonSchema = {
    "type": "object",
    "description": "Where a snippet came from; each id is present only when the client gave it.",
    "properties": {
        "conversation_id": _stored_text(limits.CITATION_ID, "The conversation the snippet came from."),
        "message_id": _stored_text(limits.CITATION_ID, "The message the snippet came from."),
    },
    "additionalProperties": False,
}

CONTEXT: JsonSchema = {
    "type": "object",
    "required": ["id", "snippet", "citation", "origin", "created_at"],
    "properties": {
        "id": _stored_text(limits.ID, "The context's id (`mctx_…`)."),
        "snippet": _stored_text(limits.SNIPPET, "The excerpt, trimmed."),
        "citation": {"anyOf": [_ref("Citation"), {"type": "null"}], "description": "Null when no id was given."},
        "origin": _nullable_enum(_origins(), "Where the agent found the snippet, if it said."),
        "created_at": _timestamp("When the context was saved (the memory's own creation time)."),
    },
    "additionalProperties": False,
}

MEMORY_PROPERTIES: JsonSchema = {
    "id": _stored_text(limits.ID, "The memory's id (`mem_…`)."),
    "content": _stored_text(limits.CONTENT, "The memory, trimmed."),
    "tags": {"type": "array", "maxItems": limits.TAGS_MAX, "items": _stored_text(limits.TAG, "A tag.")},
    "source": {"type": "string", "enum": [s.value for s in Source], "description": "Set by the server."},
    "scope": {
        "type": "string",
        "enum": [s.value for s in Scope],
        "description": "The bank: `user` (the caller's own) or `org` (the one the caller's organization shares).",
    },
    "created_at": _timestamp("When the memory was saved."),
    "updated_at": _timestamp("When the memory last changed."),
    "contexts": {"type": "array", "maxItems": limits.CONTEXTS_MAX, "items": _ref("MemoryContext")},
    "revision": {
        "type": "integer",
        "minimum": 1,
        "description": "1 when saved; every edit, retirement or restore makes the next. Also the `ETag`.",
    },
    "retired_by": {
        "type": ["string", "null"],
        "maxLength": limits.ID.max,
        "description": "The memory that replaced this one (a save's `supersedes`); null for a current memory.",
    },
}
_MEMORY_REQUIRED = list(MEMORY_PROPERTIES)
MEMORY_PROPERTIES["author"] = {
    "type": "string",
    "maxLength": limits.ID.max,
    "description": "Only on an org memory (`scope` `org`): the user id of the person who saved it.",
}
MEMORY_PROPERTIES["author_former_member"] = {
    "type": "boolean",
    "description": (
        "Only on an org memory (`scope` `org`): true once its author was offboarded (`purge --user`); the memory "
        "stays the team's and `author` still names them."
    ),
}

MEMORY: JsonSchema = {
    "type": "object",
    "description": "A saved memory with its contexts.",
    "required": _MEMORY_REQUIRED,
    "properties": MEMORY_PROPERTIES,
    "additionalProperties": False,
}

SEARCH_RESULT: JsonSchema = {
    "type": "object",
    "description": "A memory that matched, with its relevance and why it was found.",
    "required": [*_MEMORY_REQUIRED, "score", "match"],
    "properties": {
        **MEMORY_PROPERTIES,
        "score": {"type": "number", "exclusiveMinimum": 0, "description": "Relevance; higher is better."},
        "match": {
            "type": "string",
            "enum": list(MATCH_KINDS),
            "description": "Why it was found: `words` (it shares words with the query), `meaning` (hybrid "
            "search: it shares none, but means what was asked) or `both`.",
        },
    },
    "additionalProperties": False,
}

SAVED_MEMORY_RESPONSE: JsonSchema = {
    "type": "object",
    "required": ["memory", "similar"],
    "properties": {
        "memory": _ref("Memory"),
        "similar": {
            "type": "array",
            "maxItems": limits.SIMILAR_MAX,
            "items": _ref("SearchResult"),
            "description": (
                f"Up to {limits.SIMILAR_MAX} of your current memories the new one most resembles, best first; "
                "usually empty. Ask the person whether the new memory replaces one of them: if so, edit that one "
                "(PATCH) instead, or save with `supersedes` naming it."
            ),
        },
    },
    "additionalProperties": False,
}

MEMORY_RESPONSE: JsonSchema = {
    "type": "object",
    "required": ["memory"],
    "properties": {"memory": _ref("Memory")},
    "additionalProperties": False,
}

REVISION: JsonSchema = {
    "type": "object",
    "description": "One version of a memory: its texts and retirement, when and through which door it was written.",
    "required": ["revision", "content", "tags", "contexts", "retired_by", "updated_at", "door", "credential"],
    "properties": {
        "revision": MEMORY_PROPERTIES["revision"],
        "content": MEMORY_PROPERTIES["content"],
        "tags": MEMORY_PROPERTIES["tags"],
        "contexts": MEMORY_PROPERTIES["contexts"],
        "retired_by": MEMORY_PROPERTIES["retired_by"],
        "updated_at": _timestamp("When this version was written."),
        "door": {
            "type": ["string", "null"],
            "enum": [*(door.value for door in Door), None],
            "description": "Through which door it was written; null before revisions were kept.",
        },
        "credential": {
            "type": ["string", "null"],
            "maxLength": limits.CREDENTIAL.max,
            "description": "The credential that wrote it: a token or session id, or an issuer; never a secret.",
        },
    },
    "additionalProperties": False,
}

REVISIONS_RESPONSE: JsonSchema = {
    "type": "object",
    "required": ["memory", "revisions", "next_cursor"],
    "properties": {
        "memory": _ref("Memory"),
        "revisions": {
            "type": "array",
            "maxItems": limits.REVISIONS_LIMIT.max,
            "items": _ref("MemoryRevision"),
            "description": "Newest first: the current version leads the first page, then the earlier ones kept.",
        },
        "next_cursor": {
            "type": ["string", "null"],
            "maxLength": limits.CURSOR_MAX_LENGTH,
            "description": "Pass as `cursor` for the next page; null on the last page.",
        },
    },
    "additionalProperties": False,
}

SEARCH_RESPONSE: JsonSchema = {
    "type": "object",
    "required": ["results"],
    "properties": {
        "results": {
            "type": "array",
            "maxItems": limits.SEARCH_LIMIT.max,
            "items": _ref("SearchResult"),
            "description": "Most relevant first (ties: newest first); empty when nothing matches.",
        }
    },
    "additionalProperties": False,
}

MEMORY_PAGE_RESPONSE: JsonSchema = {
    "type": "object",
    "required": ["memories", "next_cursor"],
    "properties": {
        "memories": {
            "type": "array",
            "maxItems": limits.LIST_LIMIT.max,
            "items": _ref("Memory"),
            "description": "Newest first.",
        },
        "next_cursor": {
            "type": ["string", "null"],
            "maxLength": limits.CURSOR_MAX_LENGTH,
            "description": "Pass as `cursor` for the next page; null on the last page.",
        },
    },
    "additionalProperties": False,
}

_COUNT: JsonSchema = {"type": "integer", "minimum": 0}

USAGE_RESPONSE: JsonSchema = {
    "type": "object",
    "description": "What the caller stores now, and the quota that applies to them (never anyone else's numbers).",
    "required": ["memories", "characters", "quota"],
    "properties": {
        "memories": {**_COUNT, "description": "How many memories the caller has."},
        "characters": {**_COUNT, "description": "Characters of content, tags and snippets, counted together."},
        "quota": {
            "type": "object",
            "required": ["max_memories", "max_characters"],
            "properties": {
                "max_memories": {**_COUNT, "description": "How many memories the caller may keep."},
                "max_characters": {**_COUNT, "description": "How many characters the caller may keep."},
            },
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
}

DELETE_ALL_REQUEST: JsonSchema = {
    "type": "object",
    "required": ["confirm"],
    "properties": {
        "confirm": {"const": DELETE_ALL_CONFIRMATION, "description": "Says the caller means it."},
        "limit": {
            "type": "integer",
            "minimum": limits.DELETE_ALL_BATCH.min,
            "maximum": limits.DELETE_ALL_BATCH.max,
            "default": limits.DELETE_ALL_BATCH.default,
            "description": "At most this many memories go in this call; an integer literal (`200.0` is refused).",
        },
    },
}

DELETE_ALL_RESPONSE: JsonSchema = {
    "type": "object",
    "required": ["deleted", "remaining"],
    "properties": {
        "deleted": {**_COUNT, "description": "How many memories this call deleted."},
        "remaining": {**_COUNT, "description": "How many are left; call again until 0."},
    },
    "additionalProperties": False,
}

EXPORT_LINES: JsonSchema = {
    "type": "string",
    "description": "JSON Lines, newest first: one memory per line, the `Memory` object with `user_id`, `org_id` "
    "and microsecond timestamps, exactly as `memorybank export` writes and `memorybank import` reads.",
}

ERROR: JsonSchema = {
    "type": "object",
    "description": "Every error has this shape.",
    "required": ["error", "message"],
    "properties": {
        "error": {"type": "string", "description": "A stable machine-readable code, e.g. `invalid_request`."},
        "message": {"type": "string", "description": "What went wrong, for a human."},
        "details": {
            "type": "array",
            "description": "For `invalid_request`: every invalid field, by dotted path (`contexts.0.snippet`). "
            "For `quota_exceeded`: every measure the save would break (`memories`, `characters`), with its "
            "`limit`, what is `used` now and what the save `requested`. For `secret_detected`: every "
            "credential found, by field `path`, its `kind` (e.g. `aws_access_key`, `private_key`, `url_password`) "
            "and the characters [`start`, `end`) it spans in the field as saved (trimmed); never the secret.",
            "items": {
                "type": "object",
                "required": ["path", "message"],
                "properties": {
                    "path": {"type": "string"},
                    "message": {"type": "string"},
                    "limit": {"type": "integer", "minimum": 0},
                    "used": {"type": "integer", "minimum": 0},
                    "requested": {"type": "integer", "minimum": 0},
                    "kind": {"type": "string"},
                    "start": {"type": "integer", "minimum": 0},
                    "end": {"type": "integer", "minimum": 0},
                },
                "additionalProperties": False,
            },
        },
        "required_scope": {"type": "string", "description": "For `insufficient_scope`: the scope the call needs."},
        "memory": {
            **_ref("Memory"),
            "description": "For `revision_conflict`: the memory as it is now (yours), to show before deciding again.",
        },
        "retry_after": {
            "type": "integer",
            "minimum": 1,
            "description": "For `rate_limited`: whole seconds until the request can succeed (also in Retry-After).",
        },
    },
    "additionalProperties": False,
}

COMPONENTS: dict[str, JsonSchema] = {
    "SaveMemoryRequest": SAVE_REQUEST,
    "Memory": MEMORY,
    "MemoryContext": CONTEXT,
    "Citation": CITATION,
    "SearchResult": SEARCH_RESULT,
    "SavedMemory": SAVED_MEMORY_RESPONSE,
    "EditedMemory": MEMORY_RESPONSE,
    "EditMemoryRequest": EDIT_REQUEST,
    "MemoryRevision": REVISION,
    "MemoryRevisions": REVISIONS_RESPONSE,
    "SearchResults": SEARCH_RESPONSE,
    "MemoryPage": MEMORY_PAGE_RESPONSE,
    "MemoryUsage": USAGE_RESPONSE,
    "DeleteAllRequest": DELETE_ALL_REQUEST,
    "DeletedBatch": DELETE_ALL_RESPONSE,
    "Error": ERROR,
}
"""Every named schema, as the OpenAPI document's `components.schemas`."""


def ref(name: str) -> JsonSchema:
    """A `$ref` to one of COMPONENTS.

    Raises:
        KeyError: no component has that name.
    """
    if name not in COMPONENTS:
        raise KeyError(name)
    return _ref(name)
