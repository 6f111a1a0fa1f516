"""operationIds and capability names, ported from the reference host's rules.

Agents call routes by these names (`postMemory`, `getMemorySearch`, ...), so the
rule is part of the wire contract: it must give exactly the reference's names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

#: Bedrock's 64-character tool-name limit minus a 15-character client prefix.
MAX_NAME_LENGTH = 49

_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+")
_PARAM = re.compile(r"^(?::(?P<colon>.+)|\{(?P<brace>[^}:]+)(?::[^}]*)?\})$")
_VERSION_MARKER = re.compile(r"^(get|post|put|patch|delete)V1")
# Lazy, so `ByConnectorInstanceIdTools` loses only `ByConnectorInstanceId`; `ById` never matches.
_PARAM_RESTATEMENT = re.compile(r"By[A-Z][a-zA-Z]*?Id")

_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


class OperationIdError(ValueError):
    """The route table yields a duplicate operationId, or a name that is too long or collides."""


def build_operation_id(method: str, path: str) -> str:
    """The operationId of `method path`: `POST /v1/memory` gives `postMemory`.

    Drops empty segments and the literal `v1`; a `{param}` or `:param` segment becomes
    `By<Param>`, `*` becomes `Wildcard`; every segment is PascalCased word by word
    (only each word's first letter is upper-cased, so `apiKeys` gives `ApiKeys`).
    """
    words: list[str] = [method.lower()]
    for segment in path.split("/"):
        if not segment or segment == "v1":
            continue
        param = _PARAM.match(segment)
        if param:
            segment = "by-" + (param.group("colon") or param.group("brace"))
        elif segment == "*":
            segment = "wildcard"
        words.extend(word[:1].upper() + word[1:] for word in _WORD_SPLIT.split(segment) if word)
    name = "".join(words)
    return name[:1].lower() + name[1:]


def structural_shorten(name: str) -> str:
    """Drop the parts of an operationId that restate structure: a `V1` marker, `By…Id` path restatements."""
    return _PARAM_RESTATEMENT.sub("", _VERSION_MARKER.sub(r"\1", name))


def fnv1a_32_base36(text: str) -> str:
    """The FNV-1a 32-bit hash of `text` (UTF-8), written in lower-case base 36."""
    value = _FNV_OFFSET
    for byte in text.encode("utf-8"):
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, rest = divmod(value, 36)
        out = digits[rest] + out
        if value == 0:
            return out


def capability_names(operation_ids: Iterable[str]) -> Mapping[str, str]:
    """Map each operationId to its tool name: structurally shortened, ≤ MAX_NAME_LENGTH, unique.

    Names that collide after shortening get `_<fnv1a-base36 of the operationId>`, the base
    trimmed to fit, as the reference host does.

    Raises:
        OperationIdError: a duplicate operationId, or a name still too long or duplicated.
    """
    ids = list(operation_ids)
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise OperationIdError(f"duplicate operationIds: {', '.join(duplicates)}")
    short = {operation_id: structural_shorten(operation_id) for operation_id in ids}
    shortened = list(short.values())
    names: dict[str, str] = {}
    for operation_id, name in short.items():
        if shortened.count(name) > 1:
            suffix = "_" + fnv1a_32_base36(operation_id)
            name = name[: MAX_NAME_LENGTH - len(suffix)] + suffix
        names[operation_id] = name
    too_long = sorted(n for n in names.values() if len(n) > MAX_NAME_LENGTH)
    if too_long:
        raise OperationIdError(f"names over {MAX_NAME_LENGTH} characters: {', '.join(too_long)}")
    taken = list(names.values())
    clashing = sorted({n for n in taken if taken.count(n) > 1})
    if clashing:
        raise OperationIdError(f"names still colliding: {', '.join(clashing)}")
    return names
