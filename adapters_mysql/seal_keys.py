"""Which keys a database needs, checked before serving: the key-check values and the rows' seal states.

Every key that becomes primary on a database leaves a key-check value in `seal_key`: a known
text sealed under that key and bound to its row. Before serving, the configured key ring must
open every one of them and hold every key a memory row's `seal_state` names; otherwise the database
refuses to start ("the configured key ring does not open this database (key ids seen: …)")
rather than serve garbage or half the data. A database with no key-check value and no sealed row
is a plaintext database.

A key-check value also records how strict reads are (its binding says which): `open` (plaintext
rows may still be read), `closed` (every row is sealed: a plaintext row fails closed) or `bound`
(also every row's search tokens carry their authenticator: a row without one fails closed). A
database only ever moves towards `bound`, and an attacker with write access cannot move it back
without the key.

Hybrid search's vectors (`memory_vector`) carry a seal state too. The re-seal walks and `keys rotate`'s
accounting read them (`read_status(..., vectors=True)`): a key a vector still needs is never dropped
(so `keys remove` cannot strand it), and a vector left plaintext or under an older key is reported.
The start-up check does not: `memory_vector` has no seal-state index, so counting its states scans every
vector, and a vector that does not open only makes its memory findable by words alone.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime

import attrs
import sqlalchemy as sa

from adapters_mysql.engines import for_writing
from adapters_mysql.errors import SchemaNotReadyError, driver_error_code, unavailable_on_driver_error
from adapters_mysql.schema import memory, memory_revision, memory_vector, seal_key
from adapters_mysql.sealed_rows import RowCodec, SealState
from memorybank_core import BlindIndex, BrokenSealError, SealBinding, Sealer
from memorybank_core.wording import counted, pluralized
from memorybank_search import OwnerIndexer

_log = logging.getLogger("memorybank.storage")

_CHECK_TEXT = "memorybank key check"
_DUPLICATE_KEY = 1062
#: How strict reads are, least to most; the binding label of each (see the module docstring).
POLICIES = ("open", "closed", "bound")


class KeyRingError(SchemaNotReadyError):
    """The key ring does not fit the database: missing where rows are sealed, or lacking a key they need."""


def _check_binding(key_id: str, policy: str) -> SealBinding:
    # Bound to the policy, so it cannot be flipped in the table: once every row is sealed, a
    # plaintext row (a forged one) fails closed; once every row's tokens are authenticated, a row
    # claiming the old unauthenticated format does too.
    return SealBinding(table=seal_key.name, column="check_value", row_id=f"{key_id}:{policy}", user_id="")


def _keys_of(state: str) -> tuple[str, ...]:
    try:
        return SealState.parse(state).key_ids
    except BrokenSealError:
        # A malformed state names no key; the row itself fails closed when read.
        return ()


@attrs.frozen(kw_only=True)
class SealStatus:
    """What a database holds: registered key ids and how many memories carry each seal state (None: plaintext).

    `vector_states`: the same count over hybrid search's vectors, and `revision_states` over the kept earlier
    versions of memories; empty when they were not read.
    """

    registered: tuple[str, ...]
    states: Mapping[str | None, int]
    vector_states: Mapping[str | None, int] = attrs.field(factory=dict)
    revision_states: Mapping[str | None, int] = attrs.field(factory=dict)

    @property
    def key_ids_seen(self) -> list[str]:
        """Every key id the database names, in the key-check table or in a row's (or a vector's) state."""
        return sorted({*self.registered, *self.key_ids_in_rows})

    @property
    def key_ids_in_rows(self) -> list[str]:
        """The key ids rows (or vectors and kept revisions, when read) are sealed under: what cannot be read
        without the ring."""
        seen: set[str] = set()
        for state in (*self.states, *self.vector_states, *self.revision_states):
            if state is not None:
                seen.update(_keys_of(state))
        return sorted(seen)

    @property
    def plaintext_vectors(self) -> int:
        """How many vectors are stored in plaintext (0 when the vectors were not read)."""
        return self.vector_states.get(None, 0)

    def revisions_behind(self, target_state: str | None) -> int:
        """How many kept revisions are not sealed as `target_state` (0 when they were not read)."""
        return sum(self.revision_states.values()) - self.revision_states.get(target_state, 0)

    def vectors_behind(self, target_state: str | None) -> int:
        """How many vectors are not sealed as `target_state` (0 when the vectors were not read)."""
        return sum(self.vector_states.values()) - self.vector_states.get(target_state, 0)

    @property
    def plaintext_rows(self) -> int:
        """How many memories are stored in plaintext."""
        return self.states.get(None, 0)

    @property
    def sealed(self) -> bool:
        """True when anything here was ever sealed: the database then needs its key ring."""
        return bool(self.key_ids_seen)

    @property
    def unauthenticated_rows(self) -> int:
        """How many sealed memories hold search tokens of format 1 (no authenticator; sealed before revision 0008)."""
        return sum(count for state, count in self.states.items() if state is not None and _format_of(state) == 1)

    def token_schemes(self) -> list[tuple[str, int]]:
        """The (index key, token format) pairs some row's search tokens were written under."""
        schemes = set()
        for state in self.states:
            if state is not None:
                try:
                    parsed = SealState.parse(state)
                except BrokenSealError:
                    continue
                schemes.add((parsed.index_key, parsed.token_format))
        return sorted(schemes)

    def strictest_policy(self) -> str:
        """The policy these rows allow: `bound` when no row is plaintext or unauthenticated, else `closed` or `open`."""
        # A plaintext vector or revision is a plaintext row too: once reads are `closed` it would fail closed.
        if self.plaintext_rows or self.plaintext_vectors or self.revision_states.get(None, 0):
            return "open"
        return "closed" if self.unauthenticated_rows else "bound"

    def describe(self, target_state: str | None) -> str:
        """One line for `serve`, `migrate` and `check_ready`: which mode this database is in."""
        total = sum(self.states.values())
        if target_state is None:
            return "plaintext: memories are stored unencrypted (no key ring configured)"
        behind = total - self.states.get(target_state, 0)
        target = SealState.parse(target_state)
        mode = f"sealed at rest with key {target.sealing_key} (index key {target.index_key})"
        if self.plaintext_rows:
            still = f"{_part(self.plaintext_rows, total)} {pluralized(self.plaintext_rows, 'is')}"
            return f"{mode}; {still} still plaintext: run `memorybank encrypt`"
        if behind:
            return (
                f"{mode}; {_part(behind, total)} {pluralized(behind, 'is')} under older keys or token formats: "
                "run `memorybank keys rotate`"
            )
        everything = f"all {total} memories" if total != 1 else "its one memory"
        revisions = self.revisions_behind(target_state)
        if revisions:
            of_all = sum(self.revision_states.values())
            return (
                f"{mode}; {everything} sealed, but {revisions} of {counted(of_all, 'kept earlier version')} "
                f"{pluralized(revisions, 'is')} plaintext or under older keys: run `memorybank keys rotate`"
            )
        vectors = self.vectors_behind(target_state)
        if vectors:
            of_all = sum(self.vector_states.values())
            return (
                f"{mode}; {everything} sealed, but {vectors} of {counted(of_all, 'hybrid-search vector')} "
                f"{pluralized(vectors, 'is')} plaintext or under older keys: run `memorybank keys rotate`"
            )
        return f"{mode}; {everything} sealed"


