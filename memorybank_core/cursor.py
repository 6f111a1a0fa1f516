"""Opaque list cursors: a position in the newest-first listing, encoded for the wire.

Keyset positions (created_at, id) rather than offsets, so saves and deletes
between pages never make a page skip or repeat a memory.
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import UTC, datetime

from memorybank_core import ids, limits
from memorybank_core.errors import InvalidInputError
from memorybank_core.ports import ListPosition

_INVALID = "is not a cursor returned by this list"


def encode_cursor(position: ListPosition) -> str:
    """The wire form of `position`."""
    raw = json.dumps([position.created_at.isoformat(), position.memory_id], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> ListPosition:
    """Parse a cursor produced by `encode_cursor`.

    Raises:
        InvalidInputError: on anything else ("cursor").
    """
    if not cursor or len(cursor) > limits.CURSOR_MAX_LENGTH:
        raise InvalidInputError("cursor", _INVALID)
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created, memory_id = json.loads(raw)
        created_at = datetime.fromisoformat(created)
    except (binascii.Error, ValueError, TypeError) as error:
        raise InvalidInputError("cursor", _INVALID) from error
    if created_at.tzinfo is None or not ids.is_id(memory_id, prefix=ids.MEMORY_PREFIX):
        raise InvalidInputError("cursor", _INVALID)
    return ListPosition(created_at=created_at.astimezone(UTC), memory_id=memory_id)
