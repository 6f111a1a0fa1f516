"""The key ring: named 256-bit keys, one primary for sealing, one naming the blind-index key.

A key ring is a small JSON document, kept in a file (`--key-file`, `MEMORYBANK_KEY_FILE`) or in
an environment variable (`MEMORYBANK_KEYS`, for secret stores that inject variables):

    {"memorybank_key_ring": 1,
     "primary": "k5t2m8q0c",
     "index": "k5t2m8q0c",
     "keys": {"k5t2m8q0c": "<base64 of 32 random bytes>"}}

`primary` seals new values; every key in `keys` still opens values sealed under it. `index`
names the key the blind-index key is derived from (HKDF; see `adapters_crypto.sealer`); it
defaults to `primary`. Key ids are short, lowercase and random, so a sealed value can name its
key without saying anything about it.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import attrs

from memorybank_core import InvalidInputError

FORMAT_FIELD = "memorybank_key_ring"
FORMAT_VERSION = 1
KEY_BYTES = 32
#: What a key id looks like: it goes into every sealed value and every row's state column.
KEY_ID = re.compile(r"k[0-9a-z]{8}")
_KEY_ID_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
#: Read and written by the owner only.
FILE_MODE = 0o600
#: The most a file root owns may grant its group: read (a secret mounted for a group, as PostgreSQL allows).
_ROOT_GROUP_READ = 0o040


def _readonly(keys: Mapping[str, bytes]) -> Mapping[str, bytes]:
    return MappingProxyType(dict(keys))


@attrs.frozen(kw_only=True, repr=False)
class KeyRing:
    """Named keys, the primary one, and the one the blind index derives from. Never printed."""

    keys: Mapping[str, bytes] = attrs.field(converter=_readonly)
    primary: str
    index: str

    def __attrs_post_init__(self) -> None:
        for key_id, material in self.keys.items():
            if not KEY_ID.fullmatch(key_id):
                raise InvalidInputError("key-file", f"holds a key id {key_id!r} that is not k + 8 of [0-9a-z]")
            if len(material) != KEY_BYTES:
                raise InvalidInputError("key-file", f"key {key_id} must be {KEY_BYTES} bytes, not {len(material)}")
        for role in ("primary", "index"):
            if getattr(self, role) not in self.keys:
                raise InvalidInputError("key-file", f"names {role} key {getattr(self, role)!r}, which it does not hold")

    def __repr__(self) -> str:
        # Key material must never reach a log or a traceback.
        return f"KeyRing(key_ids={sorted(self.keys)}, primary={self.primary!r}, index={self.index!r})"

    def with_new_primary(self, *, new_index: bool = False) -> KeyRing:
        """This ring plus a fresh key that becomes primary (and the blind-index key too, if `new_index`).

        Keeping the index key means re-sealing never rewrites search tokens, so searches are
        undisturbed while `keys rotate` runs; a new index key re-tokenizes every row.
        """
        key_id = new_key_id(self.keys)
        keys = {**self.keys, key_id: secrets.token_bytes(KEY_BYTES)}
        return KeyRing(keys=keys, primary=key_id, index=key_id if new_index else self.index)

    def without(self, key_id: str) -> KeyRing:
        """This ring less `key_id`, which must be neither primary nor the index key.

        Raises:
            InvalidInputError: ("key") the key is not in the ring, or is still primary or the index key.
        """
        if key_id not in self.keys:
            raise InvalidInputError("key", f"{key_id} is not in the key ring")
        if key_id == self.index:
            raise InvalidInputError(
                "key",
                f"{key_id} is still the index key (every memory's search tokens are derived from it): move it with "
                "`memorybank keys add --new-index`, restart the servers, run `memorybank keys rotate`, then remove it",
            )
        if key_id == self.primary:
            raise InvalidInputError(
                "key",
                f"{key_id} is still the primary key: add a new one with `memorybank keys add`, restart the servers "
                "and run `memorybank keys rotate` first",
            )
        return KeyRing(keys={k: v for k, v in self.keys.items() if k != key_id}, primary=self.primary, index=self.index)

    def to_json(self) -> str:
        """The ring as the JSON document `parse_key_ring` reads."""
        document = {
            FORMAT_FIELD: FORMAT_VERSION,
            "primary": self.primary,
            "index": self.index,
            "keys": {key_id: base64.b64encode(material).decode("ascii") for key_id, material in self.keys.items()},
        }
        return json.dumps(document, indent=2, sort_keys=True) + "\n"


def new_key_id(taken: Mapping[str, bytes] | None = None) -> str:
    """A fresh random key id, not among `taken`."""
    while True:
        key_id = "k" + "".join(secrets.choice(_KEY_ID_ALPHABET) for _ in range(8))
        if not taken or key_id not in taken:
            return key_id


def new_key_ring() -> KeyRing:
    """A ring of one fresh random key, primary and index."""
    key_id = new_key_id()
    return KeyRing(keys={key_id: secrets.token_bytes(KEY_BYTES)}, primary=key_id, index=key_id)


def parse_key_ring(text: str, *, origin: str) -> KeyRing:
    """The ring in a JSON document; `origin` names where it came from in error messages (never its content).

    Raises:
        InvalidInputError: ("key-file") the document is not a well-formed key ring.
    """
    try:
        document: Any = json.loads(text)
    except ValueError as error:
        raise InvalidInputError("key-file", f"{origin} is not a JSON key ring") from error
    if not isinstance(document, dict) or document.get(FORMAT_FIELD) != FORMAT_VERSION:
        raise InvalidInputError("key-file", f"{origin} is not a memorybank key ring (version {FORMAT_VERSION})")
    keys = document.get("keys")
    primary = document.get("primary")
    if not isinstance(keys, dict) or not keys or not isinstance(primary, str):
        raise InvalidInputError("key-file", f"{origin} must hold `keys` (at least one) and `primary`")
    index = document.get("index", primary)
    if not isinstance(index, str):
        raise InvalidInputError("key-file", f"{origin} has an `index` that is not a key id")
    material: dict[str, bytes] = {}
    for key_id, encoded in keys.items():
        try:
            material[key_id] = base64.b64decode(encoded, validate=True) if isinstance(encoded, str) else b""
        except (binascii.Error, ValueError) as error:
            raise InvalidInputError("key-file", f"{origin}: key {key_id} is not base64") from error
    try:
        return KeyRing(keys=material, primary=primary, index=index)
    except InvalidInputError as error:
        reasons = "; ".join(problem.message for problem in error.problems)
        raise InvalidInputError("key-file", f"{origin} {reasons}") from error


def loose_permissions(mode: int, owner_uid: int) -> bool:
    """True when a key file of `mode` owned by `owner_uid` lets anyone but its owner at it.

    Any permission for others is too much; so is any for the group, except read on a file root
    owns (how a container runtime mounts a secret for a group: PostgreSQL allows its keys the same).
    """
    group = mode & stat.S_IRWXG
    return bool(mode & stat.S_IRWXO) or (group != 0 and not (owner_uid == 0 and group == _ROOT_GROUP_READ))


def load_key_ring(path: Path) -> KeyRing:
    """The ring in the file at `path`, which nobody but its owner may read or write.

    Refused rather than warned about: a warning scrolls past in a log, while the file gives anyone
    who can read it every sealed memory (ssh refuses loose private keys for the same reason).

    Raises:
        InvalidInputError: ("key-file") the file cannot be read, others may read or write it, or it
            is not a key ring.
    """
    try:
        with path.open("rb") as file:
            status = os.fstat(file.fileno())
            raw = file.read()
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidInputError(
            "key-file", f"cannot read {path}: {getattr(error, 'strerror', None) or error}"
        ) from error
    mode = stat.S_IMODE(status.st_mode)
    if loose_permissions(mode, status.st_uid):
        raise InvalidInputError(
            "key-file",
            f"{path} may be read or changed by other users (mode {mode:04o}): run `chmod 600 {path}`; a key file "
            "must be its owner's alone (docs/security.md)",
        )
    return parse_key_ring(text, origin=str(path))


def write_key_ring(path: Path, ring: KeyRing, *, replace: bool = False) -> None:
    """Write `ring` to `path`, readable by its owner only (mode 0600).

    A new file is created exclusively (an existing one is never overwritten unless `replace`);
    a replacement is written beside it and renamed over it, so a crash leaves the old or the new ring.

    Raises:
        FileExistsError: `path` exists and `replace` is False.
        OSError: the file cannot be written.
    """
    target = path.with_name(path.name + ".new") if replace else path
    descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(ring.to_json())
            file.flush()
            os.fsync(file.fileno())
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    if replace:
        os.replace(target, path)
