"""Offboarding: purge every memory of a user or an organization, revoke their credentials, keep a receipt.

An operator-level use case: `Offboarding` takes no `Principal`, is not a method of `MemoryBank`,
and no facade can import this module (an import-linter contract), so no user, token or route can
ever reach it. A host calls it from its own account- or organization-deletion hook; operators run
`memorybank purge`.

What makes a "delete everything of user X" that deletes everyone's impossible here:
- ids are checked strictly before anything is touched: a TypeID with the exact prefix (`usr_`,
  `org_`) and 26 base32 characters, so an empty id, `%`, `*`, `_` or any other pattern is refused;
- every deleting statement is bound to one user (`PurgeStore.remove_batch` takes the owner as a
  required keyword, and the SQL adapter checks it again); an organization purge walks the users
  that saved under the organization and deletes per user;
- the work runs in bounded batches, each one transaction that also records its counts and digest on
  the run (`PurgeRun`), so a crash loses nothing and a rerun resumes the same run.
"""

from __future__ import annotations

import enum
import hashlib
import time
from abc import abstractmethod
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Protocol

import attrs

from memorybank_core import ids, limits
from memorybank_core.banks import org_bank_owner
from memorybank_core.clock import SystemClock
from memorybank_core.events import LoggingEventSink
from memorybank_core.ports import Clock, EventSink
from memorybank_core.validation import clean_count

PURGE_STARTED = "purge.started"
PURGE_FINISHED = "purge.finished"

#: Where every run's digest chain starts; the version names the chaining rule below.
_DIGEST_SEED = "memorybank-purge-digest-v1"


class SubjectKind(enum.StrEnum):
    """Whose data a purge removes: one user's, or everything saved under one organization."""

    USER = "user"
    ORGANIZATION = "organization"


@attrs.frozen(kw_only=True)
class PurgeSubject:
    """A validated purge target. Build it with `PurgeSubject.user` or `PurgeSubject.organization`."""

    kind: SubjectKind
    id: str

    @classmethod
    def user(cls, user_id: object) -> PurgeSubject:
        """The user `user_id`.

        Raises:
            InvalidInputError: ("user") anything but a `usr_` TypeID: empty, malformed, a wildcard.
        """
        return cls(kind=SubjectKind.USER, id=ids.parse_id(user_id, prefix=ids.USER_PREFIX, field="user"))

    @classmethod
    def organization(cls, org_id: object) -> PurgeSubject:
        """The organization `org_id`.

        Raises:
            InvalidInputError: ("org") anything but an `org_` TypeID: empty, malformed, a wildcard.
        """
        return cls(kind=SubjectKind.ORGANIZATION, id=ids.parse_id(org_id, prefix=ids.ORGANIZATION_PREFIX, field="org"))


@attrs.frozen(kw_only=True)
class PurgeCounts:
    """What a purge removed (or, in a dry run, would remove)."""

    memories: int = 0
    team_memories: int = 0
    """Of `memories`, those of the organization's team bank (an organization's purge; 0 for a user's)."""
    contexts: int = 0
    tokens: int = 0
    """API tokens revoked."""
    panel_sessions: int = 0
    """Panel sessions and unused sign-in links ended."""


@attrs.frozen(kw_only=True)
class PurgeRun:
    """A purge as stored: its counts so far and the digest chained over every batch of removed ids."""

    id: str
    subject: PurgeSubject
    counts: PurgeCounts
    digest: str
    batches: int
    started_at: datetime
    finished_at: datetime | None = None


@attrs.frozen(kw_only=True)
class PurgeReceipt:
    """What an operator keeps: what was asked, what was removed, when, and a digest of the removed ids."""

    subject: PurgeSubject
    dry_run: bool
    counts: PurgeCounts
    run_id: str | None
    """None for a dry run, which stores nothing."""
    digest: str | None
    batches: int
    resumed: bool
    """True when this call finished a run an earlier, interrupted call had started."""
    started_at: datetime
    finished_at: datetime
    kept_team_memories: int = 0
    """A user's purge: the team memories they wrote, which stay (the organization's; `author` still names them, and
    `author_former_member` says they left)."""

    def to_json(self) -> dict[str, object]:
        """The receipt as JSON-ready values (times in ISO 8601 UTC); docs/operations.md describes each field."""
        return {
            "kind": "memorybank.purge_receipt",
            "version": 1,
            "subject": {"kind": self.subject.kind.value, "id": self.subject.id},
            "dry_run": self.dry_run,
            "run_id": self.run_id,
            "removed": {
                "memories": self.counts.memories,
                "team_memories": self.counts.team_memories,
                "contexts": self.counts.contexts,
                "tokens": self.counts.tokens,
                "panel_sessions": self.counts.panel_sessions,
            },
            "kept": {"team_memories": self.kept_team_memories},
            "batches": self.batches,
            "digest": None if self.digest is None else {"algorithm": _DIGEST_SEED, "value": self.digest},
            "resumed": self.resumed,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat(),
        }


