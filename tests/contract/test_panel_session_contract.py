"""The panel's sign-in store's contract (memorybank_testing.PanelSessionContract), on every backend that brings it."""

from __future__ import annotations

from memorybank_testing import PanelSessionContract
from tests.contract.backends import on_kinds_with


@on_kinds_with("panel_sessions")
class TestPanelSessionContract(PanelSessionContract):
    """`backend_factory` is tests/conftest.py's, on the kinds that list the port."""
