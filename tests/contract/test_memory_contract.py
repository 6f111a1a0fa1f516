"""The memory bank's contract (memorybank_testing.MemoryContract, as hosts run it) on every backend we ship."""

from __future__ import annotations

from memorybank_testing import MemoryContract


class TestMemoryContract(MemoryContract):
    """`backend_factory` is tests/conftest.py's, parametrized over tests/contract/backends.FACTORIES."""
