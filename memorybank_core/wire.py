"""A memory as JSON data: the one place the shape of a memory in JSON is written.

The REST and MCP answers carry `memory_json`; the JSON Lines export writes the same object
with microseconds and the owner's ids; the SQL citation column is `citation_ids`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from memorybank_core.entities import Citation, Memory, MemoryContext, Scope

Json = dict[str, Any]
"""A JSON object as Python data."""

#: Wire timestamps carry milliseconds, as the reference host's JavaScript `Date` prints them.
#: Storage keeps microseconds; the export, which must round-trip exactly, writes them all.
WIRE_TIMESPEC = "milliseconds"
EXPORT_TIMESPEC = "microseconds"


def utc_timestamp(value: datetime, *, timespec: str = WIRE_TIMESPEC) -> str:
    """`2026-07-02T12:00:00.001Z`: ISO 8601 in UTC with a `Z`, to `timespec` precision."""
    return value.astimezone(UTC).isoformat(timespec=timespec).replace("+00:00", "Z")


def citation_ids(citation: Citation | None) -> Json:
    """The citation's ids that were given, by name; empty when there is no citation."""
    if citation is None:
        return {}
    fields = {"conversation_id": citation.conversation_id, "message_id": citation.message_id}
    return {key: value for key, value in fields.items() if value is not None}


def context_json(context: MemoryContext, *, timespec: str = WIRE_TIMESPEC) -> Json:
    """One context of a memory (`citation` null when no id was given)."""
    return {
        "id": context.id,
        "snippet": context.snippet,
        "citation": citation_ids(context.citation) or None,
        "origin": context.origin.value if context.origin is not None else None,
        "created_at": utc_timestamp(context.created_at, timespec=timespec),
    }


#: The export format's version, written on every line: 2 added each memory's history (`revisions`), its
#: retirement and who wrote it; lines without a `format` (version 1) import as memories without history.
EXPORT_FORMAT = 2


def export_line(memory: Memory, revisions: Sequence[Memory] = ()) -> str:
    """One line of an export (`memorybank export`, the panel's download): the wire's memory object with the
    owner's ids, microsecond timestamps, who wrote it and its kept earlier versions (newest first), which
    `memorybank import` reads back as exactly `memory` and `revisions`."""
    current = revision_json(memory, timespec=EXPORT_TIMESPEC)
    line = {
        **memory_json(memory, timespec=EXPORT_TIMESPEC),
        "user_id": memory.user_id,
        "org_id": memory.org_id,
        "format": EXPORT_FORMAT,
        "door": current["door"],
        "credential": current["credential"],
        "revisions": [revision_json(version, timespec=EXPORT_TIMESPEC) for version in revisions],
    }
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"))


def memory_json(memory: Memory, *, timespec: str = WIRE_TIMESPEC) -> Json:
    """A memory with its contexts. The owner's ids stay out: on the wire the caller is the owner (of a personal
    memory), or a member of its organization (of an org memory, which adds its `author`, who saved it, and
    `author_former_member`, true once a purge removed that person)."""
    shape = {
        "id": memory.id,
        "content": memory.content,
        "tags": list(memory.tags),
        "source": memory.source.value,
        "scope": memory.scope.value,
        "created_at": utc_timestamp(memory.created_at, timespec=timespec),
        "updated_at": utc_timestamp(memory.updated_at, timespec=timespec),
        "contexts": [context_json(context, timespec=timespec) for context in memory.contexts],
        "revision": memory.revision,
        "retired_by": memory.retired_by,
    }
    if memory.scope is Scope.ORG:
        shape["author"] = memory.author
        shape["author_former_member"] = memory.author_former_member
    return shape


def etag(memory: Memory) -> str:
    """The memory's entity tag: its revision, quoted (a strong tag, RFC 9110 section 8.8.3)."""
    return f'"{memory.revision}"'


def revision_json(version: Memory, *, timespec: str = WIRE_TIMESPEC) -> Json:
    """One version of a memory, as its history shows it: its texts and retirement, when it was written, through
    which door (`rest`, `mcp`, `panel`, `import`) and with which credential (an id or an issuer, never a secret);
    both null for versions written before revisions were kept."""
    written_by = version.written_by
    return {
        "revision": version.revision,
        "content": version.content,
        "tags": list(version.tags),
        "contexts": [context_json(context, timespec=timespec) for context in version.contexts],
        "retired_by": version.retired_by,
        "updated_at": utc_timestamp(version.updated_at, timespec=timespec),
        "door": written_by.door.value if written_by is not None else None,
        "credential": written_by.credential if written_by is not None else None,
    }
