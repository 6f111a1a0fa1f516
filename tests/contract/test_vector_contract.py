"""The vector store's contract (memorybank_testing.VectorStoreContract), on every backend that brings it."""

from __future__ import annotations

from memorybank_testing import VectorStoreContract
from tests.contract.backends import on_kinds_with


@on_kinds_with("vectors")
class TestVectorStoreContract(VectorStoreContract):
    """`backend_factory` is tests/conftest.py's, on the kinds that list the port."""
