"""`AesGcmSealer`: the `Sealer` port with AES-256-GCM, and the blind index with HMAC-SHA256.

A sealed value is ASCII text, so it fits the same columns as the plaintext it replaces:

    1.<key id>.<base64url(12-byte nonce || ciphertext || 16-byte tag)>

The associated data binds the value to its format version, its key id and its place
(table, column, row id, owner): opening it anywhere else fails the GCM tag check. Nonces are
random (96 bits) per value; at the write volumes of a memory bank (far below 2^32 values per
key) random nonces stay within NIST SP 800-38D's bound, and `keys add` + `keys rotate`
retire a key long before.

The blind-index key is derived from a ring key with HKDF-SHA256 (its own `info` label), so the
same material never serves as both an AES key and an HMAC key. So is the key that authenticates
a row's tokens as a whole (its own label too).

Blind tokens carry a stamp: `s2` + 16 base32 characters (formats 2 and 3); format 1, the
original, is the 16 characters alone and has no authenticator. Format 3 (written now) stores a
row's tokens sorted, repeats kept, so the stored form says which terms a text holds and how
often, never in which order; its authenticator is bound to format 3 and to that sorted form.
Format 3 changes how a row stores its tokens, not the tokens: format-2 rows (word order) share
its posting lists, so while `keys rotate` rewrites them searches rank exactly as before and after.
Rows of formats 1 and 2 are read until then; `memory.seal_state` names each row's format.
"""

from __future__ import annotations

import base64
import binascii
import collections
import functools
import hashlib
import hmac
import itertools
import operator
import os
from collections.abc import Collection, Mapping, Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from adapters_crypto.keyring import KEY_ID, KeyRing
from memorybank_core.sealing import BlindIndex, BrokenSealError, SealBinding, Sealer, UnknownSealKeyError

FORMAT_VERSION = "1"
NONCE_BYTES = 12
_INDEX_INFO = b"memorybank/blind-index/1"
_DOCUMENT_MAC_INFO = b"memorybank/search-mac/1"
_DOCUMENT_MAC_PREFIX = b"memorybank/search-terms\x00"
#: From format 3 on, the format is part of the authenticated message: a row cannot be relabelled
#: as another format (say, back to word order) and still verify.
_FORMATTED_MAC_PREFIX = b"memorybank/search-terms/"
#: The token format written now, and the stamp each format's tokens start with (1: none).
TOKEN_FORMAT = 3
TOKEN_STAMPS = {1: "", 2: "s2", 3: "s2"}
#: The first format whose rows store their tokens sorted, so word order is not kept.
SORTED_FORMAT = 3
_AAD_PREFIX = b"memorybank/seal/"
#: Token body: 80 bits of HMAC, exactly 16 lowercase base32 characters (`[a-z2-7]`, no padding), after the stamp.
#: Within InnoDB's 3..84 token sizes, never a stopword, one word to every tokenizer; two
#: (owner, term) pairs collide with negligible odds.
TOKEN_BYTES = 10
_TOKEN_CACHE = 1 << 16
#: Every two lowercase base32 digits (RFC 4648's alphabet), in order of their 10-bit value.
_BASE32_DIGITS = "abcdefghijklmnopqrstuvwxyz234567"
_BASE32_PAIRS = [high + low for high in _BASE32_DIGITS for low in _BASE32_DIGITS]


def token_text(body: bytes) -> str:
    """`base64.b32encode(body).decode("ascii").lower()` for the `TOKEN_BYTES` (80 bits) of a token, ten bits a step:
    a save of CJK text can bring thousands of terms its worker has not hashed yet, and `b32encode` cost each 2 µs."""
    bits = int.from_bytes(body, "big")
    pairs = _BASE32_PAIRS
    return (
        pairs[bits >> 70]
        + pairs[bits >> 60 & 1023]
        + pairs[bits >> 50 & 1023]
        + pairs[bits >> 40 & 1023]
        + pairs[bits >> 30 & 1023]
        + pairs[bits >> 20 & 1023]
        + pairs[bits >> 10 & 1023]
        + pairs[bits & 1023]
    )


def derive_index_key(material: bytes) -> bytes:
    """The 256-bit blind-index key derived from ring key `material` (HKDF-SHA256, no salt, own label)."""
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INDEX_INFO).derive(material)


def derive_document_mac_key(material: bytes) -> bytes:
    """The 256-bit key that authenticates a row's tokens, derived from ring key `material` (HKDF, own label)."""
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_DOCUMENT_MAC_INFO).derive(material)


