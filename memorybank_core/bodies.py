"""Request bodies as a facade hands them to a use case: read by the core, after its gate.

A facade never decodes a body itself. It hands the use case a `Body` — the bytes it received
(`JsonText`), a value its own protocol already parsed (`JsonValue`: the MCP rail's JSON-RPC
arguments), or the reason it could not take the bytes at all (`RefusedBody`: not JSON, too large)
— and the use case reads it only once the caller's scope and the gate let the request through, so
a caller whose memory is switched off learns nothing from the body. A host calling the bank from
its own code hands the use case a value instead (`SaveRequest`, `DeleteAll`).

`decode_json` reads a request body with the one strict JSON decoder (`memorybank_core.strict_json`):
every facade's body goes through it.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod

import attrs

from memorybank_core.errors import InvalidInputError, MemoryBankError
from memorybank_core.strict_json import RepeatedKeyError, strict_json


class BodyTooLargeError(MemoryBankError):
    """The request body is over the facade's byte cap; nothing was read past it."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        super().__init__(f"the request body must be at most {max_bytes} bytes")


class UnsupportedMediaTypeError(MemoryBankError):
    """The request body is not declared as JSON."""

    def __init__(self) -> None:
        super().__init__("the request body must be declared as application/json")


def decode_json(raw: bytes) -> object:
    """A request body's JSON value, by the one strict decoder (`strict_json`: UTF-8, no NaN or Infinity, no
    repeated key), any nesting depth refused cleanly.

    Raises:
        InvalidInputError: ("body") for anything that is not such JSON.
    """
    try:
        return strict_json(raw)
    except RepeatedKeyError as error:
        raise InvalidInputError("body", str(error)) from error
    except (ValueError, RecursionError) as error:
        # ValueError covers bad UTF-8, bad syntax and over-long integers; RecursionError absurd nesting.
        raise InvalidInputError("body", f"must be a UTF-8 encoded JSON object{where_json_broke(error)}") from error


def where_json_broke(error: BaseException) -> str:
    """` (Expecting ':' delimiter at line 1, column 9)`: what the decoder says and where, never the text itself."""
    if isinstance(error, json.JSONDecodeError):
        return f" ({error.msg} at line {error.lineno}, column {error.colno})"
    if isinstance(error, UnicodeDecodeError):
        return f" (byte {error.start} is not UTF-8)"
    return ""


class Body(ABC):
    """A request body a facade received, for the use case to read after its gate."""

    @abstractmethod
    def value(self) -> object:
        """The body's JSON value.

        Raises:
            InvalidInputError: ("body") the bytes are not JSON.
            UnsupportedMediaTypeError, BodyTooLargeError: the facade could not take the bytes (`RefusedBody`).
        """


@attrs.frozen
class JsonText(Body):
    """A body as the bytes that were sent, declared as JSON and within the facade's cap."""

    data: bytes

    def value(self) -> object:
        """The decoded bytes (`decode_json`)."""
        return decode_json(self.data)


@attrs.frozen
class JsonValue(Body):
    """A body its facade's own protocol already decoded (the MCP rail's JSON-RPC arguments): JSON data as is."""

    data: object

    def value(self) -> object:
        """The data, unchanged."""
        return self.data


@attrs.frozen
class RefusedBody(Body):
    """A body the facade would not take (not declared as JSON, or over its cap): reported after the gate."""

    error: UnsupportedMediaTypeError | BodyTooLargeError

    def value(self) -> object:
        """Never a value: raises the facade's reason."""
        raise self.error
