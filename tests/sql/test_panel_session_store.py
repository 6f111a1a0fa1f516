"""SqlPanelSessionStore keeps only hashes of the panel's secrets (its behaviour is the shipped
memorybank_testing.PanelSessionContract, run on every backend by tests/contract)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from memorybank_core import READ_SCOPE, WRITE_SCOPE, PanelSessions, TokenPrincipal
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id
from tests.sql.backends import SqliteFactory


def test_only_hashes_of_secrets_are_stored(request: pytest.FixtureRequest) -> None:
    factory: SqliteFactory = request.getfixturevalue("sqlite_factory")
    factory.fresh()
    sessions = PanelSessions(store=factory.storage.panel_sessions)
    who = TokenPrincipal(
        user_id=new_id(USER_PREFIX),
        organization_id=new_id(ORGANIZATION_PREFIX),
        scopes=frozenset({READ_SCOPE, WRITE_SCOPE}),
    )
    link = sessions.issue_link(user_id=who.user_id, org_id=who.organization_id)
    started = sessions.start(who)

    with factory.storage.engine.connect() as connection:
        stored = " ".join(str(v) for row in connection.execute(sa.text("SELECT * FROM panel_credential")) for v in row)

    assert link.code not in stored
    assert started.secret not in stored
    assert link.code.removeprefix("mbl_") not in stored
