"""The contract of memories that change (memorybank_testing.RevisionContract, as hosts run it) on every backend."""

from __future__ import annotations

from memorybank_testing import RevisionContract


class TestRevisionContract(RevisionContract):
    """`backend_factory` is tests/conftest.py's, parametrized over tests/contract/backends.FACTORIES."""
