"""The API token store's contract (memorybank_testing.TokenStoreContract), on every backend that brings it."""

from __future__ import annotations

from memorybank_testing import TokenStoreContract
from tests.contract.backends import on_kinds_with


@on_kinds_with("token_store")
class TestTokenStoreContract(TokenStoreContract):
    """`backend_factory` is tests/conftest.py's, on the kinds that list the port."""
