"""The in-memory reference adapters: memory store, controls, tokens and panel sessions in plain dicts.

The matching search engine is `memorybank_search.InMemorySearch`, its vectors
`memorybank_search.InMemoryVectors`; the purge's store is `memorybank_core.inmemory_purge`'s.

Used by tests, as the model in stateful tests, and by hosts that want a bank
without a database. Thread-safe: the HTTP facade calls it from a thread pool.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime

import attrs

from memorybank_core.banks import owner_scope
from memorybank_core.conflicts import RevisionConflictError
from memorybank_core.controls import check_quota, merge
from memorybank_core.entities import (
    EVERYONE,
    ApiToken,
    Control,
    Memory,
    MemoryChange,
    PanelCredential,
    Quota,
    Scope,
    SubjectKind,
    Usage,
    charged_characters,
)
from memorybank_core.errors import InvalidInputError, NotFoundError
from memorybank_core.ports import (
    BulkMemoryWriter,
    ControlStore,
    ListPosition,
    MemoryOwners,
    MemoryStore,
    PanelSessionStore,
    RevisionEraser,
    TokenStore,
)


class InMemoryStore(MemoryStore, BulkMemoryWriter, MemoryOwners, RevisionEraser):
    """Memories in a dict per owner, each memory's kept revisions in another."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_owner: dict[str, dict[str, Memory]] = {}
        # Per owner and memory, the kept earlier versions, oldest first.
        self._revisions: dict[str, dict[str, list[Memory]]] = {}

    def add(
        self, *, user_id: str, memory: Memory, quota: Quota | None = None, retiring: Sequence[MemoryChange] = ()
    ) -> None:
        if memory.user_id != user_id:
            raise ValueError("a memory is added by its own owner")
        with self._lock:
            owned = self._by_owner.setdefault(user_id, {})
            for change in retiring:
                self._check(owned, change)
            if quota is not None:
                check_quota(quota, _usage_of(owned.values()), charged_characters(memory))
            owned[memory.id] = memory
            for change in retiring:
                self._write(user_id, owned, change)

    def get_many(self, *, user_id: str, memory_ids: Sequence[str]) -> Mapping[str, Memory]:
        owned = self.owned(user_id, include_retired=True)
        return {memory_id: owned[memory_id] for memory_id in memory_ids if memory_id in owned}

    def list(
        self, *, user_id: str, limit: int, after: ListPosition | None, include_retired: bool = False
    ) -> Sequence[Memory]:
        newest_first = sorted(
            self.owned(user_id, include_retired=include_retired).values(), key=_position, reverse=True
        )
        if after is not None:
            boundary = (after.created_at, after.memory_id)
            newest_first = [m for m in newest_first if _position(m) < boundary]
        return newest_first[:limit]

    def delete(self, *, user_id: str, memory_id: str) -> bool:
        with self._lock:
            owned = self._by_owner.get(user_id, {})
            memory = owned.get(memory_id)
            if memory is None or memory.scope is not owner_scope(user_id):
                return False
            del owned[memory_id]
            self._revisions.get(user_id, {}).pop(memory_id, None)
            return True

    def revise(self, *, user_id: str, change: MemoryChange, quota: Quota | None = None) -> bool:
        with self._lock:
            owned = self._by_owner.get(user_id, {})
            stored = owned.get(change.previous.id)
            if stored is None or stored.scope is not owner_scope(user_id):
                return False
            self._check(owned, change)
            grows = charged_characters(change.current) - charged_characters(stored)
            if quota is not None and grows > 0:
                check_quota(quota, _usage_of(owned.values()), grows, new_memory=False)
            self._write(user_id, owned, change)
            return True

    def revisions(self, *, user_id: str, memory_id: str, limit: int, before: int | None) -> Sequence[Memory]:
        with self._lock:
            kept = list(self._revisions.get(user_id, {}).get(memory_id, ()))
        newest_first = [m for m in reversed(kept) if before is None or m.revision < before]
        return newest_first[:limit]

    def drop_revisions(self, *, user_id: str, memory_id: str, revisions: Sequence[int]) -> None:
        dropped = set(revisions)
        with self._lock:
            kept = self._revisions.get(user_id, {}).get(memory_id)
            if kept is not None:
                kept[:] = [version for version in kept if version.revision not in dropped]

    def usage(self, *, user_id: str) -> Usage:
        with self._lock:
            return _usage_of(self._by_owner.get(user_id, {}).values())

    def owned(self, user_id: str, *, include_retired: bool = False) -> dict[str, Memory]:
        """A snapshot of the owner's memories by id (the current ones, unless `include_retired`): a person's personal
        ones, an organization bank's org ones (`owner_scope`)."""
        scope = owner_scope(user_id)
        with self._lock:
            return {
                k: m
                for k, m in self._by_owner.get(user_id, {}).items()
                if m.scope is scope and (include_retired or m.retired_by is None)
            }

    def revision_count(self, user_id: str) -> int:
        """How many earlier versions of the owner's memories are kept (for tests: none outlives its memory)."""
        with self._lock:
            return sum(len(kept) for kept in self._revisions.get(user_id, {}).values())

    def _check(self, owned: dict[str, Memory], change: MemoryChange) -> None:
        stored = owned.get(change.previous.id)
        if stored is None or stored.scope is not owner_scope(change.current.user_id):
            raise NotFoundError()
        if stored.revision != change.previous.revision:
            raise RevisionConflictError()

    def _write(self, user_id: str, owned: dict[str, Memory], change: MemoryChange) -> None:
        owned[change.current.id] = change.current
        kept = self._revisions.setdefault(user_id, {}).setdefault(change.current.id, [])
        kept.append(change.previous)
        del kept[: max(0, len(kept) - change.keep_revisions)]

    def add_many(self, memories: Sequence[Memory], revisions: Sequence[Memory] = ()) -> None:
        with self._lock:
            taken = {m.id for owned in self._by_owner.values() for m in owned.values()}
            taken |= {c.id for owned in self._by_owner.values() for m in owned.values() for c in m.contexts}
            new = [m.id for m in memories] + [c.id for m in memories for c in m.contexts]
            if len(set(new)) < len(new) or taken.intersection(new):
                raise InvalidInputError("id", "is already stored")
            for memory in memories:
                self._by_owner.setdefault(memory.user_id, {})[memory.id] = memory
            for version in sorted(revisions, key=lambda m: m.revision):
                self._revisions.setdefault(version.user_id, {}).setdefault(version.id, []).append(version)

    def memory_owners(self) -> Sequence[str]:
        with self._lock:
            return sorted(user_id for user_id, owned in self._by_owner.items() if owned)

    def take_oldest(self, *, user_id: str, org_id: str | None, limit: int) -> Sequence[Memory]:
        """Remove and return up to `limit` of the owner's memories (a person's personal ones, under `org_id` if given;
        an organization bank's), oldest first.

        For `InMemoryPurgeStore`, which holds the lock order purge -> store.
        """
        scope = owner_scope(user_id)
        with self._lock:
            owned = self._by_owner.get(user_id, {})
            chosen = sorted(
                (m for m in owned.values() if m.scope is scope and org_id in (None, m.org_id)), key=_position
            )[:limit]
            for memory in chosen:
                del owned[memory.id]
                self._revisions.get(user_id, {}).pop(memory.id, None)
            return chosen

    def owners_in(self, org_id: str) -> Sequence[str]:
        """The users with personal memories saved under `org_id`, in ascending order."""
        with self._lock:
            return sorted(
                user_id
                for user_id, owned in self._by_owner.items()
                if any(m.org_id == org_id and m.scope is Scope.USER for m in owned.values())
            )

    def mark_former_member(self, author: str, limit: int) -> int:
        """Mark up to `limit` of the team-bank memories `author` saved, not marked yet, as by a former member."""
        with self._lock:
            chosen = [
                m
                for owned in self._by_owner.values()
                for m in owned.values()
                if m.scope is Scope.ORG and m.author == author and not m.author_former_member
            ][:limit]
            for memory in chosen:
                self._by_owner[memory.user_id][memory.id] = attrs.evolve(memory, author_former_member=True)
            return len(chosen)

    def team_memories_written_by(self, author: str) -> int:
        """How many stored team-bank memories name `author` as who saved them."""
        with self._lock:
            return sum(
                1
                for owned in self._by_owner.values()
                for m in owned.values()
                if m.scope is Scope.ORG and m.author == author
            )