def _part(count: int, total: int) -> str:
    """`3 of 6 memories`, or `its one memory` (never `1 of 1 memories`)."""
    return f"{count} of {total} memories" if total != 1 else "its one memory"


def read_status(connection: sa.Connection, *, vectors: bool = False) -> SealStatus:
    """The database's key-check ids and seal-state counts (one pass over the seal-state index).

    `vectors`: count the seal states of vectors and kept revisions too (scans of `memory_vector` and
    `memory_revision`; see the module docstring).
    """
    registered = tuple(connection.execute(sa.select(seal_key.c.key_id).order_by(seal_key.c.key_id)).scalars())
    counts = connection.execute(sa.select(memory.c.seal_state, sa.func.count()).group_by(memory.c.seal_state)).all()
    vector_counts = (
        connection.execute(
            sa.select(memory_vector.c.seal_state, sa.func.count()).group_by(memory_vector.c.seal_state)
        ).all()
        if vectors
        else []
    )
    revision_counts = (
        connection.execute(
            sa.select(memory_revision.c.seal_state, sa.func.count()).group_by(memory_revision.c.seal_state)
        ).all()
        if vectors
        else []
    )
    return SealStatus(
        registered=registered,
        states={state: int(count) for state, count in counts},
        vector_states={state: int(count) for state, count in vector_counts},
        revision_states={state: int(count) for state, count in revision_counts},
    )