def first_digest(subject: PurgeSubject) -> str:
    """The digest of a run before its first batch: bound to what was asked."""
    return hashlib.sha256(f"{_DIGEST_SEED}\n{subject.kind.value}\n{subject.id}".encode()).hexdigest()


def chain_digest(previous: str, removed_ids: Iterable[str]) -> str:
    """The run's digest after one more batch: SHA-256 of the previous digest and the batch's sorted ids.

    The ids are memory and context TypeIDs (ASCII); one per line, so no two batches hash alike.
    """
    text = "\n".join([previous, *sorted(removed_ids)])
    return hashlib.sha256(text.encode("ascii")).hexdigest()


class PurgeStore(Protocol):
    """Storage side of a purge. Every method that deletes is bound to one user; each call is one transaction."""

    @abstractmethod
    def open_run(self, *, subject: PurgeSubject, run_id: str, at: datetime) -> tuple[PurgeRun, bool]:
        """The subject's unfinished run and True, or a new run `run_id` started `at` and False.

        Raises:
            UnavailableError: storage cannot be reached; nothing was written.
        """

    @abstractmethod
    def revoke_credentials(self, *, run: PurgeRun, at: datetime) -> PurgeRun:
        """Revoke the subject's live API tokens and end its panel sessions and links, counting them on the run.

        A user's: those issued to the user; an organization's: those issued for the organization.
        The token revocation counter moves in the same transaction, so every server sees it on its next request.
        """

    @abstractmethod
    def owners_in_organization(self, *, org_id: str) -> Sequence[str]:
        """The users who have memories saved under `org_id` (ids only; the one read across owners)."""

    @abstractmethod
    def team_memories_written_by(self, *, user_id: str) -> int:
        """How many memories of organizations' team banks `user_id` wrote (their `author`) are stored: what a purge
        of the user keeps. A count only, read across the banks; nothing of them is read or changed."""

    @abstractmethod
    def mark_former_member(self, *, user_id: str, limit: int) -> int:
        """Mark up to `limit` of the team memories `user_id` wrote, not marked yet, as by a former member
        (`Memory.author_former_member`), in one transaction; how many were marked, 0 once none is left. Nothing
        else of them changes (not their revision, nor `updated_at`): the memories stay the organization's."""

    @abstractmethod
    def remove_batch(self, *, run: PurgeRun, user_id: str, org_id: str | None, limit: int, at: datetime) -> PurgeRun:
        """Delete up to `limit` of `user_id`'s memories and their contexts, and update the run (`at`): one transaction.

        With `org_id`, only the memories saved under that organization. Without it, once the user has
        no memory left, up to `limit` contexts still carrying the user's id. The run's counts grow by
        what was removed (`team_memories` too, when `user_id` is an organization's bank) and its digest is
        chained over the removed ids (`chain_digest`); the run is returned unchanged when nothing was left.
        """

    @abstractmethod
    def finish(self, *, run: PurgeRun, at: datetime) -> PurgeRun:
        """Mark the run finished `at`."""

    @abstractmethod
    def count(self, *, subject: PurgeSubject, at: datetime) -> PurgeCounts:
        """What a purge of `subject` would remove now (live credentials only); changes nothing."""


