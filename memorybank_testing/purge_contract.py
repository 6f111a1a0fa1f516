"""The offboarding purge's contract (`PurgeStore`), driven through `Offboarding` as `memorybank purge` and a
host's deletion hook drive it.

Each test saves memories for three users in two organizations through the bank, issues their API tokens
and panel sessions, purges one user or one organization, and checks through the ports what is gone and
what stayed: the subject's memories (with contexts), tokens and sessions go; nobody else's change. The
receipt counts exactly, batches are bounded, a rerun resumes or removes nothing, the digest chains the
removed ids, and two purges of one subject at once share one run. Needs the backend's `purge_store`,
`token_store` and `panel_sessions`.
"""

from __future__ import annotations

import threading
from datetime import datetime

import attrs
import pytest

from memorybank_core import (
    ORG_ADMIN_SCOPE,
    ORG_READ_SCOPE,
    ORG_WRITE_SCOPE,
    READ_SCOPE,
    WRITE_SCOPE,
    EditRequest,
    InvalidInputError,
    MemoryBank,
    RecordingEventSink,
    TokenService,
    org_bank_owner,
)
from memorybank_core.bodies import JsonValue
from memorybank_core.ids import ORGANIZATION_PREFIX, PURGE_RUN_PREFIX, new_id
from memorybank_core.offboarding import (
    Offboarding,
    PurgeCounts,
    PurgeReceipt,
    PurgeRun,
    PurgeStore,
    PurgeSubject,
    chain_digest,
    first_digest,
)
from memorybank_core.panel_sessions import PanelSessions
from memorybank_core.wire import memory_json
from memorybank_testing.backends import Backend
from memorybank_testing.principals import User, start_clock

#: What purging alice removes: 4 + 2 memories, their 4 contexts, 2 tokens, a session and a link.
ALICE = (6, 4, 2, 2)


class Population:
    """alice and bob in organization A, carol in B; alice also saved under B and holds a token for B."""

    def __init__(self, backend: Backend, bank: MemoryBank) -> None:
        self.org_a, self.org_b = new_id(ORGANIZATION_PREFIX), new_id(ORGANIZATION_PREFIX)
        self.alice = User(organization_id=self.org_a)
        self.alice_in_b = User(user_id=self.alice.user_id, organization_id=self.org_b)
        self.bob = User(organization_id=self.org_a)
        self.carol = User(organization_id=self.org_b)
        self.bank = bank
        self.store = backend.require(backend.purge_store, "purge_store")
        self.tokens = TokenService(store=backend.require(backend.token_store, "token_store"), clock=start_clock())
        sessions = backend.require(backend.panel_sessions, "panel_sessions")
        self.sessions = PanelSessions(store=sessions, tokens=self.tokens, clock=start_clock())
        self.saved_ids: dict[tuple[str, str], list[str]] = {}
        """Per (user, organization): the ids of the memories saved and of their contexts."""
        contexts = [{"snippet": "from the harbor chat", "conversation_id": "c1"}, {"snippet": "second"}]
        for user, count in ((self.alice, 4), (self.alice_in_b, 2), (self.bob, 3), (self.carol, 2)):
            for n in range(count):
                saved = bank.save(user, JsonValue({"content": f"lighthouse note {n}", "contexts": contexts[: n % 3]}))
                ids = self.saved_ids.setdefault((user.user_id, user.organization_id), [])
                ids += [saved.id, *(c.id for c in saved.contexts)]
        self.secrets: dict[str, str] = {}
        self.panel: dict[str, tuple[str, str]] = {}
        """Per user: a session's secret and an unused link's code."""
        for user in (self.alice, self.bob, self.carol):
            self.secrets[user.user_id] = self.tokens.issue(user_id=user.user_id, org_id=user.organization_id).secret
            session = self.sessions.start(user)
            link = self.sessions.issue_link(user_id=user.user_id, org_id=user.organization_id)
            self.panel[user.user_id] = (session.secret, link.code)
        # A token of alice's for organization B: a purge of organization A leaves it alone.
        self.alice_for_b = self.tokens.issue(user_id=self.alice.user_id, org_id=self.org_b).secret

    def offboarding(self, store: PurgeStore | None = None, events: RecordingEventSink | None = None) -> Offboarding:
        return Offboarding(store=store or self.store, clock=start_clock(), events=events)

    def memories(self, user: User) -> int:
        """How many memories the user has, under any organization."""
        return len(self.bank.list(user, limit=100).memories)

    def signed_in(self, user: User) -> bool:
        """Whether any of the user's credentials still works (each is tried; none is used up)."""
        session, _link = self.panel[user.user_id]
        return (
            self.tokens.authenticate(self.secrets[user.user_id]) is not None
            or self.sessions.authenticate(session) is not None
        )