class KeyedBlindIndex(BlindIndex):
    """Tokens = stamp + base32(HMAC-SHA256(index key, owner NUL term)[:10]): one posting list per (owner, term).

    A row stores its tokens sorted (format 3 on), authenticated as a whole by HMAC-SHA256 under a
    second derived key over (format, table, column, row id, owner, token count, tokens):
    `<format>.<base64url of 32 bytes>`.
    """

    def __init__(self, key_id: str, index_key: bytes, document_key: bytes, *, token_format: int = TOKEN_FORMAT) -> None:
        self._key_id = key_id
        self._format = token_format
        self._stamp = TOKEN_STAMPS[token_format]
        self._mac = hmac.new(index_key, digestmod=hashlib.sha256)
        self._document_key = document_key
        # Bound per instance: a token is a pure function of (owner, term) under this key.
        self._cached = functools.lru_cache(maxsize=_TOKEN_CACHE)(self._compute)

    @property
    def key_id(self) -> str:
        return self._key_id

    @property
    def token_format(self) -> int:
        return self._format

    def token(self, user_id: str, term: str) -> str:
        return self._cached(user_id, term)

    def document_terms(self, user_id: str, terms: Sequence[str]) -> str:
        # Each distinct term is hashed once; the tokens in order (or sorted) are then built in C.
        tokens = {term: self._cached(user_id, term) for term in dict.fromkeys(terms)}
        if self._format < SORTED_FORMAT:
            return " ".join(map(tokens.__getitem__, terms))
        counts = collections.Counter(terms)
        return " ".join(
            itertools.chain.from_iterable(itertools.repeat(token, counts[term]) for term, token in _by_token(tokens))
        )

    def _compute(self, user_id: str, term: str) -> str:
        mac = self._mac.copy()
        # NUL never occurs in a TypeID, so (owner, term) pairs cannot run into each other.
        mac.update(user_id.encode("utf-8") + b"\x00" + term.encode("utf-8"))
        return self._stamp + token_text(mac.digest()[:TOKEN_BYTES])

    def document_mac(self, binding: SealBinding, search_terms: str, doc_length: int) -> str:
        if self._format < 2:
            raise BrokenSealError("token format 1 carries no authenticator", key_id=self._key_id)
        digest = self._document_digest(binding, search_terms, doc_length)
        return f"{self._format}." + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")

    def verifies(self, mac: str, binding: SealBinding, search_terms: str, doc_length: int) -> bool:
        if self._format < 2:
            return False
        if self._format >= SORTED_FORMAT and not _sorted(search_terms):
            return False  # never written so: only the sorted form is this format's
        return hmac.compare_digest(mac, self.document_mac(binding, search_terms, doc_length))

    def _document_digest(self, binding: SealBinding, search_terms: str, doc_length: int) -> bytes:
        # Every field but the last is NUL-free (TypeIDs, fixed names, a number): the message is unambiguous.
        fields = (binding.table, binding.column, binding.row_id, binding.user_id, str(doc_length), search_terms)
        prefix = _DOCUMENT_MAC_PREFIX
        if self._format >= SORTED_FORMAT:
            prefix = _FORMATTED_MAC_PREFIX + str(self._format).encode("ascii") + b"\x00"
        message = prefix + "\x00".join(fields).encode("utf-8")
        return hmac.digest(self._document_key, message, "sha256")


def _by_token(tokens: dict[str, str]) -> list[tuple[str, str]]:
    """(term, token) pairs in the order of their tokens."""
    return sorted(tokens.items(), key=operator.itemgetter(1))


def _sorted(search_terms: str) -> bool:
    tokens = search_terms.split(" ")
    # Sorting a sorted list is one linear pass in C (timsort finds one run).
    return tokens == sorted(tokens)


def _associated_data(key_id: str, binding: SealBinding) -> bytes:
    parts = (FORMAT_VERSION, key_id, binding.table, binding.column, binding.row_id, binding.user_id)
    return _AAD_PREFIX + "\x00".join(parts).encode("utf-8")


class AesGcmSealer(Sealer):
    """Seals with the ring's primary key, opens with any ring key; see the module docstring for the format."""

    def __init__(self, ring: KeyRing) -> None:
        self._ring = ring
        self._ciphers: Mapping[str, AESGCM] = {key_id: AESGCM(material) for key_id, material in ring.keys.items()}
        self._indexes: Mapping[tuple[str, int], KeyedBlindIndex] = {
            (key_id, token_format): KeyedBlindIndex(
                key_id, derive_index_key(material), derive_document_mac_key(material), token_format=token_format
            )
            for key_id, material in ring.keys.items()
            for token_format in TOKEN_STAMPS
        }

    def __repr__(self) -> str:
        return f"AesGcmSealer({self._ring!r})"

    @property
    def primary_key_id(self) -> str:
        return self._ring.primary

    @property
    def key_ids(self) -> Collection[str]:
        return frozenset(self._ring.keys)

    @property
    def index(self) -> BlindIndex:
        return self._indexes[(self._ring.index, TOKEN_FORMAT)]

    def index_for(self, key_id: str, token_format: int) -> BlindIndex | None:
        return self._indexes.get((key_id, token_format))

    def seal(self, plaintext: str, binding: SealBinding) -> str:
        key_id = self._ring.primary
        nonce = os.urandom(NONCE_BYTES)
        body = self._ciphers[key_id].encrypt(nonce, plaintext.encode("utf-8"), _associated_data(key_id, binding))
        encoded = base64.urlsafe_b64encode(nonce + body).rstrip(b"=").decode("ascii")
        return f"{FORMAT_VERSION}.{key_id}.{encoded}"

    def open(self, sealed: str, binding: SealBinding) -> str:
        key_id, payload = self._split(sealed)
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            raise UnknownSealKeyError("sealed under a key the ring does not hold", key_id=key_id)
        if len(payload) < NONCE_BYTES + 16:
            raise BrokenSealError("sealed value is truncated", key_id=key_id)
        try:
            plaintext = cipher.decrypt(payload[:NONCE_BYTES], payload[NONCE_BYTES:], _associated_data(key_id, binding))
        except InvalidTag as error:
            raise BrokenSealError("sealed value does not open here (tampered or moved)", key_id=key_id) from error
        try:
            return plaintext.decode("utf-8")
        except UnicodeDecodeError as error:  # authenticated, so only a bug could get here
            raise BrokenSealError("sealed value is not text", key_id=key_id) from error

    def key_id_of(self, sealed: str) -> str:
        return self._split(sealed)[0]

    @staticmethod
    def _split(sealed: str) -> tuple[str, bytes]:
        version, _, rest = sealed.partition(".")
        key_id, _, encoded = rest.partition(".")
        if version != FORMAT_VERSION or not KEY_ID.fullmatch(key_id) or not encoded:
            raise BrokenSealError("not a sealed value")
        try:
            payload = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
        except (binascii.Error, ValueError) as error:
            raise BrokenSealError("sealed value is not base64", key_id=key_id) from error
        return key_id, payload
