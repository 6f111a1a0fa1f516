"""The one decoder of untrusted JSON: REST bodies, the MCP rail's messages and arguments, import lines.

Standard library only, so every entry point (the HTTP facade, the rail, `memorybank import`) judges JSON alike.
"""

from __future__ import annotations

import json


class RepeatedKeyError(ValueError):
    """A JSON object names the same key twice."""

    def __init__(self) -> None:
        super().__init__("must not name the same key twice in one object")


def strict_json(raw: bytes | str) -> object:
    """The one decoder of untrusted JSON (REST bodies, the MCP rail's messages and arguments, import lines).

    UTF-8, no NaN or Infinity, and no object naming a key twice: `{"confirm": "nope", "confirm": "delete all"}` is
    refused rather than read as its last value, so a proxy or a log that reads the first judges the same request.

    Raises:
        RepeatedKeyError: (a ValueError) an object repeats a key.
        ValueError: bad UTF-8 (a UnicodeDecodeError), bad syntax (a JSONDecodeError), NaN, an over-long integer.
        RecursionError: absurd nesting.
    """
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    return json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_object)


def _object(pairs: list[tuple[str, object]]) -> dict[str, object]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise RepeatedKeyError
    return found


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")
