"""`SqlPurgeStore`: the storage side of an offboarding purge (`memorybank_core.offboarding`).

Every statement that deletes binds one user with `user_id = :owner` (on `memory` also the scope,
as every other statement on it does), and ids to delete are first selected under that predicate
and then deleted by id under it again: there is no statement here that could match another
user's row, whatever it is given. Each batch is one short transaction that locks only the rows
it deletes, deletes the contexts and then the memories, and updates the run's counts and digest;
counts come from the selected ids, not from row counts (a Spider head reports none for DELETE).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import attrs
import sqlalchemy as sa

from adapters_mysql.errors import unavailable_on_driver_error
from adapters_mysql.owner import memory_row, organization_memories, owned_memories, owned_vectors, team_memories_by
from adapters_mysql.schema import (
    api_token,
    memory,
    memory_context,
    memory_revision,
    memory_vector,
    panel_credential,
    purge_run,
)
from adapters_mysql.sqlite_search import purge_rewritten_text
from adapters_mysql.token_store import count_revocation
from adapters_mysql.unit_of_work import reading, writing
from adapters_mysql.usage import forget_usage
from memorybank_core import MemoryBankError, is_org_bank_owner, limits, org_bank_owner
from memorybank_core.offboarding import (
    PurgeCounts,
    PurgeRun,
    PurgeStore,
    PurgeSubject,
    SubjectKind,
    chain_digest,
    first_digest,
)


class PurgeUnsupportedError(MemoryBankError, RuntimeError):
    """This database cannot run a purge (a Spider head); the message says what to do instead."""


def _bound(value: object, what: str) -> str:
    """`value` if it can only ever match itself: a non-empty id of stored length.

    The core has already refused anything but a TypeID; this is the adapter's own guard, so no
    caller of this class (a future use case, a test, a host) can hand it an unbounded predicate.
    """
    if not isinstance(value, str) or not limits.ID.min <= len(value.strip()) <= limits.ID.max:
        raise ValueError(f"a purge statement needs one {what} id, got {value!r}")
    return value


class SqlPurgeStore(PurgeStore):
    """The `PurgeStore` port over SQLAlchemy Core (MySQL/MariaDB and SQLite)."""

    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine

    def open_run(self, *, subject: PurgeSubject, run_id: str, at: datetime) -> tuple[PurgeRun, bool]:
        unfinished = (
            sa.select(purge_run)
            .where(
                purge_run.c.subject_id == _bound(subject.id, "subject"),
                purge_run.c.subject_kind == subject.kind.value,
                purge_run.c.finished_at.is_(None),
            )
            .order_by(purge_run.c.started_at)
            .limit(1)
            .with_for_update()
        )
        with unavailable_on_driver_error("purge"), writing(self._engine) as connection:
            row = connection.execute(unfinished).first()
            if row is not None:
                return _run(row), True
            run = PurgeRun(
                id=run_id, subject=subject, counts=PurgeCounts(), digest=first_digest(subject), batches=0, started_at=at
            )
            connection.execute(
                purge_run.insert().values(
                    id=run.id,
                    subject_kind=subject.kind.value,
                    subject_id=subject.id,
                    memories=0,
                    team_memories=0,
                    contexts=0,
                    tokens=0,
                    panel_sessions=0,
                    batches=0,
                    digest=run.digest,
                    started_at=at,
                    updated_at=at,
                    finished_at=None,
                )
            )
            return run, False

    def revoke_credentials(self, *, run: PurgeRun, at: datetime) -> PurgeRun:
        subject = run.subject
        token_owner, session_owner = (
            (api_token.c.user_id, panel_credential.c.user_id)
            if subject.kind is SubjectKind.USER
            else (api_token.c.org_id, panel_credential.c.org_id)
        )
        owner = _bound(subject.id, "subject")
        with unavailable_on_driver_error("purge"), writing(self._engine) as connection:
            current = _locked(connection, run.id)
            tokens = connection.execute(
                api_token.update().where(token_owner == owner, api_token.c.revoked_at.is_(None)).values(revoked_at=at)
            ).rowcount
            if tokens:
                count_revocation(connection)
            sessions = connection.execute(
                panel_credential.update()
                .where(
                    session_owner == owner, panel_credential.c.ended_at.is_(None), panel_credential.c.expires_at > at
                )
                .values(ended_at=at)
            ).rowcount
            counts = attrs.evolve(
                current.counts,
                tokens=current.counts.tokens + tokens,
                panel_sessions=current.counts.panel_sessions + sessions,
            )
            return _save(connection, current, counts, current.digest, current.batches, at)

    def owners_in_organization(self, *, org_id: str) -> Sequence[str]:
        # The one statement that reads across owners: ids only, and every write it leads to is per user.
        query = (
            sa.select(memory.c.user_id)
            .where(organization_memories(_bound(org_id, "organization")))
            .distinct()
            .order_by(memory.c.user_id)
        )
        with unavailable_on_driver_error("purge"), reading(self._engine) as connection:
            return [row.user_id for row in connection.execute(query)]

    def team_memories_written_by(self, *, user_id: str) -> int:
        # A count across the team banks, read once per purge receipt; no id or value of a memory leaves it.
        query = sa.select(sa.func.count()).select_from(memory).where(team_memories_by(_bound(user_id, "user")))
        with unavailable_on_driver_error("purge"), reading(self._engine) as connection:
            return int(connection.execute(query).scalar_one())

    def mark_former_member(self, *, user_id: str, limit: int) -> int:
        # Bound to one author (`memory_author_id`), across the banks; only the mark changes, in rows selected and
        # then updated under the same predicate, so no other memory can be touched.
        theirs = sa.and_(team_memories_by(_bound(user_id, "user")), memory.c.author_former_member.is_(None))
        with unavailable_on_driver_error("purge"), writing(self._engine) as connection:
            memory_ids = list(
                connection.execute(
                    sa.select(memory.c.id).where(theirs).order_by(memory.c.id).limit(limit).with_for_update()
                ).scalars()
            )
            if memory_ids:
                connection.execute(
                    memory.update().where(theirs, memory.c.id.in_(memory_ids)).values(author_former_member=True)
                )
            return len(memory_ids)

    def remove_batch(self, *, run: PurgeRun, user_id: str, org_id: str | None, limit: int, at: datetime) -> PurgeRun:
        owner = _bound(user_id, "user")
        mine = owned_memories(owner)
        if org_id is not None:
            mine = sa.and_(mine, organization_memories(_bound(org_id, "organization")))
        with unavailable_on_driver_error("purge"), writing(self._engine) as connection:
            current = _locked(connection, run.id)
            # In index order (user_id, created_at, id): MySQL reads and locks just these rows. An empty
            # answer locks the user's gap, so a racing save waits until the leftover sweep below commits.
            memory_ids = list(
                connection.execute(
                    sa.select(memory.c.id)
                    .where(mine)
                    .order_by(memory.c.created_at, memory.c.id)
                    .limit(limit)
                    .with_for_update()
                ).scalars()
            )
            if memory_ids:
                context_ids = list(
                    connection.execute(
                        sa.select(memory_context.c.id).where(
                            memory_context.c.user_id == owner, memory_context.c.memory_id.in_(memory_ids)
                        )
                    ).scalars()
                )
                connection.execute(
                    memory_context.delete().where(
                        memory_context.c.user_id == owner, memory_context.c.memory_id.in_(memory_ids)
                    )
                )
                # Their vectors too (hybrid search): an embedding can be inverted to much of its text.
                connection.execute(
                    memory_vector.delete().where(owned_vectors(owner), memory_vector.c.memory_id.in_(memory_ids))
                )
                # And every kept earlier version: a purge leaves nothing of what the memories ever said.
                connection.execute(
                    memory_revision.delete().where(
                        memory_revision.c.user_id == owner, memory_revision.c.memory_id.in_(memory_ids)
                    )
                )
                connection.execute(memory.delete().where(mine, memory.c.id.in_(memory_ids)))
                # The quota ledger no longer matches: rebuilt from what remains on the owner's next save.
                forget_usage(connection, owner)
            elif org_id is None:
                # The user has no memory left: contexts and vectors still carrying the user's id (none,
                # unless something wrote around the store) go too, so nothing of the user remains.
                connection.execute(memory_vector.delete().where(owned_vectors(owner)))
                connection.execute(memory_revision.delete().where(memory_revision.c.user_id == owner))
                context_ids = list(
                    connection.execute(
                        sa.select(memory_context.c.id)
                        .where(memory_context.c.user_id == owner)
                        .order_by(memory_context.c.id)
                        .limit(limit)
                        .with_for_update()
                    ).scalars()
                )
                if context_ids:
                    connection.execute(
                        memory_context.delete().where(
                            memory_context.c.user_id == owner, memory_context.c.id.in_(context_ids)
                        )
                    )
            else:
                context_ids = []
            if not memory_ids and not context_ids:
                return current
            counts = attrs.evolve(
                current.counts,
                memories=current.counts.memories + len(memory_ids),
                team_memories=current.counts.team_memories + (len(memory_ids) if is_org_bank_owner(owner) else 0),
                contexts=current.counts.contexts + len(context_ids),
            )
            digest = chain_digest(current.digest, [*memory_ids, *context_ids])
            return _save(connection, current, counts, digest, current.batches + 1, at)

    def finish(self, *, run: PurgeRun, at: datetime) -> PurgeRun:
        if self._engine.dialect.name == "sqlite" and run.batches:
            # FTS5 keeps deleted rows' tokens in its segments until they are merged: merge them, so
            # nothing of the purged memories stays in the file.
            with unavailable_on_driver_error("purge"):
                purge_rewritten_text(self._engine)
        with unavailable_on_driver_error("purge"), writing(self._engine) as connection:
            connection.execute(
                purge_run.update()
                .where(purge_run.c.id == run.id, purge_run.c.finished_at.is_(None))
                .values(finished_at=at, updated_at=at)
            )
            return _locked(connection, run.id)

    def count(self, *, subject: PurgeSubject, at: datetime) -> PurgeCounts:
        owner = _bound(subject.id, "subject")
        team: sa.Select[Any] | None = None
        if subject.kind is SubjectKind.USER:
            memories = sa.select(sa.func.count()).select_from(memory).where(owned_memories(owner))
            contexts = sa.select(sa.func.count()).select_from(memory_context).where(memory_context.c.user_id == owner)
            token_owner, session_owner = api_token.c.user_id, panel_credential.c.user_id
        else:
            # The members' personal memories saved under it, and its shared bank (ADR 0038).
            in_org = sa.or_(organization_memories(owner), owned_memories(org_bank_owner(owner)))
            memories = sa.select(sa.func.count()).select_from(memory).where(in_org)
            team = sa.select(sa.func.count()).select_from(memory).where(owned_memories(org_bank_owner(owner)))
            contexts = (
                sa.select(sa.func.count())
                .select_from(
                    memory_context.join(memory, memory_row(memory_context.c.user_id, memory_context.c.memory_id))
                )
                .where(in_org)
            )
            token_owner, session_owner = api_token.c.org_id, panel_credential.c.org_id
        tokens = (
            sa.select(sa.func.count())
            .select_from(api_token)
            .where(token_owner == owner, api_token.c.revoked_at.is_(None))
        )
        sessions = (
            sa.select(sa.func.count())
            .select_from(panel_credential)
            .where(session_owner == owner, panel_credential.c.ended_at.is_(None), panel_credential.c.expires_at > at)
        )
        with unavailable_on_driver_error("purge"), reading(self._engine) as connection:
            return PurgeCounts(
                memories=int(connection.execute(memories).scalar_one()),
                team_memories=int(connection.execute(team).scalar_one()) if team is not None else 0,
                contexts=int(connection.execute(contexts).scalar_one()),
                tokens=int(connection.execute(tokens).scalar_one()),
                panel_sessions=int(connection.execute(sessions).scalar_one()),
            )


def _locked(connection: sa.Connection, run_id: str) -> PurgeRun:
    """The run as stored, locked until the transaction ends: two purges of one run take turns."""
    row = connection.execute(sa.select(purge_run).where(purge_run.c.id == run_id).with_for_update()).first()
    if row is None:
        raise LookupError(f"no purge run {run_id}")
    return _run(row)


def _save(
    connection: sa.Connection,
    run: PurgeRun,
    counts: PurgeCounts,
    digest: str,
    batches: int,
    at: datetime,
) -> PurgeRun:
    """Write the run's new counts in the caller's transaction, beside the work they count."""
    connection.execute(
        purge_run.update()
        .where(purge_run.c.id == run.id)
        .values(
            memories=counts.memories,
            team_memories=counts.team_memories,
            contexts=counts.contexts,
            tokens=counts.tokens,
            panel_sessions=counts.panel_sessions,
            digest=digest,
            batches=batches,
            updated_at=at,
        )
    )
    return attrs.evolve(run, counts=counts, digest=digest, batches=batches)


def _run(row: sa.Row[Any]) -> PurgeRun:
    kind = SubjectKind(row.subject_kind)
    return PurgeRun(
        id=row.id,
        subject=PurgeSubject(kind=kind, id=row.subject_id),
        counts=PurgeCounts(
            memories=row.memories,
            team_memories=row.team_memories,
            contexts=row.contexts,
            tokens=row.tokens,
            panel_sessions=row.panel_sessions,
        ),
        digest=row.digest,
        batches=row.batches,
        started_at=row.started_at,
        finished_at=row.finished_at,
    )