def _format_of(state: str) -> int:
    try:
        return SealState.parse(state).token_format
    except BrokenSealError:
        return 0


def verify(status: SealStatus, sealer: Sealer | None, checks: Mapping[str, str]) -> str:
    """Refuse a key ring (or its absence) that cannot open everything the database holds.

    Returns the strictest policy a key-check value records (`open` for a plaintext database).

    Raises:
        KeyRingError: sealed data and no ring, or a ring lacking or not opening a key seen here.
    """
    seen = status.key_ids_seen
    if not seen:
        return "open"
    listed = ", ".join(seen)
    if sealer is None:
        sealed = status.key_ids_in_rows
        if not sealed:
            # A key was registered (a start with a ring) but nothing was sealed under it: plaintext reads lose nothing.
            return "open"
        raise KeyRingError(
            f"this database holds sealed memories (key ids seen: {', '.join(sealed)}): configure its key ring with "
            "--key-file or MEMORYBANK_KEY_FILE"
        )
    missing = [key_id for key_id in seen if key_id not in sealer.key_ids]
    strictest = "open"
    for key_id, check in checks.items():
        policy = _opened_policy(sealer, key_id, check)
        if policy is None:
            missing.append(key_id)
        elif POLICIES.index(policy) > POLICIES.index(strictest):
            strictest = policy
    if missing:
        raise KeyRingError(
            f"the configured key ring does not open this database (key ids seen: {listed}; "
            f"not opened: {', '.join(sorted(set(missing)))})"
        )
    # Every key the rows use was registered with a check value that records how strict reads are
    # (`forget_unused` keeps them). One gone means the table was tampered with: starting anyway
    # would forget that strictness, and a forged row of an older token format would be read again.
    unchecked = [key_id for key_id in seen if key_id not in checks]
    if unchecked:
        raise KeyRingError(
            f"this database's rows use keys it holds no key-check value for ({', '.join(unchecked)}): the "
            "seal_key table was changed outside memorybank; restore it from a backup"
        )
    return strictest


def _opened_policy(sealer: Sealer, key_id: str, check: str) -> str | None:
    """The policy the check value opens under; None when it does not open at all."""
    for policy in reversed(POLICIES):
        try:
            sealer.open(check, _check_binding(key_id, policy))
        except BrokenSealError:
            continue
        return policy
    return None


def check_values(connection: sa.Connection) -> dict[str, str]:
    """The stored key-check values by key id."""
    rows = connection.execute(sa.select(seal_key.c.key_id, seal_key.c.check_value)).all()
    return dict(rows)