def removed(receipt: PurgeReceipt) -> tuple[int, int, int, int]:
    counts = receipt.counts
    return (counts.memories, counts.contexts, counts.tokens, counts.panel_sessions)


class PurgeContract:
    """Offboarding: a user's or an organization's memories, tokens and sessions go, in batches, with a receipt."""

    @pytest.fixture
    def population(self, backend: Backend, bank: MemoryBank) -> Population:
        return Population(backend, bank)

    def test_purging_one_user_removes_all_of_theirs_and_nothing_of_anyone_elses(
        self, population: Population, backend: Backend
    ) -> None:
        token_store = backend.require(backend.token_store, "token_store")
        alice, bob, carol = population.alice, population.bob, population.carol
        generation = token_store.revocation_generation()
        _session, link = population.panel[alice.user_id]
        events = RecordingEventSink()

        receipt = population.offboarding(events=events).purge_user(alice.user_id, batch_size=2)

        assert removed(receipt) == ALICE
        assert receipt.batches == 3  # 6 memories, two at a time
        assert population.memories(alice) == 0  # under both organizations
        assert population.bank.search(alice, query="lighthouse") == []
        assert backend.store.usage(user_id=alice.user_id).memories == 0
        assert not population.signed_in(alice)
        assert population.tokens.authenticate(population.alice_for_b) is None
        assert population.sessions.redeem_link(link) is None
        assert all(token.revoked_at is not None for token in token_store.list(user_id=alice.user_id))
        assert token_store.revocation_generation() != generation
        # Everyone else's memories, tokens and sessions are as they were.
        assert (population.memories(bob), population.memories(carol)) == (3, 2)
        assert len(population.bank.search(bob, query="lighthouse")) == 3
        assert population.signed_in(bob)
        assert population.signed_in(carol)
        # The receipt names what was asked; the events carry ids and counts, never content.
        kept = receipt.to_json()
        assert kept["subject"] == {"kind": "user", "id": alice.user_id}
        assert kept["removed"] == {
            **dict(zip(["memories", "contexts", "tokens", "panel_sessions"], ALICE, strict=True)),
            "team_memories": 0,
        }
        assert str(kept["run_id"]).startswith(f"{PURGE_RUN_PREFIX}_")
        assert kept["dry_run"] is False
        assert str(kept["started_at"]) <= str(kept["finished_at"])
        assert [name for name, _fields in events.events] == ["purge.started", "purge.finished"]
        finished = events.events[-1][1]
        assert (finished["run_id"], finished["subject_id"], finished["memories"]) == (
            receipt.run_id,
            alice.user_id,
            ALICE[0],
        )
        assert "lighthouse" not in repr(events.events)

    def test_purging_one_organization_removes_what_was_saved_under_it_only(self, population: Population) -> None:
        alice, bob, carol = population.alice, population.bob, population.carol
        in_a = [i for (_user, org), ids in population.saved_ids.items() if org == population.org_a for i in ids]

        receipt = population.offboarding().purge_organization(population.org_a, batch_size=3)

        assert removed(receipt) == (7, len(in_a) - 7, 2, 4)
        assert (population.memories(alice), population.memories(bob)) == (2, 0)
        # alice's memories under B, and her token for B, stay; her usage counts just those.
        assert population.bank.usage(population.alice_in_b).usage.memories == 2
        assert population.tokens.authenticate(population.alice_for_b) is not None
        assert not population.signed_in(bob)
        assert population.signed_in(carol)
        assert population.memories(carol) == 2

    def test_an_organizations_purge_removes_its_team_bank_and_a_persons_keeps_the_team_memories_they_wrote(
        self, population: Population, backend: Backend
    ) -> None:
        member = frozenset({READ_SCOPE, WRITE_SCOPE, ORG_READ_SCOPE, ORG_WRITE_SCOPE})
        alice, bob, carol = (
            User(user_id=user.user_id, organization_id=user.organization_id, scopes=member)
            for user in (population.alice, population.bob, population.carol)
        )
        team = {"contexts": [{"snippet": "from the team chat"}], "bankScope": "org"}
        for author, n in ((alice, 1), (bob, 2), (carol, 3)):
            population.bank.save(author, JsonValue({"content": f"team lighthouse {n}", **team}))
        alice_in_b = attrs.evolve(population.alice_in_b, scopes=member)
        population.bank.save(alice_in_b, JsonValue({"content": "team lighthouse in B", **team}))
        bobs = population.saved_ids[(bob.user_id, population.org_a)]  # his 3 memories and their contexts

        would = population.offboarding().purge_user(alice.user_id, dry_run=True)
        # A dry run marks nothing.
        assert not any(m.author_former_member for m in population.bank.list(bob, bank="org").memories)
        kept = population.offboarding().purge_user(alice.user_id, batch_size=1)
        assert removed(kept)[:2] == ALICE[:2]  # her own memories only: the team memories she wrote are the teams'
        # The receipt counts them apart: removed, her own; kept, the team memories she wrote in both organizations.
        assert (would.kept_team_memories, kept.kept_team_memories) == (2, 2)
        assert kept.to_json()["kept"] == {"team_memories": 2}
        team_a = population.bank.list(bob, bank="org").memories
        assert [(m.content, m.author, m.author_former_member) for m in team_a] == [
            ("team lighthouse 2", bob.user_id, False),
            ("team lighthouse 1", alice.user_id, True),  # a former member's: still named as its author
        ]
        # Marked in the memory itself, nothing else of it changed; every read shows it (search, by id, the wire).
        assert (team_a[1].revision, team_a[1].updated_at) == (1, team_a[1].created_at)
        found = population.bank.search(bob, query="team lighthouse", bank="org")
        assert {r.memory.id: r.memory.author_former_member for r in found} == {team_a[0].id: False, team_a[1].id: True}
        assert memory_json(team_a[1])["author_former_member"] is True
        assert memory_json(team_a[0])["author_former_member"] is False
        # An admin's edit of it keeps the mark.
        admin = attrs.evolve(bob, scopes=bob.scopes | {ORG_ADMIN_SCOPE})
        edited = population.bank.edit(
            admin, memory_id=team_a[1].id, request=EditRequest.parse({"content": "team lighthouse one"}), bank="org"
        )
        assert (edited.author, edited.author_former_member) == (alice.user_id, True)
        assert [m.author_former_member for m in population.bank.list(bob, bank="org").memories] == [False, True]

        # Alice's own memories under A went with her purge; the organization's purge takes the rest and the bank.
        dry = population.offboarding().purge_organization(population.org_a, dry_run=True)
        assert removed(dry)[:2] == (3 + 2, len(bobs) - 3 + 2)
        receipt = population.offboarding().purge_organization(population.org_a, batch_size=2)
        assert removed(receipt)[:2] == removed(dry)[:2]
        # Of them, the team bank's two, counted apart (the members' own are the rest).
        assert (dry.counts.team_memories, receipt.counts.team_memories) == (2, 2)
        removed_json = receipt.to_json()["removed"]
        assert isinstance(removed_json, dict)
        assert removed_json["team_memories"] == 2
        assert (dry.kept_team_memories, receipt.kept_team_memories) == (0, 0)  # the bank goes whole
        assert population.offboarding().purge_user(alice.user_id, dry_run=True).kept_team_memories == 1  # B's
        assert population.bank.list(bob, bank="org").memories == ()
        assert population.bank.search(bob, query="lighthouse", bank="org") == []
        assert backend.store.usage(user_id=org_bank_owner(population.org_a)).memories == 0
        # Another organization's team bank is as it was.
        assert [
            (m.content, m.author, m.author_former_member) for m in population.bank.list(carol, bank="org").memories
        ] == [
            ("team lighthouse in B", alice.user_id, True),
            ("team lighthouse 3", carol.user_id, False),
        ]

    def test_a_dry_run_counts_and_changes_nothing(self, population: Population) -> None:
        offboarding = population.offboarding()

        receipt = offboarding.purge_user(population.alice.user_id, dry_run=True)
        organization = offboarding.purge_organization(population.org_b, dry_run=True)

        assert receipt.dry_run
        assert (receipt.run_id, receipt.digest, receipt.batches) == (None, None, 0)
        assert removed(receipt) == ALICE
        assert (organization.counts.memories, organization.counts.tokens) == (4, 2)
        assert population.memories(population.alice) == 6
        assert population.signed_in(population.alice)
        assert population.tokens.authenticate(population.alice_for_b) is not None

    def test_a_bad_or_wildcard_id_is_refused_and_changes_nothing(self, population: Population) -> None:
        offboarding = population.offboarding()
        for bad in ["", "%", "*", "usr_%", "usr_*", population.org_a, population.alice.user_id + " OR 1=1"]:
            with pytest.raises(InvalidInputError):
                offboarding.purge_user(bad)
        with pytest.raises(InvalidInputError):
            offboarding.purge_organization(population.alice.user_id)

        assert (population.memories(population.alice), population.memories(population.bob)) == (6, 3)
        assert population.signed_in(population.alice)

    def test_the_digest_chains_each_batchs_ids_and_a_rerun_removes_nothing_more(self, population: Population) -> None:
        alice = population.alice.user_id
        everything = [i for (user_id, _org), ids in population.saved_ids.items() if user_id == alice for i in ids]
        first = population.offboarding().purge_user(alice, batch_size=10)

        again = population.offboarding().purge_user(alice)

        assert first.batches == 1
        assert first.digest == chain_digest(first_digest(PurgeSubject.user(alice)), everything)
        assert again.run_id != first.run_id
        assert not again.resumed
        assert removed(again) == (0, 0, 0, 0)
        assert again.digest == first_digest(PurgeSubject.user(alice))
        assert population.memories(population.bob) == 3

    def test_an_interrupted_run_is_resumed_and_its_receipt_counts_the_whole_run(self, population: Population) -> None:
        store, subject, clock = population.store, PurgeSubject.user(population.alice.user_id), start_clock()
        # What a process killed after its first batch leaves behind.
        run, resumed = store.open_run(subject=subject, run_id=new_id(PURGE_RUN_PREFIX), at=clock.now())
        run = store.revoke_credentials(run=run, at=clock.now())
        run = store.remove_batch(run=run, user_id=subject.id, org_id=None, limit=4, at=clock.now())
        assert not resumed
        assert run.counts.memories == 4

        receipt = population.offboarding().purge_user(subject.id, batch_size=4)

        assert receipt.resumed
        assert receipt.run_id == run.id
        assert removed(receipt) == ALICE
        assert receipt.batches == 2  # the interrupted process's, then the rest
        assert population.memories(population.alice) == 0

    def test_two_purges_of_one_user_at_once_share_one_run_and_count_each_row_once(self, population: Population) -> None:
        receipts: list[PurgeReceipt] = []
        failures: list[BaseException] = []
        barrier = threading.Barrier(2)

        def purge() -> None:
            offboarding = population.offboarding(_BothOpenFirst(population.store, barrier))
            try:
                receipts.append(offboarding.purge_user(population.alice.user_id, batch_size=2))
            except BaseException as error:  # reported below, with the other thread's result
                failures.append(error)

        threads = [threading.Thread(target=purge) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)

        assert failures == []
        assert len({receipt.run_id for receipt in receipts}) == 1
        assert sorted(receipt.resumed for receipt in receipts) == [False, True]
        assert [removed(receipt) for receipt in receipts] == [ALICE, ALICE]
        assert population.memories(population.alice) == 0

    def test_a_purge_leaves_no_earlier_version_behind(self, population: Population, backend: Backend) -> None:
        # Hard delete stays hard: were any kept version left, the same memory imported again would show it.
        alice, bank = population.alice, population.bank
        saved = bank.save(alice, JsonValue({"content": "draft one of the lighthouse log"}))
        for draft in ("two", "three"):
            bank.edit(alice, memory_id=saved.id, request=EditRequest.parse({"content": f"draft {draft}"}))

        population.offboarding().purge_user(alice.user_id, batch_size=2)
        backend.require(backend.bulk_writer, "bulk_writer").add_many([attrs.evolve(saved, revision=3)])

        assert backend.store.revisions(user_id=alice.user_id, memory_id=saved.id, limit=10, before=None) == []


