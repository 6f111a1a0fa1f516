"""The unit of work's contract (memorybank_testing.UnitOfWorkContract), on every backend that brings it."""

from __future__ import annotations

from memorybank_testing import UnitOfWorkContract
from tests.contract.backends import on_kinds_with


@on_kinds_with("unit_of_work")
class TestUnitOfWorkContract(UnitOfWorkContract):
    """`backend_factory` is tests/conftest.py's, on the kinds that list the port."""
