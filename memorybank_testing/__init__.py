"""memorybank's contract suite, shipped for hosts: run it against your own `MemoryStore` and `SearchEngine`,
and against each other storage port you bring (tokens, panel sessions, purge, vectors, unit of work, bulk import).

In a test module of yours (docs/embedding.md shows it whole, on a toy store)::

    pytest_plugins = ["memorybank_testing.fixtures"]

    @pytest.fixture(scope="session")
    def backend_factory() -> Iterator[BackendFactory]:
        factory = MyFactory()  # .fresh() -> Backend(store=..., search_engine=...)
        yield factory
        factory.close()

    class TestMyBackend(MemoryContract, RevisionContract, ControlsContract, RankingContract, StatefulContract,
                        OrgBankContract):
        pass

A contract of another port (`TokenStoreContract`, `PanelSessionContract`, `PurgeContract`,
`VectorStoreContract`, `UnitOfWorkContract`, `ImportContract`) needs that port in the `Backend`.

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
    "memorybank_testing.revision_contract",
    "memorybank_testing.stateful_contract",
    "memorybank_testing.token_contract",
    "memorybank_testing.panel_session_contract",
    "memorybank_testing.purge_contract",
    "memorybank_testing.vector_contract",
    "memorybank_testing.unit_of_work_contract",
    "memorybank_testing.import_contract",
    "memorybank_testing.org_bank_contract",
)

from memorybank_testing.backends import Backend, BackendFactory, InMemoryFactory  # noqa: E402
from memorybank_testing.controls_contract import ControlsContract  # noqa: E402
from memorybank_testing.import_contract import ImportContract  # noqa: E402
from memorybank_testing.memory_contract import MemoryContract  # noqa: E402
from memorybank_testing.org_bank_contract import OrgBankContract, OrgBankMachine, OrgBankStatefulContract  # noqa: E402
from memorybank_testing.panel_session_contract import PanelSessionContract  # noqa: E402
from memorybank_testing.principals import User, bank_over, start_clock  # noqa: E402
from memorybank_testing.purge_contract import PurgeContract  # noqa: E402
from memorybank_testing.ranking_contract import RankingContract  # noqa: E402
from memorybank_testing.revision_contract import RevisionContract  # noqa: E402
from memorybank_testing.stateful_contract import MemoryBankMachine, StatefulContract  # noqa: E402
from memorybank_testing.token_contract import TokenStoreContract  # noqa: E402
from memorybank_testing.unit_of_work_contract import UnitOfWorkContract  # noqa: E402
from memorybank_testing.vector_contract import VectorStoreContract  # noqa: E402

__all__ = [
    "Backend",
    "BackendFactory",
    "ControlsContract",
    "ImportContract",
    "InMemoryFactory",
    "MemoryBankMachine",
    "MemoryContract",
    "OrgBankContract",
    "OrgBankMachine",
    "OrgBankStatefulContract",
    "PanelSessionContract",
    "PurgeContract",
    "RankingContract",
    "RevisionContract",
    "StatefulContract",
    "TokenStoreContract",
    "UnitOfWorkContract",
    "User",
    "VectorStoreContract",
    "bank_over",
    "start_clock",
]