def _position(memory: Memory) -> tuple[datetime, str]:
    return (memory.created_at, memory.id)


def _usage_of(memories: Iterable[Memory]) -> Usage:
    # Every memory the owner stores counts, as in the SQL ledger (which counts rows, not scopes).
    found = list(memories)
    return Usage(memories=len(found), characters=sum(charged_characters(m) for m in found))


class InMemoryControlStore(ControlStore):
    """Operator controls in a dict by (kind, subject id)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._controls: dict[tuple[SubjectKind, str], Control] = {}

    def find(self, *, user_id: str, org_id: str | None) -> Sequence[Control]:
        wanted = [(SubjectKind.USER, user_id), (SubjectKind.ALL, EVERYONE)]
        if org_id is not None:
            wanted.append((SubjectKind.ORG, org_id))
        with self._lock:
            return [self._controls[key] for key in wanted if key in self._controls]

    def set(self, change: Control) -> Control:
        key = (change.kind, change.subject_id)
        with self._lock:
            current = self._controls.get(key)
            self._controls[key] = merged = change if current is None else merge(current, change)
            return merged

    def clear(self, *, kind: SubjectKind, subject_id: str) -> bool:
        with self._lock:
            return self._controls.pop((kind, subject_id), None) is not None

    def unset_quota(self, *, kind: SubjectKind, subject_id: str, at: datetime) -> bool:
        key = (kind, subject_id)
        with self._lock:
            current = self._controls.get(key)
            if current is None or (current.max_memories, current.max_characters) == (None, None):
                return False
            if current.enabled is None:
                del self._controls[key]
            else:
                self._controls[key] = attrs.evolve(current, max_memories=None, max_characters=None, updated_at=at)
            return True

    def list(self) -> Sequence[Control]:
        order = {SubjectKind.ALL: 0, SubjectKind.ORG: 1, SubjectKind.USER: 2}
        with self._lock:
            return sorted(self._controls.values(), key=lambda c: (order[c.kind], c.subject_id))


class InMemoryTokenStore(TokenStore):
    """API tokens in a dict."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tokens: dict[str, ApiToken] = {}
        self._revocations = 0

    def add(self, token: ApiToken) -> None:
        with self._lock:
            self._tokens[token.id] = token

    def find_by_hash(self, token_hash: str) -> ApiToken | None:
        with self._lock:
            return next((t for t in self._tokens.values() if t.token_hash == token_hash), None)

    def get(self, token_id: str) -> ApiToken | None:
        with self._lock:
            return self._tokens.get(token_id)

    def list(self, *, user_id: str | None) -> Sequence[ApiToken]:
        with self._lock:
            tokens = [t for t in self._tokens.values() if user_id is None or t.user_id == user_id]
        return sorted(tokens, key=lambda t: (t.created_at, t.id))

    def revoke(self, token_id: str, *, at: datetime) -> bool:
        with self._lock:
            token = self._tokens.get(token_id)
            if token is None or token.revoked_at is not None:
                return False
            self._tokens[token_id] = attrs.evolve(token, revoked_at=at)
            self._revocations += 1
            return True

    def revocation_generation(self) -> int:
        with self._lock:
            return self._revocations

    def revoke_where(self, chosen: Callable[[ApiToken], bool], *, at: datetime) -> int:
        """Revoke every live token `chosen` picks, counting one revocation if any was; how many were revoked."""
        with self._lock:
            live = [t for t in self._tokens.values() if t.revoked_at is None and chosen(t)]
            for token in live:
                self._tokens[token.id] = attrs.evolve(token, revoked_at=at)
            if live:
                self._revocations += 1
            return len(live)


