"""Reading untrusted request input: a size-capped JSON body and single-valued query parameters.

Only transport concerns live here (bytes, media type, JSON syntax, integer syntax);
every bound is checked by the core, which names the field in its error.
"""

from __future__ import annotations

import json
import re

import attrs
from starlette.requests import Request

from adapters_http.refusals import BodyTooLargeError, UnsupportedMediaTypeError
from memorybank_core.errors import InvalidInputError
from memorybank_core.ports import UndecodedBody
from memorybank_core.strict_json import RepeatedKeyError, strict_json

#: 1 MiB. The largest valid save is about 0.31 MB as raw UTF-8 and about 0.94 MB even if every
#: character is sent as a `\\uXXXX` surrogate-pair escape (a test pins this), so only abuse hits the cap.
MAX_BODY_BYTES = 1024 * 1024

# Nine digits fit any page size; longer numerals are out of range anyway and go to the core as text.
_INTEGER = re.compile(r"-?[0-9]{1,9}")


def is_json_media_type(content_type: str | None) -> bool:
    """True for `application/json` and `application/*+json`, parameters (charset) allowed."""
    if content_type is None:
        return False
    media_type = content_type.split(";", 1)[0].strip().lower()
    return media_type == "application/json" or (media_type.startswith("application/") and media_type.endswith("+json"))


@attrs.frozen
class ReceivedBody:
    """A request body as received before the caller is known: read, or not read and why."""

    content_type: str | None
    data: bytes
    """The bytes sent; empty when they were not read (not JSON, or over the cap)."""
    too_large: bool
    """Content-Length or the bytes actually sent exceeded the cap; reading stopped there."""


async def receive_body(request: Request, *, max_bytes: int = MAX_BODY_BYTES) -> ReceivedBody:
    """The request's body, read at most `max_bytes` (never buffered unbounded), judged later by `json_body`.

    It is received before the caller is authenticated, so that authentication and the use case
    run in one thread-pool call; nothing about it is reported until the caller is known. A body
    that is not declared as JSON, or declares more than `max_bytes`, is not read at all.
    """
    content_type = request.headers.get("content-type")
    if not is_json_media_type(content_type):
        return ReceivedBody(content_type=content_type, data=b"", too_large=False)
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        return ReceivedBody(content_type=content_type, data=b"", too_large=True)
    chunks: list[bytes] = []
    received = 0
    async for chunk in request.stream():
        received += len(chunk)
        if received > max_bytes:
            return ReceivedBody(content_type=content_type, data=b"", too_large=True)
        chunks.append(chunk)
    return ReceivedBody(content_type=content_type, data=b"".join(chunks), too_large=False)


@attrs.frozen
class UndecodedJsonBody(UndecodedBody):
    """A received body for the core to decode after its gate (`json_body`, with its errors)."""

    body: ReceivedBody
    max_bytes: int = MAX_BODY_BYTES

    def decoded(self) -> object:
        return json_body(self.body, max_bytes=self.max_bytes)


def json_body(body: ReceivedBody, *, max_bytes: int = MAX_BODY_BYTES) -> object:
    """The JSON value of a received body.

    Raises:
        UnsupportedMediaTypeError: the body is not declared as JSON.
        BodyTooLargeError: Content-Length or the bytes actually sent exceed `max_bytes`.
        InvalidInputError: ("body") the bytes are not UTF-8 JSON.
    """
    if not is_json_media_type(body.content_type):
        raise UnsupportedMediaTypeError
    if body.too_large:
        raise BodyTooLargeError(max_bytes)
    return parse_json(body.data)


def parse_json(raw: bytes) -> object:
    """Decode a request body with `strict_json`.

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


def query_value(request: Request, name: str) -> str | None:
    """The one value of query parameter `name`, or None when absent.

    Raises:
        InvalidInputError: (`name`) the parameter is repeated.
    """
    values = request.query_params.getlist(name)
    if len(values) > 1:
        raise InvalidInputError(name, "must be given at most once")
    return values[0] if values else None


def integer_or_text(value: str | None) -> int | str | None:
    """An integer literal as an int; anything else unchanged, for the core to reject with its bound."""
    if value is not None and _INTEGER.fullmatch(value):
        return int(value)
    return value
