"""The two banks: a person's own and their organization's shared one, and who may read and change each.

Storage knows one kind of owner: every port method takes `user_id`, the owner of the rows it touches. The
organization's bank is an owner too, with an id of its own (`org_bank_owner`): a `bank_` TypeID derived from
the organization id, which no principal may carry as its user id (`is_org_bank_owner`). So everything a store
keeps per owner (the owner predicate, ranking statistics, blind-index keys, vectors, usage, revisions) is kept
per organization for the org bank, and never shared with a person's own bank (ADR 0038). Its rows are stored
with `scope = 'org'`; a personal read is `user_id = <person> AND scope = 'user'`, exactly as before.
"""

from __future__ import annotations

import enum
import uuid

from typeid import TypeID, base32

from memorybank_core.entities import Scope
from memorybank_core.errors import InvalidInputError

ORG_BANK_PREFIX = "bank"
"""The TypeID prefix of an organization bank's owner id. Persisted in every org row: never change it."""
ORG_BANK_NAMESPACE = uuid.UUID("0b5e9d2c-6a4f-5c1e-8d37-2f9a61c4e8b0")
"""The UUIDv5 namespace of org bank owner ids. Persisted in every org row: never change it."""
_OWNER_LENGTH = len(ORG_BANK_PREFIX) + 1 + 26

ORG_READ_SCOPE = "org:read"
ORG_WRITE_SCOPE = "org:write"
ORG_ADMIN_SCOPE = "org:admin"
ORG_SCOPES = frozenset({ORG_READ_SCOPE, ORG_WRITE_SCOPE, ORG_ADMIN_SCOPE})
"""What an organization's bank needs beside the memory scope of the operation: `org:read` to read it, `org:write`
to save in it and to change one's own memories there, `org:admin` (which includes both) to change anyone's."""


class BankScope(enum.StrEnum):
    """Which bank a request addresses (`bankScope`): the caller's own (the default), their organization's, or,
    for a search, every bank the caller may read."""

    USER = "user"
    ORG = "org"
    ALL = "all"

    @classmethod
    def parse(cls, value: object, *, allow_all: bool = False) -> BankScope:
        """`value` as a bank scope; None (not given) is the caller's own bank.

        Raises:
            InvalidInputError: ("bankScope") anything but "user", "org" (or "all" where `allow_all`).
        """
        if value is None:
            return cls.USER
        allowed = [cls.USER, cls.ORG, cls.ALL] if allow_all else [cls.USER, cls.ORG]
        if isinstance(value, str) and value in {member.value for member in allowed}:
            return cls(value)
        choices = " or ".join(f'"{member.value}"' for member in allowed)
        raise InvalidInputError("bankScope", f"must be {choices}")


def org_bank_owner(org_id: str) -> str:
    """The owner id of organization `org_id`'s shared bank: the same for the same organization, on every server."""
    return f"{ORG_BANK_PREFIX}_{base32.encode(uuid.uuid5(ORG_BANK_NAMESPACE, org_id).bytes)}"


def is_org_bank_owner(owner: str) -> bool:
    """Whether `owner` names an organization's bank (a `bank_` TypeID) rather than a person."""
    if len(owner) != _OWNER_LENGTH or not owner.startswith(ORG_BANK_PREFIX + "_"):
        return False
    try:
        return TypeID.from_string(owner).prefix == ORG_BANK_PREFIX
    except Exception:
        return False


def owner_scope(owner: str) -> Scope:
    """The scope of the rows `owner` owns: 'org' for an organization's bank, 'user' for a person."""
    return Scope.ORG if is_org_bank_owner(owner) else Scope.USER
