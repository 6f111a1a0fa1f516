"""Memory rows in and out of SQL, sealed at rest when a key ring is configured.

`RowCodec` is the one place a `Memory` becomes table rows and rows become a `Memory`. Without a
`Sealer` the user texts are stored as they are. With one, each stored user text — `content`,
the `tags` list, each context's `snippet` and its citation ids — is sealed and bound to its
place (table, column, row id, owner; a context also to its memory), and `memory.seal_state`
records the keys that wrote the row and the blind tokens' format (`SealState`; NULL: plaintext).
The row's search document (its blind tokens and their count) gets an authenticator in
`memory.search_mac`, bound to the row's place the same way.

Reading fails closed: a value that does not open (flipped byte, moved from another row or
another user's row, a key the ring lacks, a plaintext row in a database that no longer allows
them), or search tokens whose authenticator does not match (swapped with another row's or
another user's), raises `BrokenSealError`; the store then treats that memory as unavailable and
logs its id, and the other memories keep working.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import attrs

from memorybank_core import (
    BrokenSealError,
    Citation,
    Door,
    Embedding,
    Memory,
    MemoryContext,
    Origin,
    Scope,
    SealBinding,
    Sealer,
    Source,
    WrittenBy,
)
from memorybank_core.embeddings import SCALE_SIZE
from memorybank_core.entities import charged_characters
from memorybank_core.sealing import UnknownSealKeyError
from memorybank_core.wire import EXPORT_TIMESPEC, citation_ids, context_json
from memorybank_search import SearchDocument

MEMORY_TABLE = "memory"
CONTEXT_TABLE = "memory_context"
VECTOR_TABLE = "memory_vector"
REVISION_TABLE = "memory_revision"
_DOORS = frozenset(door.value for door in Door)
_SEAL_STATE = re.compile(r"(k[0-9a-z]{8}):(k[0-9a-z]{8})(?::([0-9]{1,3}))?")


@attrs.frozen
class SealState:
    """What `memory.seal_state` says: the sealing key, the index key, and the blind tokens' format.

    Stored as `<sealing key>:<index key>:<format>`; rows written before token format 2 hold
    `<sealing key>:<index key>` (format 1, tokens without an authenticator).
    """

    sealing_key: str
    index_key: str
    token_format: int

    @classmethod
    def parse(cls, text: str) -> SealState:
        """The state `text` spells.

        Raises:
            BrokenSealError: `text` is not a seal state.
        """
        matched = _SEAL_STATE.fullmatch(text)
        if matched is None:
            raise BrokenSealError("the row's seal state is malformed")
        return cls(matched[1], matched[2], int(matched[3] or 1))

    def __str__(self) -> str:
        if self.token_format == 1:
            return f"{self.sealing_key}:{self.index_key}"
        return f"{self.sealing_key}:{self.index_key}:{self.token_format}"

    @property
    def key_ids(self) -> tuple[str, str]:
        """The ring keys a row in this state needs."""
        return (self.sealing_key, self.index_key)


class RowCodec:
    """Builds `memory` / `memory_context` rows from entities and entities from rows, sealing when keyed."""

    def __init__(self, sealer: Sealer | None = None) -> None:
        self._sealer = sealer
        self._state = (
            SealState(sealer.primary_key_id, sealer.index.key_id, sealer.index.token_format)
            if sealer is not None
            else None
        )
        #: Whether a plaintext row may be read: True until every row is sealed (`SqlStorage` decides).
        self.plaintext_allowed = True
        #: Whether a sealed row of an unauthenticated token format (1) may be read: True until none is left.
        self.unauthenticated_tokens_allowed = True

    @property
    def state(self) -> str | None:
        """The `seal_state` this codec writes (None: plaintext)."""
        return str(self._state) if self._state is not None else None

    @property
    def seal_state(self) -> SealState | None:
        """The state this codec writes, parsed (None: plaintext)."""
        return self._state

    @property
    def reads_search_columns(self) -> bool:
        """True when reading a memory needs its search columns too (to check their authenticator)."""
        return self._sealer is not None

    def memory_row(self, saved: Memory, document: SearchDocument) -> dict[str, Any]:
        """The `memory` row of `saved`, with its search `document` (and its authenticator, when sealing)."""
        tags: Any = list(saved.tags) if saved.tags else None
        content = saved.content
        if self._sealer is not None:
            content = self._seal(content, MEMORY_TABLE, "content", saved.id, saved.user_id)
            if tags is not None:
                tags = self._seal(json.dumps(tags), MEMORY_TABLE, "tags", saved.id, saved.user_id)
        return {
            "id": saved.id,
            "user_id": saved.user_id,
            "org_id": saved.org_id,
            "scope": saved.scope.value,
            "content": content,
            "source": saved.source.value,
            "tags": tags,
            "created_at": saved.created_at,
            "updated_at": saved.updated_at,
            "seal_state": self.state,
            "search_terms": document.search_terms,
            "doc_length": document.doc_length,
            "search_version": document.search_version,
            "search_mac": self.document_mac(saved.id, saved.user_id, document) if self._sealer is not None else None,
            "characters": charged_characters(saved),
            "revision": saved.revision,
            "retired_by": saved.retired_by,
            **_written_columns(saved.written_by),
            "author_id": saved.author,
            # NULL, not false, for every member's and every personal memory: the column's one value is true.
            "author_former_member": True if saved.author_former_member else None,
        }

    def revision_row(self, version: Memory) -> dict[str, Any]:
        """The `memory_revision` row keeping `version`, an earlier version of its memory: its texts in one JSON
        body, sealed when keyed and bound to the owner, memory and revision (a row moved does not open)."""
        body = json.dumps(
            {
                "content": version.content,
                "tags": list(version.tags),
                "contexts": [context_json(context, timespec=EXPORT_TIMESPEC) for context in version.contexts],
                "retired_by": version.retired_by,
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )
        return {
            "user_id": version.user_id,
            "memory_id": version.id,
            "revision": version.revision,
            "body": self.seal_revision_body(
                body, user_id=version.user_id, memory_id=version.id, revision=version.revision
            ),
            "written_at": version.updated_at,
            **_written_columns(version.written_by),
            "seal_state": self.state,
        }

    def seal_revision_body(self, body: str, *, user_id: str, memory_id: str, revision: int) -> str:
        """A revision's JSON body as stored: sealed when keyed, bound to its owner, memory and revision."""
        if self._sealer is None:
            return body
        return self._seal(body, REVISION_TABLE, "body", f"{memory_id}/{revision}", user_id)

    def revision_body(self, row: Any) -> str:
        """The JSON body of a `memory_revision` row, opened when sealed.

        Raises:
            BrokenSealError: a sealed body does not open here, or the row's state is not allowed.
        """
        if row.seal_state is not None:
            if self._sealer is None:
                raise BrokenSealError("the revision is sealed and no key ring is configured")
            return self._open(row.body, REVISION_TABLE, "body", f"{row.memory_id}/{row.revision}", row.user_id)
        if not self.plaintext_allowed:
            raise BrokenSealError("a plaintext revision in a database whose rows are all sealed")
        return str(row.body)

    def revision(self, row: Any, memory: Memory) -> Memory:
        """The earlier version a `memory_revision` row keeps, of `memory` (the current one, for what never changes).

        Raises:
            BrokenSealError: a sealed body does not open here, or the row's state is not allowed.
        """
        try:
            values = json.loads(self.revision_body(row))
            contexts = tuple(_context_from_json(context, memory.id) for context in values["contexts"])
            return Memory.restore(
                id=memory.id,
                user_id=memory.user_id,
                org_id=memory.org_id,
                scope=memory.scope,
                content=str(values["content"]),
                source=memory.source,
                tags=tuple(str(tag) for tag in values["tags"]),
                created_at=memory.created_at,
                updated_at=row.written_at,
                contexts=contexts,
                revision=int(row.revision),
                retired_by=values.get("retired_by"),
                written_by=_written_by(row),
                author=memory.author,
                author_former_member=memory.author_former_member,
            )
        except (ValueError, KeyError, TypeError) as error:
            raise BrokenSealError("a kept revision is malformed") from error

    def document_mac(self, memory_id: str, user_id: str, document: SearchDocument) -> str:
        """The authenticator of `document` as the search tokens of memory `memory_id` of `user_id`."""
        assert self._sealer is not None  # noqa: S101 - only called when sealing
        binding = _terms_binding(memory_id, user_id)
        return self._sealer.index.document_mac(binding, document.search_terms, document.doc_length)

    def context_row(self, context: MemoryContext, user_id: str) -> dict[str, Any]:
        """The `memory_context` row of `context`, owned by `user_id`."""
        citation: Any = citation_ids(context.citation) or None
        snippet = context.snippet
        if self._sealer is not None:
            row_id = _context_row_id(context.memory_id, context.id)
            snippet = self._seal(snippet, CONTEXT_TABLE, "snippet", row_id, user_id)
            if citation is not None:
                citation = self._seal(json.dumps(citation), CONTEXT_TABLE, "citation", row_id, user_id)
        return {
            "id": context.id,
            "memory_id": context.memory_id,
            "user_id": user_id,
            "citation": citation,
            "snippet": snippet,
            "origin": context.origin.value if context.origin is not None else None,
            "created_at": context.created_at,
        }

    def vector_row(self, *, user_id: str, memory_id: str, model: str, embedding: Embedding) -> dict[str, Any]:
        """The `memory_vector` row of a memory's `embedding` by `model`: sealed when keyed (a vector can be
        inverted to much of its text), bound to its owner, memory and model."""
        stored = embedding.to_bytes()
        if self._sealer is not None:
            text = base64.b64encode(stored).decode("ascii")
            stored = self._seal(text, VECTOR_TABLE, "vector", _vector_row_id(memory_id, model), user_id).encode("ascii")
        return {"user_id": user_id, "memory_id": memory_id, "model": model, "vector": stored, "seal_state": self.state}

    def vector(self, row: Any) -> Embedding:
        """The embedding of a `memory_vector` row (user_id, memory_id, model, vector, seal_state).

        Raises:
            BrokenSealError: a sealed vector does not open here, or the row's state is not allowed.
        """
        return Embedding.from_bytes(self.vector_bytes(row))

    def vector_bytes(self, row: Any) -> bytes:
        """The stored form (`Embedding.to_bytes()`) of a `memory_vector` row's embedding, opened when sealed.

        Raises:
            BrokenSealError: a sealed vector does not open here, the row's state is not allowed, or the
                opened bytes do not hold a scale and at least one value.
        """
        stored = bytes(row.vector)
        if row.seal_state is not None:
            if self._sealer is None:
                raise BrokenSealError("the vector is sealed and no key ring is configured")
            text = self._open(
                stored.decode("ascii", "replace"),
                VECTOR_TABLE,
                "vector",
                _vector_row_id(row.memory_id, row.model),
                row.user_id,
            )
            stored = base64.b64decode(text)
        elif not self.plaintext_allowed:
            raise BrokenSealError("a plaintext vector in a database whose rows are all sealed")
        if len(stored) <= SCALE_SIZE:
            raise BrokenSealError("a stored vector is malformed")
        return stored

    def memory(self, row: Any, context_rows: Sequence[Any]) -> Memory:
        """The entity for a `memory` row and its `memory_context` rows.

        Raises:
            BrokenSealError: a sealed value does not open here, or the row's state is not allowed.
        """
        sealed = row.seal_state is not None
        if sealed and self._sealer is None:
            raise BrokenSealError("the row is sealed and no key ring is configured")
        if not sealed and not self.plaintext_allowed:
            raise BrokenSealError("a plaintext row in a database whose rows are all sealed")
        content = row.content
        tags = row.tags
        if sealed:
            self._check_tokens(row)
            content = self._open(content, MEMORY_TABLE, "content", row.id, row.user_id)
            if tags is not None:
                tags = _json_list(self._open(tags, MEMORY_TABLE, "tags", row.id, row.user_id))
        # Our own rows: built without re-running the input validators (`Memory.restore`).
        return Memory.restore(
            id=row.id,
            user_id=row.user_id,
            org_id=row.org_id,
            scope=Scope(row.scope),
            content=content,
            source=Source(row.source),
            tags=tuple(tags or ()),
            created_at=row.created_at,
            updated_at=row.updated_at,
            contexts=tuple([self._context(context, sealed, row.user_id) for context in context_rows]),
            revision=row.revision,
            retired_by=row.retired_by,
            written_by=_written_by(row),
            author=row.author_id,
            author_former_member=bool(row.author_former_member),
        )

    def _context(self, row: Any, sealed: bool, user_id: str) -> MemoryContext:
        snippet = row.snippet
        citation = row.citation
        if sealed:
            row_id = _context_row_id(row.memory_id, row.id)
            snippet = self._open(snippet, CONTEXT_TABLE, "snippet", row_id, user_id)
            if citation is not None:
                citation = _json_object(self._open(citation, CONTEXT_TABLE, "citation", row_id, user_id))
        return MemoryContext.restore(
            id=row.id,
            memory_id=row.memory_id,
            snippet=snippet,
            citation=(
                Citation.restore(conversation_id=citation.get("conversation_id"), message_id=citation.get("message_id"))
                if citation
                else None
            ),
            origin=Origin(row.origin) if row.origin is not None else None,
            created_at=row.created_at,
        )

    def _check_tokens(self, row: Any) -> None:
        """Refuse a sealed row whose search tokens are not the ones written for it (swapped, moved, edited)."""
        assert self._sealer is not None  # noqa: S101 - only called for sealed rows, checked above
        state = SealState.parse(row.seal_state)
        if state.token_format == 1:
            if not self.unauthenticated_tokens_allowed:
                raise BrokenSealError("search tokens without an authenticator where every row has one")
            return
        index = self._sealer.index_for(state.index_key, state.token_format)
        if index is None:
            raise UnknownSealKeyError(
                "search tokens under an index key or format the ring lacks", key_id=state.index_key
            )
        mac = row.search_mac
        terms = row.search_terms or ""
        if not isinstance(mac, str) or not index.verifies(
            mac, _terms_binding(row.id, row.user_id), terms, row.doc_length
        ):
            raise BrokenSealError("search tokens do not belong to this row (tampered or moved)", key_id=state.index_key)

    def _seal(self, text: str, table: str, column: str, row_id: str, user_id: str) -> str:
        assert self._sealer is not None  # noqa: S101 - only called when sealing
        return self._sealer.seal(text, SealBinding(table=table, column=column, row_id=row_id, user_id=user_id))

    def _open(self, value: object, table: str, column: str, row_id: str, user_id: str) -> str:
        assert self._sealer is not None  # noqa: S101 - only called for sealed rows, checked above
        if not isinstance(value, str):
            raise BrokenSealError(f"{table}.{column} is not a sealed value")
        return self._sealer.open(value, SealBinding(table=table, column=column, row_id=row_id, user_id=user_id))


