"""The error of a change that lost a race: its own module, as it carries a memory (errors.py imports no entity)."""

from __future__ import annotations

from memorybank_core.entities import Memory
from memorybank_core.errors import MemoryBankError


class RevisionConflictError(MemoryBankError):
    """A change was based on a revision of the memory that is no longer the stored one; nothing was written.

    `current` is the memory as it is now (the caller's own), so the caller can show the newer text and decide;
    None from a store, which does not read it (the use case does, and raises again with it).
    """

    def __init__(self, current: Memory | None = None) -> None:
        self.current = current
        now = f"at revision {current.revision}" if current is not None else "at another revision"
        super().__init__(f"the memory is {now}, not the one this change was based on")
