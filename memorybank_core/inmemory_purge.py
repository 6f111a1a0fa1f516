"""`InMemoryPurgeStore`: the offboarding purge over the in-memory adapters (`memorybank_core.inmemory`).

In a module of its own, not in `inmemory`: the facades import the core's package, and an import-linter
contract keeps the purge (`memorybank_core.offboarding`) out of their reach.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import datetime

import attrs

from memorybank_core import limits
from memorybank_core.banks import is_org_bank_owner, org_bank_owner
from memorybank_core.entities import ApiToken, Memory, PanelCredential
from memorybank_core.inmemory import InMemoryPanelSessionStore, InMemoryStore, InMemoryTokenStore
from memorybank_core.offboarding import (
    PurgeCounts,
    PurgeRun,
    PurgeStore,
    PurgeSubject,
    SubjectKind,
    chain_digest,
    first_digest,
)


class InMemoryPurgeStore(PurgeStore):
    """The purge side of the in-memory adapters: over the memory store, tokens and panel sessions it is given.

    One lock makes each call one step, as a transaction does in SQL: two purges of one subject share its run.
    """

    def __init__(
        self, store: InMemoryStore, tokens: InMemoryTokenStore, panel_sessions: InMemoryPanelSessionStore
    ) -> None:
        self._store = store
        self._tokens = tokens
        self._panel_sessions = panel_sessions
        self._lock = threading.Lock()
        self._runs: dict[str, PurgeRun] = {}

    def open_run(self, *, subject: PurgeSubject, run_id: str, at: datetime) -> tuple[PurgeRun, bool]:
        with self._lock:
            unfinished = [r for r in self._runs.values() if r.subject == subject and r.finished_at is None]
            if unfinished:
                return min(unfinished, key=lambda r: r.started_at), True
            run = PurgeRun(
                id=run_id, subject=subject, counts=PurgeCounts(), digest=first_digest(subject), batches=0, started_at=at
            )
            self._runs[run.id] = run
            return run, False

    def revoke_credentials(self, *, run: PurgeRun, at: datetime) -> PurgeRun:
        chosen = _credential_owner(run.subject)
        with self._lock:
            current = self._runs[run.id]
            tokens = self._tokens.revoke_where(chosen, at=at)
            sessions = self._panel_sessions.end_where(chosen, at=at)
            counts = attrs.evolve(
                current.counts,
                tokens=current.counts.tokens + tokens,
                panel_sessions=current.counts.panel_sessions + sessions,
            )
            self._runs[run.id] = current = attrs.evolve(current, counts=counts)
            return current

    def owners_in_organization(self, *, org_id: str) -> Sequence[str]:
        return self._store.owners_in(org_id)

    def team_memories_written_by(self, *, user_id: str) -> int:
        return self._store.team_memories_written_by(user_id)

    def mark_former_member(self, *, user_id: str, limit: int) -> int:
        return self._store.mark_former_member(user_id, limit)

    def remove_batch(
        self,
        *,
        run: PurgeRun,
        user_id: str,
        org_id: str | None,
        limit: int,
        at: datetime,  # noqa: ARG002 - an in-memory run keeps no time of its last batch
    ) -> PurgeRun:
        # One owner, whatever a host calls its users (an organization's members may be any ids), never a pattern.
        if not isinstance(user_id, str) or not limits.ID.min <= len(user_id.strip()) <= limits.ID.max:
            raise ValueError(f"a purge batch needs one user id, got {user_id!r}")
        with self._lock:
            current = self._runs[run.id]
            removed = self._store.take_oldest(user_id=user_id, org_id=org_id, limit=limit)
            if not removed:
                return current
            context_ids = [c.id for m in removed for c in m.contexts]
            counts = attrs.evolve(
                current.counts,
                memories=current.counts.memories + len(removed),
                team_memories=current.counts.team_memories + (len(removed) if is_org_bank_owner(user_id) else 0),
                contexts=current.counts.contexts + len(context_ids),
            )
            digest = chain_digest(current.digest, [*(m.id for m in removed), *context_ids])
            self._runs[run.id] = current = attrs.evolve(
                current, counts=counts, digest=digest, batches=current.batches + 1
            )
            return current

    def finish(self, *, run: PurgeRun, at: datetime) -> PurgeRun:
        with self._lock:
            current = self._runs[run.id]
            if current.finished_at is None:
                self._runs[run.id] = current = attrs.evolve(current, finished_at=at)
            return current

    def count(self, *, subject: PurgeSubject, at: datetime) -> PurgeCounts:
        team: list[Memory] = []
        if subject.kind is SubjectKind.USER:
            memories = list(self._store.owned(subject.id).values())
        else:
            memories = [
                m
                for user_id in self._store.owners_in(subject.id)
                for m in self._store.owned(user_id).values()
                if m.org_id == subject.id
            ]
            team = list(self._store.owned(org_bank_owner(subject.id)).values())
            memories += team
        chosen = _credential_owner(subject)
        return PurgeCounts(
            memories=len(memories),
            team_memories=len(team),
            contexts=sum(len(m.contexts) for m in memories),
            tokens=sum(1 for t in self._tokens.list(user_id=None) if t.revoked_at is None and chosen(t)),
            panel_sessions=self._panel_sessions.count_where(lambda c: chosen(c) and c.is_live(at)),
        )


def _credential_owner(subject: PurgeSubject) -> Callable[[ApiToken | PanelCredential], bool]:
    """Whose credentials a purge of `subject` ends: those issued to the user, or for the organization."""
    if subject.kind is SubjectKind.USER:
        return lambda credential: credential.user_id == subject.id
    return lambda credential: credential.org_id == subject.id
