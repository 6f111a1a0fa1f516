"""A memory with its history, as an export writes it: the one place both exports (the person's and the
operator's) read the kept earlier versions."""

from __future__ import annotations

from collections.abc import Sequence

from memorybank_core import limits
from memorybank_core.entities import ExportedMemory, Memory
from memorybank_core.ports import MemoryStore


def with_history(store: MemoryStore, *, user_id: str, memories: Sequence[Memory]) -> list[ExportedMemory]:
    """Each of the owner's `memories` with every earlier version the store keeps, newest first (a read each, for
    the memories changed since their first version: one still at revision 1 has no earlier one).

    Raises:
        UnavailableError: storage cannot be reached.
    """
    return [
        ExportedMemory(
            memory=memory,
            revisions=tuple(
                store.revisions(user_id=user_id, memory_id=memory.id, limit=limits.REVISIONS_KEPT.max, before=None)
            )
            if memory.revision > 1
            else (),
        )
        for memory in memories
    ]
