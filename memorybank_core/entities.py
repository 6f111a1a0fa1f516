"""The memory bank's entities: frozen value objects that validate themselves."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Literal, TypeVar

import attrs

from memorybank_core import limits
from memorybank_core.errors import InvalidInputError
from memorybank_core.validation import bounded_text, max_items, optional_bounded_text, utc_datetime

_Entity = TypeVar("_Entity")


def _restored(cls: type[_Entity], values: dict[str, Any]) -> _Entity:
    """An instance built from values our own storage wrote, without running validators or converters.

    Validation guards the way in (requests, imports); re-running it on every row read back is
    pure cost. The caller passes every field, already in its final type (tuples, enums).
    """
    instance = object.__new__(cls)
    for name, value in values.items():
        object.__setattr__(instance, name, value)
    return instance


def _tags(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _contexts(value: Iterable[MemoryContext]) -> tuple[MemoryContext, ...]:
    return tuple(value)


def _scopes(value: Iterable[str]) -> frozenset[str]:
    return frozenset(value)


class Scope(enum.StrEnum):
    """Which bank a memory belongs to: its owner's personal bank ('user') or its organization's shared one ('org').

    An org memory's owner (`Memory.user_id`) is the organization's bank (`memorybank_core.banks.org_bank_owner`);
    the person who wrote it is its `author`."""

    USER = "user"
    ORG = "org"


class Source(enum.StrEnum):
    """How a memory reached the server; set by the server, never by the client."""

    CHAT = "chat"
    MODAL = "modal"


class Origin(enum.StrEnum):
    """Where the agent found a context snippet."""

    ACTIVE_CONVERSATION = "active_conversation"
    SEARCHED_CONVERSATION = "searched_conversation"


class Door(enum.StrEnum):
    """Which way a version of a memory was written: the REST API, an agent's MCP rail, the panel, or an import."""

    REST = "rest"
    MCP = "mcp"
    PANEL = "panel"
    IMPORT = "import"