class _BothOpenFirst(PurgeStore):
    """A purge store that holds each purge after it opened its run until the other one has opened too."""

    def __init__(self, store: PurgeStore, barrier: threading.Barrier) -> None:
        self._store = store
        self._barrier = barrier

    def open_run(self, *, subject: PurgeSubject, run_id: str, at: datetime) -> tuple[PurgeRun, bool]:
        return self._store.open_run(subject=subject, run_id=run_id, at=at)

    def revoke_credentials(self, *, run: PurgeRun, at: datetime) -> PurgeRun:
        self._barrier.wait(timeout=30)
        return self._store.revoke_credentials(run=run, at=at)

    def owners_in_organization(self, *, org_id: str) -> list[str]:
        return list(self._store.owners_in_organization(org_id=org_id))

    def team_memories_written_by(self, *, user_id: str) -> int:
        return self._store.team_memories_written_by(user_id=user_id)

    def mark_former_member(self, *, user_id: str, limit: int) -> int:
        return self._store.mark_former_member(user_id=user_id, limit=limit)

    def remove_batch(self, *, run: PurgeRun, user_id: str, org_id: str | None, limit: int, at: datetime) -> PurgeRun:
        return self._store.remove_batch(run=run, user_id=user_id, org_id=org_id, limit=limit, at=at)

    def finish(self, *, run: PurgeRun, at: datetime) -> PurgeRun:
        return self._store.finish(run=run, at=at)

    def count(self, *, subject: PurgeSubject, at: datetime) -> PurgeCounts:
        return self._store.count(subject=subject, at=at)
