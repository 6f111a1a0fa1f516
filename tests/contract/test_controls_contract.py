"""Quotas and the memory gate (memorybank_testing.ControlsContract, as hosts run it) on every backend we ship."""

from __future__ import annotations

from memorybank_testing import ControlsContract


class TestControlsContract(ControlsContract):
    """`backend_factory` is tests/conftest.py's, parametrized over tests/contract/backends.FACTORIES."""