def _positive(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(attribute.name, "must be a whole number from 1")


@attrs.frozen(kw_only=True)
class WrittenBy:
    """Who wrote one version of a memory: the door, and the credential behind the call (an id or an issuer,
    never a secret); None when the caller named none (a local rail, a host's own principal)."""

    door: Door
    credential: str | None = attrs.field(default=None, validator=optional_bounded_text(limits.CREDENTIAL))


@attrs.frozen(kw_only=True)
class Citation:
    """Pointers back into the conversation a snippet came from; both optional."""

    conversation_id: str | None = attrs.field(default=None, validator=optional_bounded_text(limits.CITATION_ID))
    message_id: str | None = attrs.field(default=None, validator=optional_bounded_text(limits.CITATION_ID))

    @classmethod
    def restore(cls, *, conversation_id: str | None, message_id: str | None) -> Citation:
        """A citation read back from storage, not validated again (see `_restored`)."""
        return _restored(cls, {"conversation_id": conversation_id, "message_id": message_id})


@attrs.frozen(kw_only=True)
class MemoryContext:
    """Provenance for a memory: a snippet the agent gathered, with an optional citation."""

    id: str = attrs.field(validator=bounded_text(limits.ID))
    memory_id: str = attrs.field(validator=bounded_text(limits.ID))
    snippet: str = attrs.field(validator=bounded_text(limits.SNIPPET))
    citation: Citation | None = None
    origin: Origin | None = None
    created_at: datetime = attrs.field(validator=utc_datetime)

    @classmethod
    def restore(
        cls,
        *,
        id: str,
        memory_id: str,
        snippet: str,
        citation: Citation | None,
        origin: Origin | None,
        created_at: datetime,
    ) -> MemoryContext:
        """A context read back from storage, not validated again (see `_restored`)."""
        return _restored(
            cls,
            {
                "id": id,
                "memory_id": memory_id,
                "snippet": snippet,
                "citation": citation,
                "origin": origin,
                "created_at": created_at,
            },
        )


@attrs.frozen(kw_only=True)
class Memory:
    """One human-verified memory, owned by exactly one user."""

    id: str = attrs.field(validator=bounded_text(limits.ID))
    user_id: str = attrs.field(validator=bounded_text(limits.ID))
    org_id: str = attrs.field(validator=bounded_text(limits.ID))
    scope: Scope = Scope.USER
    content: str = attrs.field(validator=bounded_text(limits.CONTENT))
    source: Source = Source.CHAT
    tags: tuple[str, ...] = attrs.field(
        default=(),
        converter=_tags,
        validator=[max_items(limits.TAGS_MAX), attrs.validators.deep_iterable(bounded_text(limits.TAG))],
    )
    created_at: datetime = attrs.field(validator=utc_datetime)
    updated_at: datetime = attrs.field(validator=utc_datetime)
    contexts: tuple[MemoryContext, ...] = attrs.field(
        default=(), converter=_contexts, validator=max_items(limits.CONTEXTS_MAX)
    )
    revision: int = attrs.field(default=1, validator=_positive)
    """1 when saved; every change (an edit, a retirement, a restore) makes the next. The ETag of the memory."""
    retired_by: str | None = attrs.field(default=None, validator=optional_bounded_text(limits.ID))
    """The memory that replaced this one (a save's `supersedes`): a retired memory is left out of search and
    lists, still readable by id, and restorable. None for a current memory."""
    written_by: WrittenBy | None = None
    """Who wrote this version; None for versions written before revisions were kept."""
    author: str | None = attrs.field(default=None, validator=optional_bounded_text(limits.ID))
    """The user who saved an org memory (the one who may change it besides an `org:admin`); None for a personal
    memory, whose author is its owner."""
    author_former_member: bool = False
    """An org memory whose author was since purged (`purge --user`): a former member; the memory stays the team's
    and `author` still names them. Always False for a personal memory."""

    @property
    def retired(self) -> bool:
        """Whether a later memory replaced this one."""
        return self.retired_by is not None

    @property
    def similar_query(self) -> str:
        """The query a save's `similar` look-up searches its owner's memories with: the memory's words, as many
        as a query may hold (`MemoryBank.similar`; storage may read its candidates ahead, ADR 0042)."""
        return self.content[: limits.QUERY.max]

    @classmethod
    def restore(
        cls,
        *,
        id: str,
        user_id: str,
        org_id: str,
        scope: Scope,
        content: str,
        source: Source,
        tags: tuple[str, ...],
        created_at: datetime,
        updated_at: datetime,
        contexts: tuple[MemoryContext, ...],
        revision: int = 1,
        retired_by: str | None = None,
        written_by: WrittenBy | None = None,
        author: str | None = None,
        author_former_member: bool = False,
    ) -> Memory:
        """A memory read back from storage, not validated again (see `_restored`)."""
        return _restored(
            cls,
            {
                "id": id,
                "user_id": user_id,
                "org_id": org_id,
                "scope": scope,
                "content": content,
                "source": source,
                "tags": tags,
                "created_at": created_at,
                "updated_at": updated_at,
                "contexts": contexts,
                "revision": revision,
                "retired_by": retired_by,
                "written_by": written_by,
                "author": author,
                "author_former_member": author_former_member,
            },
        )


#: Why a search returned a memory: it shares words with the query, it means what the query asks
#: (hybrid search: its vector stands out among the owner's), or both.
MatchKind = Literal["words", "meaning", "both"]
MATCH_KINDS: tuple[MatchKind, ...] = ("words", "meaning", "both")


@attrs.frozen(kw_only=True)
class MemoryChange:
    """One change of a stored memory: `previous`, the version as last read, and `current`, the one replacing it
    (same id, the next revision). A store writes it only if `previous.revision` is still the stored one, and
    keeps `previous` as a revision, with at most `keep_revisions` of the memory's earlier versions."""

    previous: Memory
    current: Memory
    keep_revisions: int = limits.REVISIONS_KEPT.default


@attrs.frozen(kw_only=True)
class ExportedMemory:
    """A memory with its kept earlier versions, newest first: one line of an export."""

    memory: Memory
    revisions: tuple[Memory, ...] = ()


@attrs.frozen(kw_only=True)
class RevisionPage:
    """A memory as it is now and one page of its versions, newest first (the current one leads the first page),
    with the cursor of the next page (None at the end)."""

    memory: Memory
    revisions: tuple[Memory, ...]
    next_cursor: str | None


@attrs.frozen(kw_only=True)
class SearchResult:
    """A memory found by search, with its relevance (positive, higher is better) and why it was found."""

    memory: Memory
    score: float
    match: MatchKind = "words"

    @property
    def bank(self) -> Scope:
        """The bank the memory was found in (a search of `bankScope=all` reads both)."""
        return self.memory.scope


@attrs.frozen(kw_only=True)
class MemoryPage:
    """One page of a user's memories, newest first, and the cursor of the next page (None at the end)."""

    memories: tuple[Memory, ...]
    next_cursor: str | None


@attrs.frozen(kw_only=True)
class ApiToken:
    """A bearer token of the standalone server: who it speaks for, and the hash of its secret."""

    id: str = attrs.field(validator=bounded_text(limits.ID))
    token_hash: str
    user_id: str = attrs.field(validator=bounded_text(limits.ID))
    org_id: str = attrs.field(validator=bounded_text(limits.ID))
    scopes: frozenset[str] = attrs.field(converter=_scopes)
    created_at: datetime = attrs.field(validator=utc_datetime)
    revoked_at: datetime | None = None


class PanelCredentialKind(enum.StrEnum):
    """What a panel credential opens: a one-time sign-in link, or a browser session."""

    LINK = "link"
    SESSION = "session"


@attrs.frozen(kw_only=True)
class PanelCredential:
    """A sign-in link or a session of the management panel: who it speaks for, and the hash of its secret."""

    id: str = attrs.field(validator=bounded_text(limits.ID))
    kind: PanelCredentialKind
    secret_hash: str
    user_id: str = attrs.field(validator=bounded_text(limits.ID))
    org_id: str = attrs.field(validator=bounded_text(limits.ID))
    scopes: frozenset[str] = attrs.field(converter=_scopes)
    created_at: datetime = attrs.field(validator=utc_datetime)
    expires_at: datetime = attrs.field(validator=utc_datetime)
    ended_at: datetime | None = None
    """When a link was used or a session was signed out or revoked; None while it may still be used."""
    made_from: str | None = attrs.field(default=None, validator=attrs.validators.optional(bounded_text(limits.ID)))
    """A session's source: the API token (`tok_…`) or sign-in link (`pnl_…`) it was made from; None for a
    sign-in at an identity provider. A session made from a token ends when the token is revoked."""

    def is_live(self, at: datetime) -> bool:
        """Usable at `at`: not ended and not expired."""
        return self.ended_at is None and at < self.expires_at


# Operator controls (memorybank_core.controls): quotas and the memory gate.

MEMORIES = "memories"
CHARACTERS = "characters"


class SubjectKind(enum.Enum):
    """Whom a control applies to."""

    USER = "user"
    ORG = "org"
    ALL = "all"


#: The subject id of the one control that applies to everyone.
EVERYONE = "*"


@attrs.frozen(kw_only=True)
class Quota:
    """How much one user may store: memories, and characters of content, tags and snippets together."""

    max_memories: int = limits.QUOTA_MEMORIES_DEFAULT
    max_characters: int = limits.QUOTA_CHARACTERS_DEFAULT

    def as_dict(self) -> dict[str, int]:
        """The limits by measure name, as error details and `quota show` name them."""
        return {MEMORIES: self.max_memories, CHARACTERS: self.max_characters}


@attrs.frozen(kw_only=True)
class Usage:
    """How much one user stores now."""

    memories: int = 0
    characters: int = 0

    def as_dict(self) -> dict[str, int]:
        """The use by measure name."""
        return {MEMORIES: self.memories, CHARACTERS: self.characters}


@attrs.frozen(kw_only=True)
class UsageReport:
    """What one person stores now, against the quota that applies to them."""

    usage: Usage
    quota: Quota


@attrs.frozen(kw_only=True)
class DeletedBatch:
    """One bounded step of deleting all of a person's memories: how many went, how many are left."""

    deleted: int
    remaining: int


@attrs.frozen(kw_only=True)
class Control:
    """What an operator set for one subject; None leaves that setting to the next level."""

    kind: SubjectKind
    subject_id: str
    enabled: bool | None = None
    max_memories: int | None = None
    max_characters: int | None = None
    updated_at: datetime | None = None


@attrs.frozen(kw_only=True)
class Policy:
    """What applies to one request: whether memory is on (and if not, which switch is off) and the quota."""

    enabled: bool
    switched_off_by: SubjectKind | None
    quota: Quota


def charged_characters(memory: Memory) -> int:
    """The characters a memory counts against its owner's quota: its plaintext content, tags and snippets.

    Counted here, on the plaintext, so a sealed row (longer, and in bytes) costs the same as a plain one.
    """
    return (
        len(memory.content)
        + sum(len(tag) for tag in memory.tags)
        + sum(len(context.snippet) for context in memory.contexts)
    )
