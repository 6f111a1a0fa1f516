"""`memorybank gate on|off|show` and `memorybank quota set|show`: operators' commands, hostile ids refused."""

from __future__ import annotations

import pytest

from memorybank_core import Control, SubjectKind
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id
from tests.cli.conftest import Run
from tests.sql.backends import storage_at


def _controls(db_url: str) -> list[Control]:
    storage = storage_at(db_url)
    try:
        return list(storage.controls.list())
    finally:
        storage.close()


def test_gate_off_and_on_for_a_user_an_organization_and_everyone(run: Run, db_url: str) -> None:
    user, org = new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX)

    assert (
        run("gate", "off", "--db", db_url, "--user", user).out == f"memorybank: memory switched off for user {user}\n"
    )
    assert run("gate", "off", "--db", db_url, "--org", org).status == 0
    assert run("gate", "off", "--db", db_url, "--all").out == "memorybank: memory switched off for everyone\n"

    assert run("gate", "show", "--db", db_url).out == f"everyone: OFF\norg {org}: OFF\nuser {user}: OFF\n"
    shown = run("gate", "show", "--db", db_url, "--user", user, "--org", org).out
    assert shown == f"memory for {user} in {org}: OFF (switched off for everyone)\n"

    assert run("gate", "on", "--db", db_url, "--all").status == 0
    shown = run("gate", "show", "--db", db_url, "--user", user, "--org", org).out
    assert shown == f"memory for {user} in {org}: OFF (switched off for the organization)\n"
    switched_on = run("gate", "on", "--db", db_url, "--user", user)
    assert "an organization or the kill switch that is off still keeps it off" in switched_on.out
    assert [(c.kind, c.enabled) for c in _controls(db_url)] == [
        (SubjectKind.ALL, True),
        (SubjectKind.ORG, False),
        (SubjectKind.USER, True),
    ]


def test_quota_set_and_show(run: Run, db_url: str) -> None:
    user, org = new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX)

    # `100_000`, as `quota show` prints it, reads back.
    assert run("quota", "set", "--db", db_url, "--org", org, "--memories", "500", "--characters", "100_000").status == 0
    outcome = run("quota", "set", "--db", db_url, "--user", user, "--memories", "20")
    assert outcome.out == f"memorybank: quota of user {user}: 20 memories, default characters\n"

    shown = run("quota", "show", "--db", db_url, "--user", user, "--org", org).out
    assert shown == f"quota of {user} in {org}:\n  memories:   0 of 20\n  characters: 0 of 100_000\n"
    assert run("quota", "show", "--db", db_url).out == (
        f"org {org}: 500 memories, 100_000 characters\nuser {user}: 20 memories, default characters\n"
    )


def test_quota_unset_returns_a_user_to_the_organizations_quota_and_keeps_their_switch(run: Run, db_url: str) -> None:
    user, org = new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX)
    assert run("quota", "set", "--db", db_url, "--org", org, "--memories", "500").status == 0
    assert run("quota", "set", "--db", db_url, "--user", user, "--memories", "20").status == 0
    assert run("gate", "off", "--db", db_url, "--user", user).status == 0

    unset = run("quota", "unset", "--db", db_url, "--user", user)
    again = run("quota", "unset", "--db", db_url, "--user", user)

    assert (unset.status, unset.out) == (0, f"memorybank: quota of user {user} unset: the next level's applies\n")
    assert (again.status, again.out) == (0, f"memorybank: no quota was set for user {user}\n")
    assert "memories:   0 of 500" in run("quota", "show", "--db", db_url, "--user", user, "--org", org).out
    assert run("gate", "show", "--db", db_url).out == f"user {user}: OFF\n"


def test_quota_show_uses_the_deployment_default_from_the_environment(
    run: Run, db_url: str, env: dict[str, str]
) -> None:
    env["MEMORYBANK_QUOTA_MEMORIES"] = "42"
    user = new_id(USER_PREFIX)
    assert "memories:   0 of 42" in run("quota", "show", "--db", db_url, "--user", user).out


@pytest.mark.parametrize(
    "argv",
    [
        ["gate", "off", "--user", ""],
        ["gate", "off", "--user", "*"],
        ["gate", "off", "--user", "%"],
        ["gate", "off", "--user", "usr_%"],
        ["gate", "off", "--user", "two words"],
        ["gate", "off", "--user", "u" * 65],
        ["gate", "off", "--user", "usr_notavalidtypeid"],
        ["gate", "off", "--user", new_id(ORGANIZATION_PREFIX)],
        ["gate", "off", "--org", new_id(USER_PREFIX)],
        ["gate", "off"],
        ["gate", "off", "--user", new_id(USER_PREFIX), "--all"],
        ["gate", "maybe", "--all"],
        ["quota", "set", "--user", new_id(USER_PREFIX)],
        ["quota", "set", "--user", new_id(USER_PREFIX), "--memories", "-1"],
        ["quota", "set", "--user", new_id(USER_PREFIX), "--memories", "lots"],
        ["quota", "set", "--user", new_id(USER_PREFIX), "--memories", "10000000000001"],
        ["quota", "set", "--all", "--memories", "1"],
        ["quota", "set", "--org", "*", "--memories", "1"],
        ["quota", "unset", "--all"],
        ["quota", "unset", "--user", "usr_%"],
        ["quota", "unset"],
    ],
)
def test_a_bad_subject_or_value_is_refused_with_status_2_and_nothing_changed(
    run: Run, db_url: str, argv: list[str]
) -> None:
    assert run("gate", "show", "--db", db_url).status == 0  # the database exists, empty of controls
    outcome = run(*argv, "--db", db_url)
    assert outcome.status == 2, outcome.out + outcome.err
    assert outcome.err.startswith("memorybank: error: ")
    assert "Traceback" not in outcome.err
    assert _controls(db_url) == []


def test_serve_refuses_a_malformed_quota_before_binding(run: Run, db_url: str) -> None:
    outcome = run("serve", "--db", db_url, "--port", "0", "--quota-memories", "ten")
    assert outcome.status == 2
    assert "--quota-memories must be a whole number" in outcome.err
