"""The organization's shared bank: isolation and authorship, on every backend.

People in two organizations save personal and org memories; after every operation each principal's reads (a
list and a search of each bank, and a search of `bankScope=all`) return exactly what its scopes allow: its own
personal memories, its own organization's memories with `org:read`, and nothing else ever. Subclass
`OrgBankContract` beside `MemoryContract` (its fixtures are `memorybank_testing.fixtures`').
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from memorybank_core import (
    ORG_ADMIN_SCOPE,
    ORG_READ_SCOPE,
    ORG_WRITE_SCOPE,
    READ_SCOPE,
    WRITE_SCOPE,
    BankScope,
    EditRequest,
    ForbiddenError,
    InvalidInputError,
    MemoryBank,
    MemoryControls,
    MemoryDisabledError,
    NotAuthorError,
    NotFoundError,
    QuotaExceededError,
    SaveRequest,
    Scope,
    SubjectKind,
    org_bank_owner,
)
from memorybank_core.ids import ORGANIZATION_PREFIX, new_id
from memorybank_testing.backends import BackendFactory
from memorybank_testing.principals import User, bank_over

MEMBER = frozenset({READ_SCOPE, WRITE_SCOPE, ORG_READ_SCOPE, ORG_WRITE_SCOPE})
READER = frozenset({READ_SCOPE, WRITE_SCOPE, ORG_READ_SCOPE})
ADMIN = frozenset({READ_SCOPE, WRITE_SCOPE, ORG_ADMIN_SCOPE})
PERSONAL_ONLY = frozenset({READ_SCOPE, WRITE_SCOPE})
#: Every memory of the scenario holds this word, so one search per bank finds every memory it may.
WORD = "staging"


@attrs.frozen(kw_only=True)
class Team:
    """Principals of two organizations: A's member, reader, admin and personal-only person; B's member."""

    ann: User
    amy: User
    ada: User
    ali: User
    bea: User

    @classmethod
    def new(cls) -> Team:
        org_a, org_b = new_id(ORGANIZATION_PREFIX), new_id(ORGANIZATION_PREFIX)
        return cls(
            ann=User(organization_id=org_a, scopes=MEMBER),
            amy=User(organization_id=org_a, scopes=READER),
            ada=User(organization_id=org_a, scopes=ADMIN),
            ali=User(organization_id=org_a, scopes=PERSONAL_ONLY),
            bea=User(organization_id=org_b, scopes=MEMBER),
        )

    def everyone(self) -> tuple[User, ...]:
        return (self.ann, self.amy, self.ada, self.ali, self.bea)


@attrs.define
class Saved:
    """What the scenario saved and not yet deleted: personal memory ids per user, org memory ids per organization."""

    personal: dict[str, set[str]] = attrs.Factory(dict)
    shared: dict[str, set[str]] = attrs.Factory(dict)
    writers: dict[str, User] = attrs.Factory(dict)
    """Who saved each memory (its owner, or a team memory's author)."""

    def add(self, user: User, memory_id: str, bank: BankScope) -> None:
        if bank is BankScope.ORG:
            self.shared.setdefault(user.organization_id, set()).add(memory_id)
        else:
            self.personal.setdefault(user.user_id, set()).add(memory_id)
        self.writers[memory_id] = user

    def is_shared(self, memory_id: str) -> bool:
        return any(memory_id in ids for ids in self.shared.values())

    def remove(self, memory_id: str) -> None:
        for ids in (*self.personal.values(), *self.shared.values()):
            ids.discard(memory_id)

    def readable(self, user: User, bank: BankScope) -> set[str]:
        own = set(self.personal.get(user.user_id, ()))
        team = set(self.shared.get(user.organization_id, ())) if _reads_org(user) else set()
        return {BankScope.USER: own, BankScope.ORG: team, BankScope.ALL: own | team}[bank]


def _reads_org(user: User) -> bool:
    return bool({ORG_READ_SCOPE, ORG_ADMIN_SCOPE} & user.scopes)


def _writes_org(user: User) -> bool:
    return bool({ORG_WRITE_SCOPE, ORG_ADMIN_SCOPE} & user.scopes)


def save(bank: MemoryBank, saved: Saved, user: User, content: str, where: BankScope = BankScope.USER) -> str:
    body: dict[str, object] = {"content": f"{content} {WORD}"}
    if where is not BankScope.USER:
        body["bankScope"] = where.value
    memory = bank.save(user, SaveRequest.parse(body))
    saved.add(user, memory.id, where)
    return memory.id


def check_every_read(bank: MemoryBank, saved: Saved, people: Iterable[User]) -> None:
    """Each principal's lists and searches of every bank return exactly the memories its scopes allow."""
    for user in people:
        for where in (BankScope.USER, BankScope.ORG):
            if where is BankScope.ORG and not _reads_org(user):
                with pytest.raises(ForbiddenError):
                    bank.list(user, bank=where)
                with pytest.raises(ForbiddenError):
                    bank.search(user, query=WORD, bank=where)
                continue
            listed = bank.list(user, limit=100, bank=where).memories
            assert {m.id for m in listed} == saved.readable(user, where)
            assert {m.scope for m in listed} <= {Scope.ORG if where is BankScope.ORG else Scope.USER}
            found = bank.search(user, query=WORD, limit=50, bank=where)
            assert {r.memory.id for r in found} == saved.readable(user, where)
        everything = bank.search(user, query=WORD, limit=50, bank=BankScope.ALL)
        assert {r.memory.id for r in everything} == saved.readable(user, BankScope.ALL)
        for result in everything:
            mine = result.memory.id in saved.readable(user, BankScope.USER)
            assert result.bank is (Scope.USER if mine else Scope.ORG)


class OrgBankContract:
    """An organization's shared bank beside each person's own: who reads and changes what, on every backend."""

    def test_every_principal_reads_exactly_what_its_scopes_allow_after_each_operation(self, bank: MemoryBank) -> None:
        team, saved = Team.new(), Saved()
        steps: list[tuple[User, str, BankScope]] = [
            (team.ann, "ann keeps her own notes on the", BankScope.USER),
            (team.ann, "the team database lives in eu-west-1, the", BankScope.ORG),
            (team.bea, "the other company's database is in us-east-2,", BankScope.ORG),
            (team.amy, "amy's personal", BankScope.USER),
            (team.ali, "ali's personal", BankScope.USER),
            (team.ada, "the admin's runbook for", BankScope.ORG),
            (team.bea, "bea's personal", BankScope.USER),
        ]
        for user, content, where in steps:
            save(bank, saved, user, content, where)
            check_every_read(bank, saved, team.everyone())

        team_memory = next(iter(saved.shared[team.ann.organization_id] - {self._by(bank, team.ada)}))
        bank.edit(
            team.ann, memory_id=team_memory, request=EditRequest.parse({"content": f"eu-west-2 {WORD}"}), bank="org"
        )
        check_every_read(bank, saved, team.everyone())
        bank.delete(team.ada, memory_id=team_memory, bank="org")
        saved.remove(team_memory)
        check_every_read(bank, saved, team.everyone())
        own = next(iter(saved.personal[team.ann.user_id]))
        bank.delete(team.ann, memory_id=own)
        saved.remove(own)
        check_every_read(bank, saved, team.everyone())

    @staticmethod
    def _by(bank: MemoryBank, user: User) -> str:
        """The id of the one org memory `user` wrote."""
        page = bank.list(user, limit=100, bank="org").memories
        return next(m.id for m in page if m.author == user.user_id)

    def test_an_org_memory_is_owned_by_the_bank_and_names_its_author(self, bank: MemoryBank) -> None:
        team = Team.new()
        memory = bank.save(
            team.ann, SaveRequest.parse({"content": "the staging db is in eu-west-1", "bankScope": "org"})
        )

        assert memory.scope is Scope.ORG
        assert memory.author == team.ann.user_id
        assert memory.user_id == org_bank_owner(team.ann.organization_id)
        assert memory.org_id == team.ann.organization_id
        read = bank.revisions(team.amy, memory_id=memory.id, bank="org").memory
        assert (read.scope, read.author, read.content) == (Scope.ORG, team.ann.user_id, memory.content)

    def test_an_org_saves_similar_names_the_team_banks_near_duplicate_only_in_its_unit_of_work_or_alone(
        self, bank: MemoryBank
    ) -> None:
        team = Team.new()
        near = bank.save(team.ada, SaveRequest.parse({"content": "deploys go out on tuesdays", "bankScope": "org"}))
        bank.save(team.ann, SaveRequest.parse({"content": "my deploys go out on tuesdays"}))  # personal
        bank.save(team.bea, SaveRequest.parse({"content": "deploys go out on tuesdays", "bankScope": "org"}))

        with bank.unit_of_work():  # as a facade answers a save (storage may read the look-up ahead)
            saved = bank.save(
                team.ann, SaveRequest.parse({"content": "deploys now go out on tuesdays", "bankScope": "org"})
            )
            together = bank.similar(team.ann, saved)
        alone = bank.similar(team.ann, saved)

        assert [result.memory.id for result in together] == [near.id]
        assert [(r.memory, r.score) for r in together] == [(r.memory, r.score) for r in alone]

    def test_a_personal_save_ignores_a_client_scope_and_stays_personal(self, bank: MemoryBank) -> None:
        team = Team.new()
        memory = bank.save(team.ann, SaveRequest.parse({"content": "mine alone", "scope": "org"}))

        assert (memory.scope, memory.author, memory.user_id) == (Scope.USER, None, team.ann.user_id)
        assert bank.list(team.amy, bank="org").memories == ()

    def test_saving_in_the_org_bank_needs_org_write(self, bank: MemoryBank) -> None:
        team = Team.new()
        for user in (team.amy, team.ali):
            with pytest.raises(ForbiddenError) as refused:
                bank.save(user, SaveRequest.parse({"content": "for the team", "bankScope": "org"}))
            assert refused.value.required_scope == ORG_WRITE_SCOPE
        assert bank.list(team.ann, bank="org").memories == ()

    def test_only_the_author_or_an_admin_changes_an_org_memory(self, bank: MemoryBank) -> None:
        team = Team.new()
        other = User(organization_id=team.ann.organization_id, scopes=MEMBER)
        memory = bank.save(team.ann, SaveRequest.parse({"content": "deploys go out on tuesdays", "bankScope": "org"}))

        with pytest.raises(NotAuthorError):
            bank.edit(other, memory_id=memory.id, request=EditRequest.parse({"content": "mondays"}), bank="org")
        with pytest.raises(NotAuthorError):
            bank.delete(other, memory_id=memory.id, bank="org")
        with pytest.raises(NotAuthorError):
            bank.save(other, SaveRequest.parse({"content": "fridays", "bankScope": "org", "supersedes": [memory.id]}))
        still = bank.revisions(team.ann, memory_id=memory.id, bank="org").memory
        assert (still.content, still.revision, still.retired_by) == ("deploys go out on tuesdays", 1, None)

        edited = bank.edit(
            team.ann, memory_id=memory.id, request=EditRequest.parse({"content": "wednesdays"}), bank="org"
        )
        assert (edited.revision, edited.author, edited.scope) == (2, team.ann.user_id, Scope.ORG)
        history = bank.revisions(team.amy, memory_id=memory.id, bank="org").revisions
        assert [version.content for version in history] == ["wednesdays", "deploys go out on tuesdays"]
        bank.delete(team.ada, memory_id=memory.id, bank="org")
        with pytest.raises(NotFoundError):
            bank.revisions(team.ann, memory_id=memory.id, bank="org")

    def test_another_organizations_memory_is_not_found_in_any_bank(self, bank: MemoryBank) -> None:
        team = Team.new()
        theirs = bank.save(team.bea, SaveRequest.parse({"content": "org b's secret sauce", "bankScope": "org"}))
        admin_of_a = team.ada

        for where in ("org", "user"):
            with pytest.raises(NotFoundError) as deleting:
                bank.delete(admin_of_a, memory_id=theirs.id, bank=where)
            with pytest.raises(NotFoundError) as unknown:
                bank.delete(admin_of_a, memory_id=new_id("mem"), bank=where)
            assert str(deleting.value) == str(unknown.value)
            with pytest.raises(NotFoundError):
                bank.edit(admin_of_a, memory_id=theirs.id, request=EditRequest.parse({"content": "x"}), bank=where)
            with pytest.raises(NotFoundError):
                bank.revisions(admin_of_a, memory_id=theirs.id, bank=where)
        assert bank.revisions(team.bea, memory_id=theirs.id, bank="org").memory.content == "org b's secret sauce"

    def test_an_org_memory_is_not_found_through_the_personal_bank(self, bank: MemoryBank) -> None:
        team = Team.new()
        shared = bank.save(team.ann, SaveRequest.parse({"content": "the shared staging host", "bankScope": "org"}))
        own = bank.save(team.ann, SaveRequest.parse({"content": "my own staging host"}))

        with pytest.raises(NotFoundError):
            bank.revisions(team.ann, memory_id=shared.id)
        with pytest.raises(NotFoundError):
            bank.delete(team.ann, memory_id=shared.id)
        with pytest.raises(NotFoundError):
            bank.revisions(team.ann, memory_id=own.id, bank="org")
        with pytest.raises(NotFoundError):
            bank.delete(team.ada, memory_id=own.id, bank="org")
        assert [r.memory.id for r in bank.search(team.ann, query="staging host")] == [own.id]
        assert [r.memory.id for r in bank.search(team.ann, query="staging host", bank="org")] == [shared.id]

    def test_a_words_weight_in_the_org_bank_never_depends_on_other_banks(self, bank: MemoryBank) -> None:
        team = Team.new()
        bank.save(team.ann, SaveRequest.parse({"content": "kafka brokers restart nightly", "bankScope": "org"}))
        bank.save(
            team.ann, SaveRequest.parse({"content": "grafana dashboards live in the ops folder", "bankScope": "org"})
        )
        before = [(r.memory.id, r.score) for r in bank.search(team.amy, query="kafka brokers", bank="org")]
        for n in range(6):
            bank.save(team.ann, SaveRequest.parse({"content": f"kafka note {n} of my own"}))
            bank.save(team.bea, SaveRequest.parse({"content": f"kafka brokers in org b {n}", "bankScope": "org"}))

        after = [(r.memory.id, r.score) for r in bank.search(team.amy, query="kafka brokers", bank="org")]
        assert after == before

    def test_the_gate_of_a_person_or_their_organization_closes_the_team_bank_too_and_its_quota_is_the_orgs(
        self, bank: MemoryBank, controls: MemoryControls
    ) -> None:
        team = Team.new()
        bank.save(team.ann, SaveRequest.parse({"content": "first team note", "bankScope": "org"}))
        controls.set_gate(SubjectKind.USER, team.ann.user_id, enabled=False)
        with pytest.raises(MemoryDisabledError):
            bank.save(team.ann, SaveRequest.parse({"content": "second team note", "bankScope": "org"}))
        with pytest.raises(MemoryDisabledError):
            bank.list(team.ann, bank="org")
        assert len(bank.list(team.amy, bank="org").memories) == 1

        controls.set_quota(SubjectKind.ORG, team.ann.organization_id, max_memories=2)
        bank.save(team.ada, SaveRequest.parse({"content": "the admin's team note", "bankScope": "org"}))
        member = User(organization_id=team.ann.organization_id, scopes=MEMBER)
        with pytest.raises(QuotaExceededError):
            bank.save(member, SaveRequest.parse({"content": "one too many", "bankScope": "org"}))
        bank.save(team.ada, SaveRequest.parse({"content": "her own bank is her own quota"}))

    def test_search_of_all_banks_without_org_read_is_the_personal_bank(self, bank: MemoryBank) -> None:
        team = Team.new()
        bank.save(team.ann, SaveRequest.parse({"content": "the team's wiki lives on notion", "bankScope": "org"}))
        own = bank.save(team.ali, SaveRequest.parse({"content": "my wiki notes"}))

        assert [r.memory.id for r in bank.search(team.ali, query="wiki", bank="all")] == [own.id]

    def test_a_bank_scope_other_than_user_org_or_all_is_refused(self, bank: MemoryBank) -> None:
        team = Team.new()
        with pytest.raises(InvalidInputError) as saving:
            bank.save(team.ann, SaveRequest.parse({"content": "x", "bankScope": "everyone"}))
        assert saving.value.problems[0].path == "bankScope"
        with pytest.raises(InvalidInputError):
            bank.list(team.ann, bank="all")
        with pytest.raises(InvalidInputError):
            bank.search(team.ann, query="x", bank="team")


#: The people of `Team`, in the machine's order, and the words its memories are made of (each holds `WORD`).
PEOPLE = ("ann", "amy", "ada", "ali", "bea")
WORDS = ["harbor", "falcon", "juniper", "kettle"]


def _expected(saved: Saved, user: User, memory_id: str, where: BankScope) -> type[Exception] | None:
    """What changing `memory_id` through `where` as `user` must raise (None: it succeeds), from the model."""
    shared = saved.is_shared(memory_id)
    writer = saved.writers[memory_id]
    if where is BankScope.ORG and not _writes_org(user):
        return ForbiddenError
    if where is BankScope.USER:
        return None if not shared and writer.user_id == user.user_id else NotFoundError
    if not shared or writer.organization_id != user.organization_id:
        return NotFoundError
    if writer.user_id != user.user_id and ORG_ADMIN_SCOPE not in user.scopes:
        return NotAuthorError
    return None


class OrgBankMachine(RuleBasedStateMachine):
    """People of two organizations save, edit and delete in both banks, in any order and through either bank;
    after every step each one's reads of every bank are exactly what its scopes allow (`check_every_read`)."""

    def __init__(self, factory: BackendFactory) -> None:
        super().__init__()
        self.bank = bank_over(factory.fresh())
        self.team = Team.new()
        self.saved = Saved()

    def _person(self, name: str) -> User:
        person: User = getattr(self.team, name)
        return person

    @rule(
        who=st.sampled_from(PEOPLE), where=st.sampled_from([BankScope.USER, BankScope.ORG]), word=st.sampled_from(WORDS)
    )
    def save(self, who: str, where: BankScope, word: str) -> None:
        user = self._person(who)
        if where is BankScope.ORG and not _writes_org(user):
            with pytest.raises(ForbiddenError):
                save(self.bank, self.saved, user, word, where)
            return
        save(self.bank, self.saved, user, word, where)

    @precondition(lambda self: bool(self.saved.writers))
    @rule(
        data=st.data(),
        who=st.sampled_from(PEOPLE),
        where=st.sampled_from([BankScope.USER, BankScope.ORG]),
        word=st.sampled_from(WORDS),
    )
    def edit(self, data: st.DataObject, who: str, where: BankScope, word: str) -> None:
        user = self._person(who)
        memory_id = data.draw(st.sampled_from(sorted(self.saved.writers)))
        expected = _expected(self.saved, user, memory_id, where)
        request = EditRequest.parse({"content": f"{word} {WORD}"})
        if expected is not None:
            with pytest.raises(expected):
                self.bank.edit(user, memory_id=memory_id, request=request, bank=where)
            return
        edited = self.bank.edit(user, memory_id=memory_id, request=request, bank=where)
        assert edited.content == f"{word} {WORD}"
        assert edited.author == (self.saved.writers[memory_id].user_id if where is BankScope.ORG else None)

    @precondition(lambda self: bool(self.saved.writers))
    @rule(data=st.data(), who=st.sampled_from(PEOPLE), where=st.sampled_from([BankScope.USER, BankScope.ORG]))
    def delete(self, data: st.DataObject, who: str, where: BankScope) -> None:
        user = self._person(who)
        memory_id = data.draw(st.sampled_from(sorted(self.saved.writers)))
        expected = _expected(self.saved, user, memory_id, where)
        if expected is not None:
            with pytest.raises(expected):
                self.bank.delete(user, memory_id=memory_id, bank=where)
            return
        self.bank.delete(user, memory_id=memory_id, bank=where)
        self.saved.remove(memory_id)
        del self.saved.writers[memory_id]

    @invariant()
    def every_read_is_exactly_what_the_scopes_allow(self) -> None:
        check_every_read(self.bank, self.saved, self.team.everyone())


class OrgBankStatefulContract:
    """The team's bank under interleaved saves, edits and deletes of people of two organizations."""

    #: Override in a subclass for a longer or a quicker run.
    org_bank_settings = settings(
        max_examples=25, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )

    def test_people_of_two_organizations_interleaving_see_exactly_what_their_scopes_allow(
        self, backend_factory: BackendFactory
    ) -> None:
        run_state_machine_as_test(
            lambda: OrgBankMachine(backend_factory),  # type: ignore[arg-type]  # hypothesis accepts any factory
            settings=self.org_bank_settings,
        )
