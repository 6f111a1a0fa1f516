"""TypeID identifiers, wire-compatible with the reference host.

Prefixes are persisted in every row: never change them.
"""

from __future__ import annotations

from typeid import TypeID
from typeid.core.errors import TypeIDException

from memorybank_core.errors import InvalidInputError

MEMORY_PREFIX = "mem"
CONTEXT_PREFIX = "mctx"
USER_PREFIX = "usr"
ORGANIZATION_PREFIX = "org"
TOKEN_PREFIX = "tok"  # noqa: S105 - an id prefix, not a secret
PANEL_CREDENTIAL_PREFIX = "pnl"
PURGE_RUN_PREFIX = "prg"

#: `prefix_` + 26 base32 characters; the longest prefix is 4, so ids stay far below ID_MAX_LENGTH.
_SUFFIX_LENGTH = 26


def new_id(prefix: str) -> str:
    """A fresh, time-sortable (UUIDv7) TypeID with this prefix."""
    return str(TypeID(prefix=prefix))


def parse_id(value: object, *, prefix: str, field: str) -> str:
    """Return `value` if it is a well-formed TypeID with `prefix`.

    Raises:
        InvalidInputError: naming `field`, for anything else.
    """
    expected = f"must be a TypeID of the form {prefix}_ followed by {_SUFFIX_LENGTH} base32 characters"
    if not isinstance(value, str) or len(value) != len(prefix) + 1 + _SUFFIX_LENGTH:
        raise InvalidInputError(field, expected)
    try:
        parsed = TypeID.from_string(value)
    except (TypeIDException, ValueError) as error:
        raise InvalidInputError(field, expected) from error
    if parsed.prefix != prefix:
        raise InvalidInputError(field, expected)
    return value


def is_id(value: object, *, prefix: str) -> bool:
    """True when `value` is a well-formed TypeID with `prefix`."""
    try:
        parse_id(value, prefix=prefix, field="id")
    except InvalidInputError:
        return False
    return True
