"""The stateful contract (memorybank_testing.StatefulContract, as hosts run it) on every backend we ship."""

from __future__ import annotations

import pytest

from memorybank_testing import StatefulContract

# Heavy property-based tier: deselected by default (pyproject addopts), run by `.ci/run` as `-m fuzz`.
pytestmark = pytest.mark.fuzz


class TestStatefulContract(StatefulContract):
    """`backend_factory` is tests/conftest.py's, parametrized over tests/contract/backends.FACTORIES."""