def _written_columns(written_by: WrittenBy | None) -> dict[str, str | None]:
    if written_by is None:
        return {"written_via": None, "written_by": None}
    return {"written_via": written_by.door.value, "written_by": written_by.credential}


def _written_by(row: Any) -> WrittenBy | None:
    # Our own rows: a door this version does not know (a newer server wrote it) reads as unknown.
    if row.written_via not in _DOORS:
        return None
    return WrittenBy(door=Door(row.written_via), credential=row.written_by)


def _context_from_json(value: dict[str, Any], memory_id: str) -> MemoryContext:
    citation = value.get("citation")
    return MemoryContext.restore(
        id=value["id"],
        memory_id=memory_id,
        snippet=value["snippet"],
        citation=(
            Citation.restore(conversation_id=citation.get("conversation_id"), message_id=citation.get("message_id"))
            if citation
            else None
        ),
        origin=Origin(value["origin"]) if value.get("origin") is not None else None,
        created_at=datetime.fromisoformat(value["created_at"].replace("Z", "+00:00")),
    )


def _terms_binding(memory_id: str, user_id: str) -> SealBinding:
    return SealBinding(table=MEMORY_TABLE, column="search_terms", row_id=memory_id, user_id=user_id)


def _vector_row_id(memory_id: str, model: str) -> str:
    # Bound to its model too: a vector relabelled as another model's does not open.
    return f"{memory_id}/{model}"


def _context_row_id(memory_id: str, context_id: str) -> str:
    # A context is bound to its memory too: moved under another memory of the same owner, it does not open.
    return f"{memory_id}/{context_id}"


def _json_list(text: str) -> list[str]:
    value = json.loads(text)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise BrokenSealError("sealed tags are not a list of strings")
    return value


def _json_object(text: str) -> dict[str, str]:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise BrokenSealError("a sealed citation is not an object")
    return value
