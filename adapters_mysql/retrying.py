"""Safe retries of storage operations after a lost connection, a failover or a Galera conflict.

Every port method is retried when its failure says the database may serve the next attempt:

- *Nothing was committed* (MySQL errors 1213 deadlock or Galera certification conflict, 1205
  lock wait timeout, 1047 node not ready, 1180 commit refused outside the primary component,
  2003 cannot connect, 1040 too many connections, a full pool): the attempt is repeated.
- *The outcome is unknown* (the connection was lost, 2006/2013/2055, possibly during COMMIT):
  a write is first checked, then repeated only if it did not land:
  - a save looks its memory up by id, owner-scoped; if it is there (with its contexts: one
    transaction), the save succeeded. The id is minted before the first attempt, so a repeat can
    never store a second copy: it would hit the primary key.
  - a delete is repeated; if the repeat finds nothing to delete, the memory is gone and the
    answer is "deleted" (the first attempt removed it, or there was none: either way the caller
    is told the memory does not exist any more, which leaks nothing about anyone else's).
  - token creation and revocation follow the same two rules.
  - an offboarding purge step is repeated as it is: each one reads the run's stored state in the
    transaction that does the work and records it, so a repeat after a step that did land does
    the next piece of work, never the same one twice (`adapters_mysql.purge_store`).
- Anything else (bad SQL, a constraint) is raised at once.

When every attempt fails, the last `UnavailableError` reaches the caller (HTTP 503 with
Retry-After). For a save that means: not stored, unless the last failure left the outcome
unknown and the database never answered the check; then the memory may exist, and a client
should list or search before saving it again (a new save mints a new id). The pauses add up
to about 7 s, longer than a Galera cluster takes to drop a dead node (about 4 s with the
timeouts in docs/scaling.md; writes wait meanwhile rather than fail), so that case needs the
whole cluster down, not one node.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TypeVar

from sqlalchemy import exc

from adapters_mysql.errors import driver_error_code
from adapters_mysql.memory_store import SqlMemoryStore
from memorybank_core import (
    ApiToken,
    Control,
    ControlStore,
    ListPosition,
    Memory,
    MemoryChange,
    MemoryStore,
    Quota,
    RevisionEraser,
    SearchEngine,
    SearchHit,
    SubjectKind,
    TokenStore,
    UnavailableError,
    Usage,
)
from memorybank_core.offboarding import PurgeCounts, PurgeRun, PurgeStore, PurgeSubject

_log = logging.getLogger("memorybank.storage")

T = TypeVar("T")

#: Seconds to wait before each repeat; the number of attempts is one more than this.
PAUSES: tuple[float, ...] = (0.05, 0.25, 0.5, 1.0, 2.0, 3.0)

#: MySQL errors after which the statement or transaction did not commit.
NOTHING_COMMITTED = frozenset({1205, 1213, 1047, 1180, 2003, 1040})
#: MySQL errors after which a transaction's fate is unknown: the connection died.
OUTCOME_UNKNOWN = frozenset({2006, 2013, 2055})


class Failure(enum.Enum):
    """What a failed attempt says about the write it carried."""

    NOTHING_COMMITTED = "nothing committed"
    OUTCOME_UNKNOWN = "outcome unknown"


def classify(error: UnavailableError) -> Failure | None:
    """Whether (and how) a failed attempt may be repeated; None when it may not."""
    cause = error.__cause__
    if isinstance(cause, exc.TimeoutError):
        return Failure.NOTHING_COMMITTED  # the pool had no connection: nothing ran
    code = driver_error_code(cause) if cause is not None else None
    if code in OUTCOME_UNKNOWN or (isinstance(cause, exc.DBAPIError) and cause.connection_invalidated):
        return Failure.OUTCOME_UNKNOWN
    if code in NOTHING_COMMITTED:
        return Failure.NOTHING_COMMITTED
    return None


def retrying(operation: str, attempt: Callable[[bool], T], *, pauses: Sequence[float] | None = None) -> T:
    """Run `attempt` until it succeeds or fails in a way no repeat can fix, pausing `pauses` (by default `PAUSES`,
    read when called) before the repeats.

    `attempt` receives True once an earlier attempt's outcome became unknown, so a write can
    look whether it already landed.

    Raises:
        UnavailableError: the last failure, once the attempts are used up or it is not retryable.
    """
    unknown = False
    for pause in (*(PAUSES if pauses is None else pauses), None):
        try:
            return attempt(unknown)
        except UnavailableError as error:
            failure = classify(error)
            if failure is None or pause is None:
                raise
            unknown = unknown or failure is Failure.OUTCOME_UNKNOWN
            _log.warning("retrying %s in %.2f s (%s)", operation, pause, failure.value)
            time.sleep(pause)
    raise AssertionError("unreachable: the last pause is None")  # pragma: no cover


class ResilientMemoryStore(MemoryStore, RevisionEraser):
    """A `MemoryStore` whose operations are retried as the module describes."""

    def __init__(self, store: SqlMemoryStore) -> None:
        self.inner = store

    def add(
        self, *, user_id: str, memory: Memory, quota: Quota | None = None, retiring: Sequence[MemoryChange] = ()
    ) -> None:
        # The quota check is in the save's transaction: a repeat re-checks it; a landed save was charged once
        # (and retired what it replaces in the same transaction).
        def attempt(unknown: bool) -> None:
            if unknown and self._landed(user_id, memory.id):
                return
            try:
                self.inner.add(user_id=user_id, memory=memory, quota=quota, retiring=retiring)
            except exc.IntegrityError:
                # The id is ours and fresh: a clash means an interrupted attempt landed after all.
                if not self._landed(user_id, memory.id):
                    raise

        retrying("save", attempt)

    def _landed(self, user_id: str, memory_id: str) -> bool:
        return memory_id in self.inner.get_many(user_id=user_id, memory_ids=[memory_id])

    def get_many(self, *, user_id: str, memory_ids: Sequence[str]) -> Mapping[str, Memory]:
        return retrying("load", lambda _unknown: self.inner.get_many(user_id=user_id, memory_ids=memory_ids))

    def list(
        self, *, user_id: str, limit: int, after: ListPosition | None, include_retired: bool = False
    ) -> Sequence[Memory]:
        return retrying(
            "list",
            lambda _unknown: self.inner.list(
                user_id=user_id, limit=limit, after=after, include_retired=include_retired
            ),
        )

    def revise(self, *, user_id: str, change: MemoryChange, quota: Quota | None = None) -> bool:
        # After an interrupted attempt, the memory at the new revision means the change landed.
        def attempt(unknown: bool) -> bool:
            if unknown:
                stored = self.inner.get_many(user_id=user_id, memory_ids=[change.current.id]).get(change.current.id)
                if stored is None:
                    return False
                if stored.revision == change.current.revision:
                    return True
            return self.inner.revise(user_id=user_id, change=change, quota=quota)

        return retrying("edit", attempt)

    def revisions(self, *, user_id: str, memory_id: str, limit: int, before: int | None) -> Sequence[Memory]:
        return retrying(
            "revisions",
            lambda _unknown: self.inner.revisions(user_id=user_id, memory_id=memory_id, limit=limit, before=before),
        )

    def delete(self, *, user_id: str, memory_id: str) -> bool:
        # After an interrupted attempt, nothing left to delete means the memory is gone.
        return retrying("delete", lambda unknown: self.inner.delete(user_id=user_id, memory_id=memory_id) or unknown)

    def usage(self, *, user_id: str) -> Usage:
        return retrying("usage", lambda _unknown: self.inner.usage(user_id=user_id))

    def drop_revisions(self, *, user_id: str, memory_id: str, revisions: Sequence[int]) -> None:
        # Deleting what is already gone changes nothing: a repeat after an unknown outcome is safe.
        retrying(
            "drop revisions",
            lambda _unknown: self.inner.drop_revisions(user_id=user_id, memory_id=memory_id, revisions=revisions),
        )

    def add_many(self, memories: Sequence[Memory], revisions: Sequence[Memory] = ()) -> None:
        """Bulk import, not retried: a rerun of the import reports the lines already stored."""
        self.inner.add_many(memories, revisions)


class ResilientSearch(SearchEngine):
    """A `SearchEngine` whose searches are retried (they only read)."""

    def __init__(self, engine: SearchEngine) -> None:
        self.inner = engine

    def __getattr__(self, name: str) -> object:
        # The engine's optional attributes (`similar_min_share`) read through the retrying wrapper.
        if name == "similar_min_share":
            return getattr(self.inner, name)
        raise AttributeError(name)

    def search(self, *, user_id: str, query: str, limit: int) -> Sequence[SearchHit]:
        return retrying("search", lambda _unknown: self.inner.search(user_id=user_id, query=query, limit=limit))

    def search_like(self, *, user_id: str, memory_id: str, query: str, limit: int) -> Sequence[SearchHit]:
        return retrying(
            "search",
            lambda _unknown: self.inner.search_like(user_id=user_id, memory_id=memory_id, query=query, limit=limit),
        )


class ResilientControlStore(ControlStore):
    """A `ControlStore` whose operations are retried: reads, and writes that are safe to repeat."""

    def __init__(self, store: ControlStore) -> None:
        self.inner = store

    def find(self, *, user_id: str, org_id: str | None) -> Sequence[Control]:
        return retrying("controls", lambda _unknown: self.inner.find(user_id=user_id, org_id=org_id))

    def set(self, change: Control) -> Control:
        # Setting the same values again changes nothing: a repeat after an unknown outcome is safe.
        return retrying("controls", lambda _unknown: self.inner.set(change))

    def clear(self, *, kind: SubjectKind, subject_id: str) -> bool:
        return retrying("controls", lambda unknown: self.inner.clear(kind=kind, subject_id=subject_id) or unknown)

    def unset_quota(self, *, kind: SubjectKind, subject_id: str, at: datetime) -> bool:
        return retrying(
            "controls", lambda unknown: self.inner.unset_quota(kind=kind, subject_id=subject_id, at=at) or unknown
        )

    def list(self) -> Sequence[Control]:
        return retrying("controls", lambda _unknown: self.inner.list())


class ResilientTokenStore(TokenStore):
    """A `TokenStore` whose operations are retried as the module describes."""

    def __init__(self, store: TokenStore) -> None:
        self.inner = store

    def add(self, token: ApiToken) -> None:
        def attempt(unknown: bool) -> None:
            if unknown and self.inner.get(token.id) is not None:
                return
            try:
                self.inner.add(token)
            except exc.IntegrityError:
                if self.inner.get(token.id) is None:
                    raise

        retrying("token add", attempt)

    def find_by_hash(self, token_hash: str) -> ApiToken | None:
        return retrying("token lookup", lambda _unknown: self.inner.find_by_hash(token_hash))

    def get(self, token_id: str) -> ApiToken | None:
        return retrying("token lookup", lambda _unknown: self.inner.get(token_id))

    def list(self, *, user_id: str | None) -> Sequence[ApiToken]:
        return retrying("token list", lambda _unknown: self.inner.list(user_id=user_id))

    def revoke(self, token_id: str, *, at: datetime) -> bool:
        def attempt(unknown: bool) -> bool:
            if self.inner.revoke(token_id, at=at):
                return True
            # After an interrupted attempt, "already revoked" is ours only if it carries our time: an
            # unknown id, or one revoked earlier by someone else, is still not revoked by this call.
            landed = self.inner.get(token_id) if unknown else None
            return landed is not None and landed.revoked_at == at

        return retrying("token revoke", attempt)

    def revocation_generation(self) -> int:
        return retrying("token lookup", lambda _unknown: self.inner.revocation_generation())


class ResilientPurgeStore(PurgeStore):
    """A `PurgeStore` whose steps are retried as the module describes."""

    def __init__(self, store: PurgeStore) -> None:
        self.inner = store

    def open_run(self, *, subject: PurgeSubject, run_id: str, at: datetime) -> tuple[PurgeRun, bool]:
        # A repeat after a landed attempt finds that attempt's run unfinished and resumes it.
        return retrying("purge", lambda _unknown: self.inner.open_run(subject=subject, run_id=run_id, at=at))

    def revoke_credentials(self, *, run: PurgeRun, at: datetime) -> PurgeRun:
        return retrying("purge", lambda _unknown: self.inner.revoke_credentials(run=run, at=at))

    def owners_in_organization(self, *, org_id: str) -> Sequence[str]:
        return retrying("purge", lambda _unknown: self.inner.owners_in_organization(org_id=org_id))

    def team_memories_written_by(self, *, user_id: str) -> int:
        return retrying("purge", lambda _unknown: self.inner.team_memories_written_by(user_id=user_id))

    def mark_former_member(self, *, user_id: str, limit: int) -> int:
        # Marks only unmarked rows: a rerun after a lost commit marks the next ones, or none.
        return retrying("purge", lambda _unknown: self.inner.mark_former_member(user_id=user_id, limit=limit))

    def remove_batch(self, *, run: PurgeRun, user_id: str, org_id: str | None, limit: int, at: datetime) -> PurgeRun:
        return retrying(
            "purge",
            lambda _unknown: self.inner.remove_batch(run=run, user_id=user_id, org_id=org_id, limit=limit, at=at),
        )

    def finish(self, *, run: PurgeRun, at: datetime) -> PurgeRun:
        return retrying("purge", lambda _unknown: self.inner.finish(run=run, at=at))

    def count(self, *, subject: PurgeSubject, at: datetime) -> PurgeCounts:
        return retrying("purge", lambda _unknown: self.inner.count(subject=subject, at=at))
