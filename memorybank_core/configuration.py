"""Settings declared as data, on the frozen value of the consumer that takes them (ADR 0032).

A setting is a field of its group's attrs class, made by `declare(...)`: its default is the field's
default, and the field's metadata (`Declared`) holds everything else an operator meets: the
environment variable, the command-line flag and the commands that take it, the parser and its bound,
whether it is a secret, the help text, and an example the settings test sets. `memorybank.settings`
walks the groups' fields to build the command line, resolve values, hand them to workers and write
docs/operations.md's table; this module only declares, and reads nothing (the core stays pure).

`BankSettings` is the group the use cases take (`MemoryBank(settings=…)`); the other groups live
beside their consumers' composition in `memorybank.settings`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from memorybank_core import limits
from memorybank_core.entities import Quota

#: The metadata key of a declared field.
SETTING = "memorybank.setting"

Parse = Callable[[str], Any]
"""Text as given -> the value. Raises `ValueError("must be …")`: the resolver says where the text came from."""


@attrs.frozen(kw_only=True)
class Declared:
    """Everything about one setting besides its default: what `setting` puts in the field's metadata."""

    variable: str
    """`MEMORYBANK_…`: every setting has one."""
    help: str
    parse: Parse = str
    shown_default: str = "none"
    """The default as docs/operations.md and `--help` show it."""
    computed_default: Callable[[Mapping[str, str]], Any] | None = None
    """A default that depends on the environment (the embedded database's location)."""
    flag: str | None = None
    """None for a secret: argv is readable by every local user."""
    aliases: tuple[str, ...] = ()
    destination: str | None = None
    """The argparse destination when it is not the flag's name (kept for the names callers already use)."""
    commands: tuple[str, ...] = ("serve",)
    """The commands whose command line takes the flag."""
    many: bool = False
    """A list: the flag repeats, and the variable lists values separated by commas or whitespace."""
    secret: bool = False
    """Never in `repr`, never handed to workers (each reads it again), never a flag."""
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    section: str | None = None
    """`title: description` of the `--help` section the flag is listed under (None: the command's own)."""
    example: str
    """A valid value as an operator writes it; the settings test sets it through the flag and the variable."""
    example_value: Any
    """What `example` resolves to."""


def declare(default: Any = attrs.NOTHING, **declared: Any) -> Any:
    """A declared field of a settings group: `port: int = declare(8000, variable="MEMORYBANK_PORT", …)`."""
    spec = Declared(**declared)
    return attrs.field(
        default=default,
        repr=not spec.secret,
        converter=tuple if spec.many else None,
        metadata={SETTING: spec},
    )


def declared(field: attrs.Attribute[Any]) -> Declared | None:
    """The declaration of a group's field, or None for a field that is not a setting."""
    spec = field.metadata.get(SETTING)
    return spec if isinstance(spec, Declared) else None


# --- Parsers shared by the declarations ---


def whole(low: int, high: int, unit: str = "") -> Parse:
    """A whole number from `low` to `high`."""

    def parse(text: str) -> int:
        if not re.fullmatch(r"[0-9]{1,7}", text) or not low <= int(text) <= high:
            raise ValueError(f"must be a whole number from {low} to {high}{unit}")
        return int(text)

    return parse


def choice(*choices: str) -> Parse:
    """One of `choices`, in any case."""

    def parse(text: str) -> str:
        if text.lower() not in choices:
            raise ValueError(f"must be {' or '.join(choices)}")
        return text.lower()

    return parse


def quota_number(text: str) -> int:
    """A quota measure as an operator writes it: `5000`, or `100_000` as `quota show` prints it."""
    digits = text.strip().replace("_", "")
    if not re.fullmatch(r"[0-9]{1,13}", digits) or int(digits) > limits.QUOTA_MAX:
        raise ValueError(f"must be a whole number from 0 to {limits.QUOTA_MAX}")
    return int(digits)


# --- The group the use cases take ---

#: The commands that run the use cases for people, and so take the bank group's flags: the server, and the local
#: rail on stdio (the same bank, one user).
BANK_COMMANDS = ("serve", "mcp")


@attrs.frozen(kw_only=True)
class BankSettings:
    """What an operator sets for the bank's use cases (`MemoryBank`, `MemoryControls`)."""

    quota_memories: int = declare(
        limits.QUOTA_MEMORIES_DEFAULT,
        variable="MEMORYBANK_QUOTA_MEMORIES",
        flag="--quota-memories",
        commands=BANK_COMMANDS,
        metavar="N",
        parse=quota_number,
        shown_default=f"{limits.QUOTA_MEMORIES_DEFAULT:_}",
        help="each user's quota of memories unless an operator set theirs (`memorybank quota`)",
        example="5_000",
        example_value=5000,
    )
    quota_characters: int = declare(
        limits.QUOTA_CHARACTERS_DEFAULT,
        variable="MEMORYBANK_QUOTA_CHARACTERS",
        flag="--quota-characters",
        commands=BANK_COMMANDS,
        metavar="N",
        parse=quota_number,
        shown_default=f"{limits.QUOTA_CHARACTERS_DEFAULT:_}",
        help="each user's quota of characters (content, tags and snippets together)",
        example="900",
        example_value=900,
    )

    revisions_kept: int = declare(
        limits.REVISIONS_KEPT.default,
        variable="MEMORYBANK_REVISIONS_KEPT",
        flag="--revisions-kept",
        metavar="N",
        parse=whole(limits.REVISIONS_KEPT.min, limits.REVISIONS_KEPT.max),
        shown_default=str(limits.REVISIONS_KEPT.default),
        help="how many earlier versions of each memory an edit keeps (the oldest goes when an edit makes one more); "
        "docs/http.md",
        example="5",
        example_value=5,
    )

    @property
    def quota(self) -> Quota:
        """The deployment's default quota, where no operator set one."""
        return Quota(max_memories=self.quota_memories, max_characters=self.quota_characters)
