"""The team's bank's stateful contract (memorybank_testing.OrgBankStatefulContract) on every backend we ship."""

from __future__ import annotations

import pytest

from memorybank_testing import OrgBankStatefulContract

# Heavy property-based tier: deselected by default (pyproject addopts), run by `.ci/run` as `-m fuzz`.
pytestmark = pytest.mark.fuzz


class TestOrgBankStatefulContract(OrgBankStatefulContract):
    """`backend_factory` is tests/conftest.py's, parametrized over tests/contract/backends.FACTORIES."""
