"""The organization's shared bank (memorybank_testing.OrgBankContract, as hosts run it) on every backend we ship."""

from __future__ import annotations

from memorybank_testing import OrgBankContract


class TestOrgBankContract(OrgBankContract):
    """`backend_factory` is tests/conftest.py's, parametrized over tests/contract/backends.FACTORIES."""
