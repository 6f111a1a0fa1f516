"""The memory bank's tables as SQLAlchemy Core objects: one MetaData for MySQL and SQLite.

Every size comes from `memorybank_core.limits`. The MySQL FULLTEXT index and the
SQLite FTS5 table are not part of this metadata: autogenerate cannot see them,
so the revisions and `adapters_mysql.readiness` create them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeEngine

from memorybank_core import Origin, PanelCredentialKind, Scope, SubjectKind, limits
from memorybank_core.limits import TextBound

#: MySQL TEXT holds 65,535 bytes, and utf8mb4 needs up to 4 bytes per character.
_MYSQL_TEXT_BYTES = 65_535
_UTF8MB4_MAX_BYTES_PER_CHARACTER = 4

#: MySQL table options: InnoDB for FULLTEXT and transactions; a case- and accent-insensitive
#: collation that MariaDB and MySQL 8 both know, so `cafe` finds `café` as FTS5's unicode61 does.
MYSQL_TABLE_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_unicode_ci",
}

#: A row's seal state ("<key id>:<key id>:<format>") and a key id fit in this.
SEAL_STATE_LENGTH = 32
#: A search-token authenticator: "<format>." + 43 base64url characters (HMAC-SHA256), with room to spare.
SEARCH_MAC_LENGTH = 64

#: A door's name (`memorybank_core.Door`: rest, mcp, panel, import), with room to spare.
DOOR_LENGTH = 16

#: The hex SHA-256 of a token, panel link or panel session secret (and of a purge digest).
TOKEN_HASH_LENGTH = 64


class UtcDateTime(sa.TypeDecorator[datetime]):
    """A timezone-aware UTC datetime with microseconds, stored naive in UTC.

    MySQL gets `DATETIME(6)`; SQLite gets SQLAlchemy's fixed-width ISO text, so string
    order is time order and the keyset comparison works on both.
    """

    impl = sa.DateTime
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "mysql":
            return dialect.type_descriptor(mysql.DATETIME(fsp=6))
        return dialect.type_descriptor(sa.DateTime())

    def process_bind_param(self, value: datetime | None, _dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.utcoffset() is None:
            # A naive datetime would be stored as if it were UTC: refuse rather than guess.
            raise ValueError("UtcDateTime needs a timezone-aware datetime")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, _dialect: Dialect) -> datetime | None:
        return None if value is None else value.replace(tzinfo=UTC)


def text_type(bound: TextBound) -> TypeEngine[str]:
    """The smallest text column type that holds `bound.max` characters on every dialect."""
    if bound.max * _UTF8MB4_MAX_BYTES_PER_CHARACTER <= _MYSQL_TEXT_BYTES:
        return sa.Text()
    return sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql")


def id_type() -> sa.types.TypeEngine[str]:
    """The column type of every stored identifier: compared byte for byte (`Alice` is not `alice`).

    On MySQL/MariaDB the binary collation, not the tables' accent- and case-insensitive one
    (revision 0011); SQLite compares text exactly already.
    """
    return sa.String(limits.ID_MAX_LENGTH).with_variant(
        mysql.VARCHAR(limits.ID_MAX_LENGTH, charset="utf8mb4", collation="utf8mb4_bin"), "mysql"
    )


def _enum(values: type[Scope] | type[Origin], name: str) -> sa.Enum:
    # Plain string values (not the Python enum) so the column holds exactly the wire values.
    return sa.Enum(*(member.value for member in values), name=name)


metadata = sa.MetaData()

memory = sa.Table(
    "memory",
    metadata,
    sa.Column("id", id_type(), primary_key=True),
    sa.Column("user_id", id_type(), nullable=False),
    sa.Column("org_id", id_type(), nullable=False),
    sa.Column("scope", _enum(Scope, "memory_scope"), nullable=False, server_default=Scope.USER.value),
    sa.Column("content", text_type(limits.CONTENT), nullable=False),
    # The reference host's varchar(64): the same width as an id, so it shares that bound.
    sa.Column("source", sa.String(limits.ID_MAX_LENGTH), nullable=False),
    sa.Column("tags", sa.JSON(none_as_null=True), nullable=True),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("updated_at", UtcDateTime(), nullable=False),
    # The owner-scoped search document (memorybank_search.indexer): tagged tokens, how many, and
    # the tokenization scheme that wrote them. NULL / 0 until a row is indexed (rows from 0001).
    sa.Column("search_terms", sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql"), nullable=True),
    sa.Column("doc_length", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("search_version", sa.SmallInteger(), nullable=False, server_default="0"),
    # Encryption at rest (adapters_mysql.sealed_rows): NULL for a plaintext row, else
    # "<sealing key id>:<index key id>". Re-sealing walks rows whose state is not the ring's.
    sa.Column("seal_state", sa.String(SEAL_STATE_LENGTH), nullable=True),
    # What the memory counts against its owner's storage quota: the plaintext characters of its
    # content, tags and snippets (`memorybank_core.charged_characters`), whatever sealing makes of
    # them. NULL on rows saved before revision 0010 until `memorybank migrate` counts them.
    sa.Column("characters", sa.Integer(), nullable=True),
    # The authenticator of a sealed row's search columns (tokens and their count), bound to the
    # row; NULL for plaintext rows and rows sealed before revision 0008 (token format 1).
    sa.Column("search_mac", sa.String(SEARCH_MAC_LENGTH), nullable=True),
    # Memories that change (revision 0015): the version count (the ETag), the memory that replaced this one
    # (NULL: current), and the door and credential that wrote this version (NULL: saved before 0015).
    sa.Column("revision", sa.Integer(), nullable=False, server_default="1"),
    sa.Column("retired_by", id_type(), nullable=True),
    sa.Column("written_via", sa.String(DOOR_LENGTH), nullable=True),
    sa.Column("written_by", sa.String(limits.CREDENTIAL.max), nullable=True),
    # The organization's shared bank (revision 0016): the person who saved an org memory; NULL for a personal one
    # (its owner wrote it). An org memory's `user_id` is its organization's bank (`memorybank_core.org_bank_owner`).
    sa.Column("author_id", id_type(), nullable=True),
    # An org memory whose author a purge removed (revision 0017): true, else NULL (a member's, and every personal
    # memory). Set by `purge --user` in the rows themselves, so a read shows it without a look-up of its own.
    sa.Column("author_former_member", sa.Boolean(create_constraint=False), nullable=True),
    # Leftmost prefix serves `user_id = ?`; (created_at, id) serves the newest-first keyset listing;
    # scope and doc_length make the owner's BM25 statistics (count, total length) index-only.
    sa.Index("memory_user_id_created_at_id", "user_id", "created_at", "id", "scope", "doc_length"),
    # Finds the rows `encrypt` / `keys rotate` still have to re-seal, and the key states in use.
    sa.Index("memory_seal_state", "seal_state", "id"),
    # The team memories one person wrote, across the banks: what a purge of that person counts and marks.
    sa.Index("memory_author_id", "author_id"),
    **MYSQL_TABLE_OPTIONS,
)

memory_context = sa.Table(
    "memory_context",
    metadata,
    sa.Column("id", id_type(), primary_key=True),
    sa.Column("memory_id", id_type(), nullable=False),
    # Copied from the memory so both tables shard by user_id and every context query is owner-scoped.
    sa.Column("user_id", id_type(), nullable=False),
    sa.Column("citation", sa.JSON(none_as_null=True), nullable=True),
    sa.Column("snippet", text_type(limits.SNIPPET), nullable=False),
    sa.Column("origin", _enum(Origin, "memory_context_origin"), nullable=True),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Index("memory_context_user_id_memory_id", "user_id", "memory_id"),
    **MYSQL_TABLE_OPTIONS,
)

api_token = sa.Table(
    "api_token",
    metadata,
    sa.Column("id", id_type(), primary_key=True),
    sa.Column("token_hash", sa.CHAR(TOKEN_HASH_LENGTH), nullable=False),
    sa.Column("user_id", id_type(), nullable=False),
    sa.Column("org_id", id_type(), nullable=False),
    sa.Column("scopes", sa.JSON(), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("revoked_at", UtcDateTime(), nullable=True),
    sa.UniqueConstraint("token_hash", name="api_token_token_hash"),
    sa.Index("api_token_user_id", "user_id"),
    **MYSQL_TABLE_OPTIONS,
)

#: One row (id 1) counting every revocation ever made, bumped in the revoking transaction. A
#: server re-verifies the tokens it has cached whenever it changes (`memorybank_core.tokens`).
#: No row yet reads as 0.
api_token_revocations = sa.Table(
    "api_token_revocations",
    metadata,
    sa.Column("id", sa.SmallInteger(), primary_key=True, autoincrement=False),
    sa.Column("generation", sa.BigInteger(), nullable=False),
    **MYSQL_TABLE_OPTIONS,
)

panel_credential = sa.Table(
    "panel_credential",
    metadata,
    sa.Column("id", id_type(), primary_key=True),
    sa.Column(
        "kind", sa.Enum(*(kind.value for kind in PanelCredentialKind), name="panel_credential_kind"), nullable=False
    ),
    sa.Column("secret_hash", sa.CHAR(TOKEN_HASH_LENGTH), nullable=False),
    sa.Column("user_id", id_type(), nullable=False),
    sa.Column("org_id", id_type(), nullable=False),
    sa.Column("scopes", sa.JSON(), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("expires_at", UtcDateTime(), nullable=False),
    sa.Column("ended_at", UtcDateTime(), nullable=True),
    # The token or link a session was made from: revoking the token ends its sessions (revision 0014).
    sa.Column("made_from", id_type(), nullable=True),
    sa.UniqueConstraint("secret_hash", name="panel_credential_secret_hash"),
    sa.Index("panel_credential_user_id", "user_id"),
    sa.Index("panel_credential_made_from", "made_from"),
    **MYSQL_TABLE_OPTIONS,
)

#: The key-check values: one per ring key that may have sealed something here. A database with
#: rows in this table refuses to start without a key ring that opens every one of them.
seal_key = sa.Table(
    "seal_key",
    metadata,
    sa.Column("key_id", sa.String(SEAL_STATE_LENGTH), primary_key=True),
    sa.Column("check_value", sa.Text(), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    **MYSQL_TABLE_OPTIONS,
)

#: Each user's storage use, the ledger the quota is checked against: one row per user, changed in
#: the transaction of every save and delete (adapters_mysql.usage). A missing row is rebuilt from
#: the user's memories on their next save.
memory_usage = sa.Table(
    "memory_usage",
    metadata,
    sa.Column("user_id", id_type(), primary_key=True),
    sa.Column("memories", sa.BigInteger(), nullable=False),
    sa.Column("characters", sa.BigInteger(), nullable=False),
    **MYSQL_TABLE_OPTIONS,
)

#: The operators' controls (memorybank_core.controls): per user, per organization and for everyone
#: (kind 'all', subject '*'), a gate switch and quota limits; NULL leaves a setting to the next level.
memory_control = sa.Table(
    "memory_control",
    metadata,
    sa.Column("kind", sa.Enum(*(kind.value for kind in SubjectKind), name="memory_control_kind"), primary_key=True),
    sa.Column("subject_id", id_type(), primary_key=True),
    sa.Column("enabled", sa.Boolean(create_constraint=False), nullable=True),
    sa.Column("max_memories", sa.BigInteger(), nullable=True),
    sa.Column("max_characters", sa.BigInteger(), nullable=True),
    sa.Column("updated_at", UtcDateTime(), nullable=False),
    **MYSQL_TABLE_OPTIONS,
)

#: One row per offboarding purge (`memorybank_core.offboarding`): what was asked, what has been
#: removed so far and the digest chained over the removed ids. Each batch updates it in the
#: transaction that deletes, so after a crash it says exactly what is done and a rerun resumes it.
#: No `user_id` column: it is the operator's record, not a user's row (unsharded on Spider).
purge_run = sa.Table(
    "purge_run",
    metadata,
    sa.Column("id", id_type(), primary_key=True),
    sa.Column("subject_kind", sa.String(16), nullable=False),
    sa.Column("subject_id", id_type(), nullable=False),
    sa.Column("memories", sa.BigInteger(), nullable=False),
    sa.Column("contexts", sa.BigInteger(), nullable=False),
    sa.Column("tokens", sa.Integer(), nullable=False),
    sa.Column("panel_sessions", sa.Integer(), nullable=False),
    sa.Column("batches", sa.Integer(), nullable=False),
    sa.Column("digest", sa.CHAR(TOKEN_HASH_LENGTH), nullable=False),
    sa.Column("started_at", UtcDateTime(), nullable=False),
    sa.Column("updated_at", UtcDateTime(), nullable=False),
    sa.Column("finished_at", UtcDateTime(), nullable=True),
    # Of `memories`, those of the organization's team bank (an organization's purge; revision 0017).
    sa.Column("team_memories", sa.BigInteger(), nullable=False, server_default="0"),
    # Finds a subject's unfinished run, to resume it.
    sa.Index("purge_run_subject", "subject_id", "subject_kind", "finished_at"),
    **MYSQL_TABLE_OPTIONS,
)

#: One row (id 1) counting the batches that rewrote rows' search tokens (`memorybank encrypt`,
#: `keys rotate`, `reindex`), bumped first in each batch's transaction. While such a walk may run,
#: a search compares it before and after (adapters_mysql.rewrite_fence). No row yet reads as 0.
reindex_generation = sa.Table(
    "reindex_generation",
    metadata,
    sa.Column("id", sa.SmallInteger(), primary_key=True, autoincrement=False),
    sa.Column("generation", sa.BigInteger(), nullable=False),
    **MYSQL_TABLE_OPTIONS,
)

#: Each memory's vector for hybrid search (memorybank_search.hybrid), keyed by owner and memory, so it
#: shards by `user_id` like the memory tables and every read is one owner's. Written in the save's
#: transaction when an embedder is configured, deleted with the memory and by a purge; `model` says
#: which model wrote it (vectors of different models are never compared). `vector` holds
#: `Embedding.to_bytes()` (388 bytes for 384 dimensions), or on a sealed database that sealed
#: (`seal_state` names the key; NULL: plaintext).
memory_vector = sa.Table(
    "memory_vector",
    metadata,
    sa.Column("user_id", id_type(), primary_key=True),
    sa.Column("memory_id", id_type(), primary_key=True),
    sa.Column("model", sa.String(limits.ID_MAX_LENGTH), nullable=False),
    sa.Column("vector", sa.LargeBinary(), nullable=False),
    sa.Column("seal_state", sa.String(SEAL_STATE_LENGTH), nullable=True),
    **MYSQL_TABLE_OPTIONS,
)

#: Each memory's kept earlier versions (revision 0015), keyed by owner, memory and revision so a Spider head shards
#: it by `user_id` like the memory tables and every read is one owner's. `body` holds the version's content, tags,
#: contexts and retirement as one JSON text (`sealed_rows.RowCodec.revision_row`), sealed on a sealed database
#: (`seal_state`), so an old version is never plaintext and never searchable. Removed with its memory (delete,
#: "delete all", purge); the oldest beyond the setting `revisions_kept` go as newer ones come.
memory_revision = sa.Table(
    "memory_revision",
    metadata,
    sa.Column("user_id", id_type(), primary_key=True),
    sa.Column("memory_id", id_type(), primary_key=True),
    sa.Column("revision", sa.Integer(), primary_key=True, autoincrement=False),
    sa.Column("body", sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql"), nullable=False),
    sa.Column("written_at", UtcDateTime(), nullable=False),
    sa.Column("written_via", sa.String(DOOR_LENGTH), nullable=True),
    sa.Column("written_by", sa.String(limits.CREDENTIAL.max), nullable=True),
    sa.Column("seal_state", sa.String(SEAL_STATE_LENGTH), nullable=True),
    **MYSQL_TABLE_OPTIONS,
)

#: The tables this package owns, in creation order.
TABLES: tuple[sa.Table, ...] = (
    memory,
    memory_context,
    api_token,
    panel_credential,
    api_token_revocations,
    seal_key,
    memory_usage,
    memory_control,
    purge_run,
    reindex_generation,
    memory_vector,
    memory_revision,
)
