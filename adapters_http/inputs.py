"""Reading untrusted request input: a size-capped JSON body and single-valued query parameters.

Only transport concerns live here (bytes, media type, the byte cap, repeated parameters): the
body goes to the core undecoded (`memorybank_core.Body`), query values as the text received, and
the core decodes and bounds them after its gate, naming the field in its error.
"""

from __future__ import annotations

import attrs
from starlette.requests import Request

from memorybank_core.bodies import Body, BodyTooLargeError, JsonText, RefusedBody, UnsupportedMediaTypeError
from memorybank_core.errors import InvalidInputError

#: 1 MiB. The largest valid save is about 0.31 MB as raw UTF-8 and about 0.94 MB even if every
#: character is sent as a `\\uXXXX` surrogate-pair escape (a test pins this), so only abuse hits the cap.
MAX_BODY_BYTES = 1024 * 1024


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
    max_bytes: int = MAX_BODY_BYTES
    """The cap it was read under."""

    def as_body(self) -> Body:
        """The body for the core to read after its gate: the bytes, or why they were not taken."""
        if not is_json_media_type(self.content_type):
            return RefusedBody(UnsupportedMediaTypeError())
        if self.too_large:
            return RefusedBody(BodyTooLargeError(self.max_bytes))
        return JsonText(self.data)


async def receive_body(request: Request, *, max_bytes: int = MAX_BODY_BYTES) -> ReceivedBody:
    """The request's body, read at most `max_bytes` (never buffered unbounded), judged later by `json_body`.

    It is received before the caller is authenticated, so that authentication and the use case
    run in one thread-pool call; nothing about it is reported until the caller is known. A body
    that is not declared as JSON, or declares more than `max_bytes`, is not read at all.
    """
    content_type = request.headers.get("content-type")
    if not is_json_media_type(content_type):
        return ReceivedBody(content_type=content_type, data=b"", too_large=False, max_bytes=max_bytes)
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        return ReceivedBody(content_type=content_type, data=b"", too_large=True, max_bytes=max_bytes)
    chunks: list[bytes] = []
    received = 0
    async for chunk in request.stream():
        received += len(chunk)
        if received > max_bytes:
            return ReceivedBody(content_type=content_type, data=b"", too_large=True, max_bytes=max_bytes)
        chunks.append(chunk)
    return ReceivedBody(content_type=content_type, data=b"".join(chunks), too_large=False, max_bytes=max_bytes)


def query_value(request: Request, name: str) -> str | None:
    """The one value of query parameter `name`, or None when absent.

    Raises:
        InvalidInputError: (`name`) the parameter is repeated.
    """
    values = request.query_params.getlist(name)
    if len(values) > 1:
        raise InvalidInputError(name, "must be given at most once")
    return values[0] if values else None
