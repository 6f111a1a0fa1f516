"""memorybank's contract suite, shipped for hosts: run it against your own `MemoryStore` and `SearchEngine`.

In a test module of yours (docs/embedding.md shows it whole, on a toy store)::

    pytest_plugins = ["memorybank_testing.fixtures"]

    @pytest.fixture(scope="session")
    def backend_factory() -> Iterator[BackendFactory]:
        factory = MyFactory()  # .fresh() -> Backend(store=..., search_engine=...)
        yield factory
        factory.close()

    class TestMyBackend(MemoryContract, ControlsContract, RankingContract, StatefulContract):
        pass

memorybank's own tests/contract run these very classes against every backend it ships. Needs the
`testing` extra (pytest, hypothesis); nothing in memorybank's running code imports this package.
"""

import pytest

# Before the contract modules are imported: pytest explains a failed `assert` in them as it does in
# a test module (they are installed modules, which it would not rewrite otherwise).
pytest.register_assert_rewrite(
    "memorybank_testing.memory_contract",
    "memorybank_testing.controls_contract",
    "memorybank_testing.ranking_contract",
    "memorybank_testing.stateful_contract",
)

from memorybank_testing.backends import Backend, BackendFactory, InMemoryFactory  # noqa: E402
from memorybank_testing.controls_contract import ControlsContract  # noqa: E402
from memorybank_testing.memory_contract import MemoryContract  # noqa: E402
from memorybank_testing.principals import User, bank_over, start_clock  # noqa: E402
from memorybank_testing.ranking_contract import RankingContract  # noqa: E402
from memorybank_testing.stateful_contract import MemoryBankMachine, StatefulContract  # noqa: E402

__all__ = [
    "Backend",
    "BackendFactory",
    "ControlsContract",
    "InMemoryFactory",
    "MemoryBankMachine",
    "MemoryContract",
    "RankingContract",
    "StatefulContract",
    "User",
    "bank_over",
    "start_clock",
]