def register_primary(connection: sa.Connection, sealer: Sealer, *, policy: str) -> None:
    """Store the key-check value of the ring's primary key, unless it is there already (safe to race).

    `policy`: how strict reads are from now on (`POLICIES`).
    """
    key_id = sealer.primary_key_id
    exists = connection.execute(sa.select(seal_key.c.key_id).where(seal_key.c.key_id == key_id)).first()
    if exists is not None:
        return
    value = sealer.seal(_CHECK_TEXT, _check_binding(key_id, policy))
    try:
        connection.execute(seal_key.insert().values(key_id=key_id, check_value=value, created_at=datetime.now(UTC)))
    except sa.exc.IntegrityError as error:
        # Another process registered it between our read and insert: the same key, fine.
        if driver_error_code(error) not in (_DUPLICATE_KEY, None):
            raise


def tighten(connection: sa.Connection, sealer: Sealer, policy: str) -> None:
    """Record `policy` (`closed` or `bound`) in the primary key's check value: from the next start on, it holds."""
    value = sealer.seal(_CHECK_TEXT, _check_binding(sealer.primary_key_id, policy))
    connection.execute(seal_key.update().where(seal_key.c.key_id == sealer.primary_key_id).values(check_value=value))


def forget_unused(connection: sa.Connection, sealer: Sealer) -> list[str]:
    """Drop the key-check values of keys no row or vector needs any more (not primary, not the index key); their ids."""
    status = read_status(connection, vectors=True)
    in_use = {sealer.primary_key_id, sealer.index.key_id}
    for state in (*status.states, *status.vector_states, *status.revision_states):
        if state is not None:
            in_use.update(_keys_of(state))
    unused = [key_id for key_id in status.registered if key_id not in in_use]
    if unused:
        connection.execute(seal_key.delete().where(seal_key.c.key_id.in_(unused)))
    return unused


def sealing_status(engine: sa.Engine, *, vectors: bool = False) -> SealStatus:
    """The database's key-check ids and how many memories (and, if `vectors`, vectors) carry each seal state.

    Raises:
        UnavailableError: the database cannot be reached.
    """
    with unavailable_on_driver_error("sealing status"), engine.connect() as connection:
        return read_status(connection, vectors=vectors)


def adopt_sealing(engine: sa.Engine, sealer: Sealer | None, indexer: OwnerIndexer, codec: RowCodec) -> None:
    """Check the key ring against the database, register its primary key, and learn the rows' schemes.

    Queries then also match rows still tokenized under an older scheme (plaintext, an old index
    key) until they are re-sealed; a plaintext row is refused once every row was sealed.

    Raises:
        KeyRingError: the database holds sealed memories the key ring (or none) cannot open.
        UnavailableError: the database cannot be reached.
    """
    with unavailable_on_driver_error("key check"), for_writing(engine).begin() as connection:
        status = read_status(connection)
        recorded = verify(status, sealer, check_values(connection))
        # Only ever stricter: what a key check records, or what the rows now allow.
        policy = max(recorded, status.strictest_policy(), key=POLICIES.index)
        if sealer is not None:
            register_primary(connection, sealer, policy=policy)
    _log.info("database mode: %s", status.describe(codec.state))
    if sealer is None:
        return
    plaintext_allowed = bool(status.plaintext_rows) and policy == "open"
    schemes: list[BlindIndex | None] = [None] if plaintext_allowed else []
    schemes += [
        index
        for key_id, token_format in status.token_schemes()
        if (index := sealer.index_for(key_id, token_format)) is not None
    ]
    indexer.also_search(schemes)
    codec.plaintext_allowed = plaintext_allowed
    codec.unauthenticated_tokens_allowed = bool(status.unauthenticated_rows) and policy != "bound"


def settle_keys(engine: sa.Engine, sealer: Sealer) -> None:
    """After a re-seal that left no broken row or vector: make reads as strict as the rows allow, drop unused keys.

    Raises:
        UnavailableError: the database cannot be reached.
    """
    with unavailable_on_driver_error("reindex"), for_writing(engine).begin() as connection:
        policy = read_status(connection, vectors=True).strictest_policy()
        if policy != "open":
            tighten(connection, sealer, policy)
        forget_unused(connection, sealer)
