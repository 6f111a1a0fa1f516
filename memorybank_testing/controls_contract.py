"""Quotas and the memory gate: every backend passes these unchanged.

Driven through the use cases (`MemoryBank` for a principal, `MemoryControls` for an operator),
so they assert what a host and an operator rely on, whatever stores the memories. The controls
are the backend's `ControlStore` (the in-memory one unless the factory gives its own).
"""

from __future__ import annotations

import threading

import pytest

from memorybank_core import (
    Body,
    InvalidInputError,
    MemoryBank,
    MemoryControls,
    MemoryDisabledError,
    NotFoundError,
    Quota,
    QuotaExceededError,
    RecordingEventSink,
    SubjectKind,
    Usage,
    charged_characters,
)
from memorybank_core.bodies import JsonValue
from memorybank_testing.backends import Backend
from memorybank_testing.principals import User, bank_over

#: Saves racing for the last place under a quota: one must win, every other is refused.
RACING_SAVES = 6


class ControlsContract:
    """Quotas and the memory gate, driven as a principal (`MemoryBank`) and as an operator (`MemoryControls`)."""

    def test_a_save_over_the_memory_quota_is_refused_and_writes_nothing(
        self, bank: MemoryBank, controls: MemoryControls, alice: User
    ) -> None:
        controls.set_quota(SubjectKind.USER, alice.user_id, max_memories=2)
        kept = [bank.save(alice, JsonValue({"content": f"note {n}"})).id for n in range(2)]

        with pytest.raises(QuotaExceededError) as refused:
            bank.save(alice, JsonValue({"content": "one too many"}))

        assert refused.value.exceeded == ("memories",)
        assert refused.value.limit["memories"] == 2
        assert refused.value.used["memories"] == 2
        assert [m.id for m in bank.list(alice).memories] == kept[::-1]
        assert bank.search(alice, query="many") == []

    def test_concurrent_saves_at_the_quota_boundary_store_exactly_one(
        self, bank: MemoryBank, controls: MemoryControls, alice: User
    ) -> None:
        # The MemoryStore.add promise: the quota check and the write are one step, race-safe across saves.
        controls.set_quota(SubjectKind.USER, alice.user_id, max_memories=3)
        for n in range(2):
            bank.save(alice, JsonValue({"content": f"before the race {n}"}))
        start = threading.Barrier(RACING_SAVES)
        outcomes: list[str] = []

        def save(n: int) -> None:
            start.wait(timeout=30)
            try:
                bank.save(alice, JsonValue({"content": f"racing save {n}"}))
                outcomes.append("saved")
            except QuotaExceededError:
                outcomes.append("refused")

        threads = [threading.Thread(target=save, args=(n,)) for n in range(RACING_SAVES)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)

        assert sorted(outcomes) == ["refused"] * (RACING_SAVES - 1) + ["saved"]
        assert len(bank.list(alice).memories) == 3
        assert controls.effective(user_id=alice.user_id).usage.memories == 3

    def test_characters_count_content_tags_and_snippets_in_plaintext(
        self, bank: MemoryBank, controls: MemoryControls, alice: User
    ) -> None:
        saved = bank.save(alice, JsonValue({"content": "héllo 🎉", "tags": ["ab"], "contexts": [{"snippet": "xyz"}]}))
        assert charged_characters(saved) == len("héllo 🎉") + 2 + 3
        assert controls.effective(user_id=alice.user_id).usage == Usage(
            memories=1, characters=charged_characters(saved)
        )

        controls.set_quota(SubjectKind.USER, alice.user_id, max_characters=charged_characters(saved) + 4)
        bank.save(alice, JsonValue({"content": "four"}))
        with pytest.raises(QuotaExceededError) as refused:
            bank.save(alice, JsonValue({"content": "x"}))
        assert refused.value.exceeded == ("characters",)
        assert refused.value.requested == {"memories": 1, "characters": 1}

    def test_deleting_frees_quota_for_a_new_save(self, bank: MemoryBank, controls: MemoryControls, alice: User) -> None:
        controls.set_quota(SubjectKind.USER, alice.user_id, max_memories=1, max_characters=10)
        first = bank.save(alice, JsonValue({"content": "ten chars!"}))
        with pytest.raises(QuotaExceededError):
            bank.save(alice, JsonValue({"content": "more"}))

        bank.delete(alice, memory_id=first.id)

        assert controls.effective(user_id=alice.user_id).usage == Usage()
        bank.save(alice, JsonValue({"content": "ten again!"}))

    def test_one_users_quota_does_not_touch_another(
        self, bank: MemoryBank, controls: MemoryControls, alice: User
    ) -> None:
        bob = User(organization_id=alice.organization_id)
        controls.set_quota(SubjectKind.USER, alice.user_id, max_memories=0)
        with pytest.raises(QuotaExceededError):
            bank.save(alice, JsonValue({"content": "refused"}))
        bank.save(bob, JsonValue({"content": "fine"}))
        assert controls.effective(user_id=bob.user_id).usage.memories == 1

    def test_a_users_quota_wins_over_the_organizations_which_wins_over_the_default(
        self, backend: Backend, controls: MemoryControls, alice: User
    ) -> None:
        bank = bank_over(backend, default_quota=Quota(max_memories=1))
        colleague = User(organization_id=alice.organization_id)
        bank.save(alice, JsonValue({"content": "one"}))
        with pytest.raises(QuotaExceededError):
            bank.save(alice, JsonValue({"content": "two"}))

        controls.set_quota(SubjectKind.ORG, alice.organization_id, max_memories=2)
        bank.save(alice, JsonValue({"content": "two"}))
        controls.set_quota(SubjectKind.USER, colleague.user_id, max_memories=0)
        with pytest.raises(QuotaExceededError):
            bank.save(colleague, JsonValue({"content": "refused by the user's own quota"}))
        effective = controls.effective(user_id=alice.user_id, org_id=alice.organization_id)
        assert effective.policy.quota == Quota(max_memories=2)
        # A user's own quota wins when it is larger too: one member may store more than the rest.
        controls.set_quota(SubjectKind.USER, alice.user_id, max_memories=3)
        bank.save(alice, JsonValue({"content": "three, above the organization's two"}))
        with pytest.raises(QuotaExceededError):
            bank.save(alice, JsonValue({"content": "four"}))

    def test_a_delete_of_a_missing_memory_leaves_the_usage_alone(
        self, bank: MemoryBank, controls: MemoryControls, alice: User, bob: User
    ) -> None:
        bank.save(alice, JsonValue({"content": "mine"}))
        theirs = bank.save(bob, JsonValue({"content": "theirs"}))
        with pytest.raises(NotFoundError):
            bank.delete(alice, memory_id=theirs.id)
        assert controls.effective(user_id=alice.user_id).usage.memories == 1
        assert controls.effective(user_id=bob.user_id).usage.memories == 1

    def test_switching_a_user_off_refuses_every_memory_operation(
        self, bank: MemoryBank, controls: MemoryControls, alice: User, events: RecordingEventSink
    ) -> None:
        saved = bank.save(alice, JsonValue({"content": "kept while off"}))
        controls.set_gate(SubjectKind.USER, alice.user_id, enabled=False)

        for attempt in (
            lambda: bank.save(alice, JsonValue({"content": "new"})),
            lambda: bank.save(alice, JsonValue({"not": "even valid"})),
            lambda: bank.search(alice, query="kept"),
            lambda: bank.search(alice, query="", limit=0),  # the gate before any bound is checked
            lambda: bank.list(alice),
            lambda: bank.list(alice, limit="many", cursor="forged"),
            lambda: bank.delete(alice, memory_id=saved.id),
            lambda: bank.delete_batch(alice, JsonValue({"confirm": "not the word", "limit": 0})),
            lambda: bank.save(alice, _UnreadBody()),
            lambda: bank.delete_batch(alice, _UnreadBody()),
        ):
            with pytest.raises(MemoryDisabledError):
                attempt()
        assert not bank.memory_enabled(alice)

        controls.set_gate(SubjectKind.USER, alice.user_id, enabled=True)
        assert [m.id for m in bank.list(alice).memories] == [saved.id]
        refusals = [fields for name, fields in events.events if name == "memory.gate_refused"]
        assert {fields["operation"] for fields in refusals} == {"save", "search", "list", "delete", "delete_all"}
        assert len(refusals) == 10
        assert all(fields["switch"] == "user" and fields["user_id"] == alice.user_id for fields in refusals)

    def test_the_kill_switch_beats_the_organization_which_beats_the_user(
        self, bank: MemoryBank, controls: MemoryControls, alice: User
    ) -> None:
        colleague = User(organization_id=alice.organization_id)
        elsewhere = User()
        controls.set_gate(SubjectKind.USER, alice.user_id, enabled=True)
        controls.set_gate(SubjectKind.ORG, alice.organization_id, enabled=False)
        # Switched on as a user, off as an organization: off wins.
        assert not bank.memory_enabled(alice)
        assert not bank.memory_enabled(colleague)
        assert bank.memory_enabled(elsewhere)

        controls.set_gate(SubjectKind.ORG, alice.organization_id, enabled=True)
        controls.set_gate(SubjectKind.USER, colleague.user_id, enabled=False)
        # The organization on, the user off: still off for that user alone.
        assert bank.memory_enabled(alice)
        assert not bank.memory_enabled(colleague)

        controls.set_gate(SubjectKind.ALL, None, enabled=False)
        assert not any(bank.memory_enabled(user) for user in (alice, colleague, elsewhere))
        assert controls.effective(user_id=alice.user_id, org_id=alice.organization_id).policy.switched_off_by is (
            SubjectKind.ALL
        )

        controls.set_gate(SubjectKind.ALL, None, enabled=True)
        assert bank.memory_enabled(alice)
        assert bank.memory_enabled(elsewhere)

    def test_clearing_a_subject_returns_it_to_the_next_level(
        self, bank: MemoryBank, controls: MemoryControls, alice: User
    ) -> None:
        controls.set_gate(SubjectKind.USER, alice.user_id, enabled=False)
        controls.set_quota(SubjectKind.USER, alice.user_id, max_memories=0)
        assert controls.clear(SubjectKind.USER, alice.user_id)
        assert not controls.clear(SubjectKind.USER, alice.user_id)
        bank.save(alice, JsonValue({"content": "on again, default quota"}))

    def test_unsetting_a_quota_returns_it_to_the_next_level_and_keeps_the_gate(
        self, bank: MemoryBank, controls: MemoryControls, alice: User
    ) -> None:
        controls.set_quota(SubjectKind.ORG, alice.organization_id, max_memories=1)
        controls.set_quota(SubjectKind.USER, alice.user_id, max_memories=0)
        controls.set_gate(SubjectKind.USER, alice.user_id, enabled=True)
        with pytest.raises(QuotaExceededError):
            bank.save(alice, JsonValue({"content": "refused by the user's own quota"}))

        assert controls.unset_quota(SubjectKind.USER, alice.user_id)
        assert not controls.unset_quota(SubjectKind.USER, alice.user_id)

        bank.save(alice, JsonValue({"content": "within the organization's quota of one"}))
        with pytest.raises(QuotaExceededError):
            bank.save(alice, JsonValue({"content": "over the organization's quota"}))
        [kept] = [c for c in controls.list() if c.kind is SubjectKind.USER]
        assert (kept.enabled, kept.max_memories, kept.max_characters) == (True, None, None)

        assert controls.unset_quota(SubjectKind.ORG, alice.organization_id)
        # The organization's control held nothing else, so it is gone; the default quota applies.
        assert [c.kind for c in controls.list()] == [SubjectKind.USER]
        bank.save(alice, JsonValue({"content": "the default quota again"}))

    def test_everyones_quota_is_a_server_option_not_unset_here(self, controls: MemoryControls) -> None:
        with pytest.raises(InvalidInputError):
            controls.unset_quota(SubjectKind.ALL, None)

    @pytest.mark.parametrize(
        ("kind", "value"),
        [
            (SubjectKind.USER, ""),
            (SubjectKind.USER, "*"),
            (SubjectKind.USER, "usr_%"),
            (SubjectKind.USER, "has space"),
            (SubjectKind.USER, "x" * 65),
            (SubjectKind.USER, "org_01jxxxxxxxxxxxxxxxxxxxxxxx"),
            (SubjectKind.USER, "usr_notatypeid"),
            (SubjectKind.ORG, "usr_01h455vb4pex5vsknk084sn02q"),
            (SubjectKind.ORG, None),
        ],
    )
    def test_a_malformed_or_wildcard_id_is_refused_and_changes_nothing(
        self, controls: MemoryControls, kind: SubjectKind, value: str | None
    ) -> None:
        with pytest.raises(InvalidInputError):
            controls.set_gate(kind, value, enabled=False)
        with pytest.raises(InvalidInputError):
            controls.set_quota(kind, value, max_memories=1)
        with pytest.raises(InvalidInputError):
            controls.unset_quota(kind, value)
        assert list(controls.list()) == []

    @pytest.mark.parametrize("value", [-1, 10**12 + 1, True, 1.5])
    def test_a_quota_outside_its_bounds_is_refused(self, controls: MemoryControls, alice: User, value: object) -> None:
        with pytest.raises(InvalidInputError):
            controls.set_quota(SubjectKind.USER, alice.user_id, max_memories=value)  # type: ignore[arg-type]
        assert list(controls.list()) == []

    def test_gate_changes_are_recorded_as_events_with_ids_only(
        self, controls: MemoryControls, alice: User, events: RecordingEventSink
    ) -> None:
        controls.set_gate(SubjectKind.ORG, alice.organization_id, enabled=False)
        controls.set_gate(SubjectKind.ALL, None, enabled=False)
        changes = [fields for name, fields in events.events if name == "memory.gate_changed"]
        assert [(c["subject_kind"], c["subject_id"], c["enabled"]) for c in changes] == [
            ("org", alice.organization_id, 0),
            ("all", "*", 0),
        ]
        assert [(c.kind, c.subject_id) for c in controls.list()] == [
            (SubjectKind.ALL, "*"),
            (SubjectKind.ORG, alice.organization_id),
        ]


class _UnreadBody(Body):
    """A facade's body that must not be read: the gate comes first."""

    def value(self) -> object:
        raise AssertionError("the body was read before the gate")
