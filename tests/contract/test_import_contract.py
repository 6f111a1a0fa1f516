"""The bulk import ports' contract (memorybank_testing.ImportContract), on every backend that brings it."""

from __future__ import annotations

from memorybank_testing import ImportContract
from tests.contract.backends import on_kinds_with


@on_kinds_with("bulk_writer")
class TestImportContract(ImportContract):
    """`backend_factory` is tests/conftest.py's, on the kinds that list the port."""
