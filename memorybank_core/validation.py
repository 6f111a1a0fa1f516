"""Field checks shared by the entities and the request parsers, so each rule is written once."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import attrs

from memorybank_core.errors import InvalidInputError
from memorybank_core.limits import CountBound, TextBound

#: Characters that show nothing on their own, as a regex character-class body (Python and ECMA
#: alike): the soft hyphen, zero-width spaces and joiners, bidi and other format controls, the BOM,
#: variation selectors and Hangul fillers. A text of only these and whitespace is blank.
INVISIBLE_CHARACTERS = (
    r"\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    r"\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb"
)
_BLANK = re.compile(rf"[\s{INVISIBLE_CHARACTERS}]*")


def check_characters(text: str, *, path: str) -> None:
    """Reject the two things no storage backend round-trips: NUL and lone surrogates.

    Raises:
        InvalidInputError: naming `path`.
    """
    if "\x00" in text:
        raise InvalidInputError(path, "must not contain the NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InvalidInputError(path, "must be valid Unicode (it holds a lone surrogate)") from error


def check_length(text: str, *, path: str, bound: TextBound) -> None:
    """Raises InvalidInputError naming `path` when `text` is outside `bound`."""
    if not bound.min <= len(text) <= bound.max:
        raise InvalidInputError(path, bound.describe())


def clean_text(value: object, *, path: str, bound: TextBound) -> str:
    """Trim surrounding whitespace from a client string and check it against `bound`.

    Raises:
        InvalidInputError: naming `path` and the bound; also for a text of invisible characters
            only (`"\u200b"`, a BOM), refused like a blank one.
    """
    if not isinstance(value, str):
        raise InvalidInputError(path, f"must be a string of {bound.min} to {bound.max} characters")
    text = value.strip()
    check_characters(text, path=path)
    check_length(text, path=path, bound=bound)
    if _BLANK.fullmatch(text):
        raise InvalidInputError(
            path, "must hold a visible character, not only invisible ones such as zero-width spaces"
        )
    return text


#: Nine digits fit any count; a longer numeral is out of range anyway and refused with the bound.
_INTEGER_TEXT = re.compile(r"-?[0-9]{1,9}")


def clean_count(value: object, *, path: str, bound: CountBound) -> int:
    """Return `value` (or the bound's default for None) if it is an int within `bound`.

    Raises:
        InvalidInputError: naming `path` and the bound; out-of-range values are rejected, not clamped.
    """
    if value is None:
        return bound.default
    if isinstance(value, bool) or not isinstance(value, int) or not bound.min <= value <= bound.max:
        raise InvalidInputError(path, bound.describe())
    return value


def clean_text_count(value: int | str | None, *, path: str, bound: CountBound) -> int:
    """`clean_count`, where a `str` is a facade's text as received (a query parameter): a decimal integer
    in it counts as that integer, anything else is refused with the bound, as a wrong value is.

    Raises:
        InvalidInputError: naming `path` and the bound.
    """
    if isinstance(value, str):
        if not _INTEGER_TEXT.fullmatch(value):
            raise InvalidInputError(path, bound.describe())
        return clean_count(int(value), path=path, bound=bound)
    return clean_count(value, path=path, bound=bound)


def bounded_text(bound: TextBound) -> Any:
    """An attrs validator: the attribute is a str of stored form within `bound`."""

    def validate(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if not isinstance(value, str):
            raise InvalidInputError(attribute.name, "must be a string")
        check_characters(value, path=attribute.name)
        check_length(value, path=attribute.name, bound=bound)

    return validate


def optional_bounded_text(bound: TextBound) -> Any:
    """An attrs validator like `bounded_text` that also accepts None."""
    inner = bounded_text(bound)

    def validate(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is not None:
            inner(instance, attribute, value)

    return validate


def utc_datetime(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """An attrs validator: the attribute is a timezone-aware datetime in UTC."""
    if not isinstance(value, datetime) or value.utcoffset() != timedelta(0):
        raise InvalidInputError(attribute.name, "must be a timezone-aware UTC datetime")


def max_items(maximum: int) -> Any:
    """An attrs validator: the attribute is a sized collection of at most `maximum` items."""

    def validate(_instance: object, attribute: attrs.Attribute[Any], value: tuple[object, ...]) -> None:
        if len(value) > maximum:
            raise InvalidInputError(attribute.name, f"must hold at most {maximum} items")

    return validate