class Offboarding:
    """The operator's purge: `purge_user` and `purge_organization`. Not reachable with a user principal."""

    def __init__(
        self,
        *,
        store: PurgeStore,
        clock: Clock | None = None,
        events: EventSink | None = None,
        new_id: Callable[[str], str] = ids.new_id,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._store = store
        self._clock = clock or SystemClock()
        self._events = events or LoggingEventSink()
        self._new_id = new_id
        self._sleep = sleep

    def purge_user(
        self,
        user_id: object,
        *,
        dry_run: bool = False,
        batch_size: object = None,
        pause_ms: object = None,
        progress: Callable[[int], None] | None = None,
    ) -> PurgeReceipt:
        """Delete every memory and context of `user_id`, revoke its API tokens, end its panel sessions, and mark the
        team memories they wrote (which stay) as by a former member.

        Idempotent and resumable: a rerun after a crash finishes the interrupted run, and its receipt
        counts the whole run; a rerun after a finished purge removes nothing. `pause_ms` is a rest
        between batches (for a gentler purge); `progress` gets the number of memories each batch
        removed. A dry run counts and changes nothing.

        Raises:
            InvalidInputError: ("user") not a `usr_` TypeID; ("batch_size", "pause_ms") out of bounds.
                Nothing is touched.
            UnavailableError: storage cannot be reached; committed batches stay done, rerun to finish.
        """
        subject = PurgeSubject.user(user_id)
        return self._purge(subject, dry_run=dry_run, batch_size=batch_size, pause_ms=pause_ms, progress=progress)

    def purge_organization(
        self,
        org_id: object,
        *,
        dry_run: bool = False,
        batch_size: object = None,
        pause_ms: object = None,
        progress: Callable[[int], None] | None = None,
    ) -> PurgeReceipt:
        """Delete every memory saved under `org_id` and its contexts, the organization's shared bank whole, and
        revoke the organization's tokens and sessions.

        Memories its members saved under other organizations stay. As `purge_user` otherwise (which keeps the team
        memories a person wrote: they are the organization's).

        Raises:
            InvalidInputError: ("org") not an `org_` TypeID; ("batch_size", "pause_ms") out of bounds.
                Nothing is touched.
            UnavailableError: storage cannot be reached; committed batches stay done, rerun to finish.
        """
        subject = PurgeSubject.organization(org_id)
        return self._purge(subject, dry_run=dry_run, batch_size=batch_size, pause_ms=pause_ms, progress=progress)

    def _purge(
        self,
        subject: PurgeSubject,
        *,
        dry_run: bool,
        batch_size: object,
        pause_ms: object,
        progress: Callable[[int], None] | None,
    ) -> PurgeReceipt:
        limit = clean_count(batch_size, path="batch_size", bound=limits.PURGE_BATCH)
        pace = _Pace(
            limit=limit,
            pause=clean_count(pause_ms, path="pause_ms", bound=limits.PURGE_PAUSE_MS) / 1000,
            progress=progress,
        )
        started_at = self._clock.now()
        if dry_run:
            counts = self._store.count(subject=subject, at=started_at)
            return PurgeReceipt(
                kept_team_memories=self._kept(subject),
                subject=subject,
                dry_run=True,
                counts=counts,
                run_id=None,
                digest=None,
                batches=0,
                resumed=False,
                started_at=started_at,
                finished_at=self._clock.now(),
            )
        began = time.perf_counter()
        run, resumed = self._store.open_run(subject=subject, run_id=self._new_id(ids.PURGE_RUN_PREFIX), at=started_at)
        self._events.emit(
            PURGE_STARTED,
            {"run_id": run.id, "subject_kind": subject.kind.value, "subject_id": subject.id, "resumed": int(resumed)},
        )
        # Credentials first: the subject can start no new request (and so save nothing) while its memories go.
        run = self._store.revoke_credentials(run=run, at=self._clock.now())
        if subject.kind is SubjectKind.USER:
            run = self._drain(run, subject.id, None, pace)
            # The team memories they wrote stay the organization's; each now says its author left.
            while self._store.mark_former_member(user_id=subject.id, limit=pace.limit):
                pass
        else:
            run = self._drain_organization(run, subject.id, pace)
        run = self._store.finish(run=run, at=self._clock.now())
        self._events.emit(
            PURGE_FINISHED,
            {
                "run_id": run.id,
                "subject_kind": subject.kind.value,
                "subject_id": subject.id,
                "memories": run.counts.memories,
                "team_memories": run.counts.team_memories,
                "contexts": run.counts.contexts,
                "tokens": run.counts.tokens,
                "panel_sessions": run.counts.panel_sessions,
                "batches": run.batches,
                "duration_ms": round((time.perf_counter() - began) * 1000, 3),
            },
        )
        return PurgeReceipt(
            kept_team_memories=self._kept(subject),
            subject=subject,
            dry_run=False,
            counts=run.counts,
            run_id=run.id,
            digest=run.digest,
            batches=run.batches,
            resumed=resumed,
            started_at=run.started_at,
            finished_at=run.finished_at or self._clock.now(),
        )

    def _kept(self, subject: PurgeSubject) -> int:
        # An organization's purge removes its bank whole: nothing of it is kept.
        if subject.kind is SubjectKind.USER:
            return self._store.team_memories_written_by(user_id=subject.id)
        return 0

    def _drain_organization(self, run: PurgeRun, org_id: str, pace: _Pace) -> PurgeRun:
        # Per owner, so every delete stays bound to one owner: each member's personal memories saved under the
        # organization, then the organization's shared bank, an owner of its own (ADR 0038) whose every memory
        # is the organization's. Looked up again after each pass: a save that raced the revocation is caught; a
        # pass that removes nothing ends the walk.
        bank = org_bank_owner(org_id)
        while True:
            before = run.counts
            for user_id in self._store.owners_in_organization(org_id=org_id):
                run = self._drain(run, user_id, org_id, pace)
            run = self._drain(run, bank, None, pace)
            if run.counts == before:
                return run

    def _drain(self, run: PurgeRun, user_id: str, org_id: str | None, pace: _Pace) -> PurgeRun:
        while True:
            after = self._store.remove_batch(
                run=run, user_id=user_id, org_id=org_id, limit=pace.limit, at=self._clock.now()
            )
            removed = after.counts.memories - run.counts.memories
            if after.counts == run.counts:
                return after
            if pace.progress is not None and removed:
                pace.progress(removed)
            run = after
            if pace.pause:
                self._sleep(pace.pause)


@attrs.frozen(kw_only=True)
class _Pace:
    """How one purge call walks: batch size, rest between batches (seconds), progress callback."""

    limit: int
    pause: float
    progress: Callable[[int], None] | None
