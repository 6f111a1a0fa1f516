"""The ranking contract (memorybank_testing.RankingContract, as hosts run it) on every engine we ship."""

from __future__ import annotations

from memorybank_testing import RankingContract


class TestRankingContract(RankingContract):
    """`backend_factory` is tests/conftest.py's, parametrized over tests/contract/backends.FACTORIES."""
