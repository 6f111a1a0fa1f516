"""The offboarding purge's contract (memorybank_testing.PurgeContract), on every backend that brings it."""

from __future__ import annotations

from memorybank_testing import PurgeContract
from tests.contract.backends import on_kinds_with


@on_kinds_with("purge_store")
class TestPurgeContract(PurgeContract):
    """`backend_factory` is tests/conftest.py's, on the kinds that list the port."""
