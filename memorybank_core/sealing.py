"""The sealing port: how storage encrypts user text at rest without knowing the cipher.

Storage seals each stored user text (content, tags, snippets, citation ids) before writing it
and opens it after reading it. A sealed value is bound to the place it was written — table,
column, row id and owner — so a value copied into another row, or another user's row, does not
open. The blind index turns an owner's search terms into keyed tokens, so a full-text index can
still keep one posting list per (owner, term) without holding the words.

Each row's tokens carry an authenticator under the index key, bound to the row's place, so tokens
moved between rows or owners are detected and the row fails closed like a tampered sealed value.
A row's tokens are stored in an order that depends only on which terms occur how often (sorted),
so the database does not keep the order of the words either.

The core defines only the shapes; `adapters_crypto` implements them (AES-256-GCM, HMAC-SHA256).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Collection, Sequence
from typing import Protocol

import attrs


@attrs.frozen(kw_only=True)
class SealBinding:
    """Where a sealed value lives: it opens only under this same binding."""

    table: str
    column: str
    row_id: str
    user_id: str


class BrokenSealError(ValueError):
    """A sealed value that does not open: tampered, moved, truncated, or under a key the ring lacks."""

    def __init__(self, reason: str, *, key_id: str | None = None) -> None:
        super().__init__(reason)
        self.key_id = key_id


class UnknownSealKeyError(BrokenSealError):
    """A value sealed under a key the ring does not hold: the ring is older than the database's (or a key went)."""


class BlindIndex(Protocol):
    """Keyed search tokens: the same (owner, term) always gives the same token under one key and format.

    A row's tokens are also authenticated as a whole (`document_mac`): bound to the row's place
    and length, so tokens swapped between rows or users are detected on read, not merely unmatched.
    """

    @property
    @abstractmethod
    def key_id(self) -> str:
        """The id of the ring key this index key is derived from."""

    @property
    @abstractmethod
    def token_format(self) -> int:
        """The token format version this index writes (stamped into each token; 1: the unstamped original)."""

    @abstractmethod
    def token(self, user_id: str, term: str) -> str:
        """The token stored and searched for `term` of `user_id`: `[0-9a-z]`, fixed length."""

    @abstractmethod
    def document_terms(self, user_id: str, terms: Sequence[str]) -> str:
        """The stored search tokens of a row whose analyzed text is `terms`: one token per term, space-separated.

        From token format 3 on they are sorted, repeats kept: the stored form depends only on which
        terms occur how often (all ranking needs), never on their order in the text.
        """

    @abstractmethod
    def document_mac(self, binding: SealBinding, search_terms: str, doc_length: int) -> str:
        """An authenticator of a row's tokens and their count, bound to the row's place (`binding`).

        Raises:
            BrokenSealError: this index's token format carries no authenticator (format 1).
        """

    @abstractmethod
    def verifies(self, mac: str, binding: SealBinding, search_terms: str, doc_length: int) -> bool:
        """True when `mac` is this index's authenticator of exactly these tokens at exactly this place."""


class Sealer(Protocol):
    """Seals and opens stored text with a key ring; one key is primary for writes."""

    @property
    @abstractmethod
    def primary_key_id(self) -> str:
        """The key new values are sealed with."""

    @property
    @abstractmethod
    def key_ids(self) -> Collection[str]:
        """Every key this ring can open with."""

    @property
    @abstractmethod
    def index(self) -> BlindIndex:
        """The blind index new search documents are written with."""

    @abstractmethod
    def index_for(self, key_id: str, token_format: int) -> BlindIndex | None:
        """The blind index of `token_format` derived from ring key `key_id`; None if the ring lacks either."""

    @abstractmethod
    def seal(self, plaintext: str, binding: SealBinding) -> str:
        """`plaintext` sealed under the primary key and bound to `binding`; a fresh nonce each time."""

    @abstractmethod
    def open(self, sealed: str, binding: SealBinding) -> str:
        """The plaintext of `sealed`, if it was sealed under this ring with this exact `binding`.

        Raises:
            BrokenSealError: the value does not open (tampered, moved, or its key is not in the ring).
        """

    @abstractmethod
    def key_id_of(self, sealed: str) -> str:
        """The key id a sealed value names (not proof that it opens).

        Raises:
            BrokenSealError: the value is not in the sealed format.
        """