class InMemoryPanelSessionStore(PanelSessionStore):
    """Panel sign-in links and sessions in a dict."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._credentials: dict[str, PanelCredential] = {}

    def add(self, credential: PanelCredential) -> None:
        with self._lock:
            self._credentials[credential.id] = credential

    def find_by_hash(self, secret_hash: str) -> PanelCredential | None:
        with self._lock:
            return next((c for c in self._credentials.values() if c.secret_hash == secret_hash), None)

    def end(self, credential_id: str, *, at: datetime) -> bool:
        with self._lock:
            credential = self._credentials.get(credential_id)
            if credential is None or credential.ended_at is not None:
                return False
            self._credentials[credential_id] = attrs.evolve(credential, ended_at=at)
            return True

    def end_all(self, *, user_id: str, at: datetime) -> int:
        with self._lock:
            return self._end_where(lambda c: c.user_id == user_id, at)

    def end_made_from(self, *, credential_id: str, at: datetime) -> int:
        with self._lock:
            return self._end_where(lambda c: c.made_from == credential_id, at)

    def count_where(self, chosen: Callable[[PanelCredential], bool]) -> int:
        """How many links and sessions `chosen` picks."""
        with self._lock:
            return sum(1 for c in self._credentials.values() if chosen(c))

    def end_where(self, chosen: Callable[[PanelCredential], bool], *, at: datetime) -> int:
        """End every live link and session `chosen` picks; how many were ended."""
        with self._lock:
            return self._end_where(chosen, at)

    def _end_where(self, chosen: Callable[[PanelCredential], bool], at: datetime) -> int:
        live = [c for c in self._credentials.values() if chosen(c) and c.is_live(at)]
        for credential in live:
            self._credentials[credential.id] = attrs.evolve(credential, ended_at=at)
        return len(live)
