"""The use cases: save, search, list, edit and delete, all owner-scoped.

Policy lives here and only here: scope forcing, input bounds, required scopes,
and 'not found' looking the same as 'not yours'.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from datetime import datetime
from typing import Any

import attrs

from memorybank_core import events, ids, limits
from memorybank_core.banks import (
    ORG_ADMIN_SCOPE,
    ORG_READ_SCOPE,
    ORG_WRITE_SCOPE,
    BankScope,
    is_org_bank_owner,
    org_bank_owner,
)
from memorybank_core.bodies import Body
from memorybank_core.clock import SystemClock
from memorybank_core.configuration import BankSettings
from memorybank_core.conflicts import RevisionConflictError
from memorybank_core.controls import resolve
from memorybank_core.cursor import decode_cursor, encode_cursor
from memorybank_core.entities import (
    DeletedBatch,
    Door,
    ExportedMemory,
    Memory,
    MemoryChange,
    MemoryPage,
    Policy,
    Quota,
    RevisionPage,
    Scope,
    SearchResult,
    Source,
    UsageReport,
    WrittenBy,
)
from memorybank_core.errors import (
    ForbiddenError,
    InvalidInputError,
    MemoryDisabledError,
    NotAuthorError,
    NotFoundError,
    QuotaExceededError,
    SecretDetectedError,
)
from memorybank_core.events import LoggingEventSink
from memorybank_core.history import with_history
from memorybank_core.ports import (
    Clock,
    ControlStore,
    EventSink,
    ListPosition,
    MemoryStore,
    NoUnitOfWork,
    Principal,
    SearchEngine,
    SearchHits,
    SecretScreen,
    UnitOfWork,
)
from memorybank_core.requests import DeleteAll, EditRequest, SaveRequest, build_contexts
from memorybank_core.secret_screening import screen_edit, screen_request
from memorybank_core.validation import check_characters, clean_text, clean_text_count

READ_SCOPE = "mcp:read"
WRITE_SCOPE = "mcp:write"
#: Characters of text above which a save hands its facade's connection back while the secret screen runs: about
#: 0.2 ms of screening, the price of handing a pooled connection back and taking it again.
SCREEN_WITHOUT_CONNECTION_ABOVE = 1_000
INCLUDE_RETIRED = "retired"
"""What a list's `include` says to list retired memories too."""
SIMILAR_MIN_SHARE = 0.3
"""A current memory is `similar` to a new one when the engine scores it at least this share of the new memory's
own score, with the new memory's words as the query: the share for an engine that names none of its own (an
optional `similar_min_share` attribute), such as lexical BM25. benchmarks/similar.py measures the choice
(docs/search.md): 54 % of replaced memories found, 3 % of unrelated saves flagged."""
#: Attempts of a change that named no revision, when another change lands between its read and its write.
_CHANGE_ATTEMPTS = 3

_log = logging.getLogger("memorybank.bank")


class MemoryBank:
    """The service a facade calls: one method per use case, each taking the calling principal."""

    def __init__(
        self,
        *,
        store: MemoryStore,
        search_engine: SearchEngine,
        clock: Clock | None = None,
        events: EventSink | None = None,
        new_id: Callable[[str], str] = ids.new_id,
        unit_of_work: UnitOfWork | None = None,
        controls: ControlStore | None = None,
        default_quota: Quota | None = None,
        secret_screen: SecretScreen | None = None,
        settings: BankSettings | None = None,
        similar_min_share: float | None = None,
    ) -> None:
        """`controls` holds the operators' gate switches and quotas (`memorybank_core.controls`); without it
        memory is on for everyone. `default_quota` applies where no operator set one (default: `Quota()`).
        `secret_screen` refuses saves holding credentials (`memorybank_core.secret_screening`); the composition
        root always wires one unless an operator turned it off, and a host embedding the bank should too.
        `settings` is what the operator configured for the use cases (`memorybank.settings` resolves it):
        `default_quota`, when given, wins over its quota; `revisions_kept` is how many earlier versions of each
        memory an edit keeps. `similar_min_share` is the share of a new memory's own score another needs to be
        `similar` (`similar`): by default the search engine's own (`similar_min_share` attribute), else
        `SIMILAR_MIN_SHARE`.
        """
        self.settings: BankSettings = settings or BankSettings()
        self.revisions_kept: int = self.settings.revisions_kept
        self.similar_min_share: float = (
            similar_min_share
            if similar_min_share is not None
            else getattr(search_engine, "similar_min_share", SIMILAR_MIN_SHARE)
        )
        self._store = store
        self._controls = controls
        self.default_quota: Quota = default_quota or self.settings.quota
        self._search = search_engine
        self.unit_of_work: UnitOfWork = unit_of_work or NoUnitOfWork()
        """Each use case runs in one unit (one connection); a facade may open it earlier, e.g. around auth."""
        self._clock = clock or SystemClock()
        self._events = events or LoggingEventSink()
        self._new_id = new_id
        self._secret_screen = secret_screen

    def save(
        self,
        principal: Principal,
        request: SaveRequest | Body,
        *,
        source: Source = Source.CHAT,
        door: Door = Door.REST,
    ) -> Memory:
        """Save a human-verified memory with its contexts in one atomic write.

        A host hands `request` as a `SaveRequest`; a facade hands the `Body` it received (`{content, tags?,
        contexts?, supersedes?}`), read here. The scope and the gate are checked first, so a caller without
        `mcp:write` or switched off learns nothing from the body. The stored scope is always 'user', whatever
        the caller sent, unless the body's `bankScope` is "org": then it is saved in the organization's bank
        (scope 'org', owned by `org_bank_owner`), with the principal as its author. `source` is the server's word,
        and so is `door` (recorded with the credential as who wrote this version). The memories named in
        `supersedes` (of the same bank) are retired in the same transaction: left out of search and lists, kept
        and restorable.

        Raises:
            ForbiddenError: the principal lacks `mcp:write` (or, for the org bank, `org:write`).
            NotAuthorError: (a ForbiddenError) `supersedes` names an org memory of another author, and the
                principal is no `org:admin`; nothing is written.
            MemoryDisabledError: an operator switched memory off for the principal; nothing is written.
            InvalidInputError: the body breaks a bound or a type rule; nothing is written.
            SecretDetectedError: (an InvalidInputError) the content, a tag or a snippet holds what looks like
                a credential; nothing is written, and the error names kind and place, never the secret.
            ScreenBudgetExceededError: (an InvalidInputError) the texts cost more than the screen's budget to
                judge; nothing is written (never stored unscreened).
            QuotaExceededError: the owner's storage quota is full; nothing is written.
            NotFoundError: an id in `supersedes` is not one of the caller's memories; nothing is written.
            UnavailableError: storage is down; nothing is written.
        """
        started = time.perf_counter()
        owner = _authorize(principal, WRITE_SCOPE)
        # Decoding, validation and the secret screen are CPU work: they run before the unit of work opens, so no
        # database connection waits on them (ADR 0031). What they refuse is raised after the gate.
        parsed: SaveRequest | None = None
        refusal: Exception | None = None
        try:
            parsed = self._screened(request)
        except Exception as error:
            refusal = error
        with self.unit_of_work():
            # The gate before validation: a switched-off account learns nothing else.
            policy = self._admit(principal, owner, "save")
            if isinstance(refusal, SecretDetectedError):
                self._emit(events.SECRET_REFUSED, started, user_id=owner, kinds=",".join(refusal.kinds))
            if refusal is not None:
                raise refusal
            assert parsed is not None  # noqa: S101 - set whenever nothing was refused
            if parsed.bank is not BankScope.USER:
                owner = _bank_owner(principal, WRITE_SCOPE, parsed.bank)
                policy = self._policy(owner, principal.organization_id)
            return self._save(owner, principal, parsed, source, policy, started, _written_by(principal, door))

    def _screened(self, request: SaveRequest | Body) -> SaveRequest:
        """`request` decoded, validated and screened for credentials (the save's CPU work, done outside the unit).

        A facade that opened the unit early (HTTP, around its token check) hands its connection back while a long
        text is screened; a short one costs less to screen than a connection costs to hand back and take again.
        """
        if isinstance(request, Body):
            request = SaveRequest.parse(request.value())
        elif not isinstance(request, SaveRequest):
            # A host handing raw data: say what to hand instead (its data may be untrusted, so never guess).
            raise TypeError("save takes a SaveRequest (SaveRequest.parse(data) for JSON-like data) or a Body")
        if self._secret_screen is not None and _screened_characters(request) > SCREEN_WITHOUT_CONNECTION_ABOVE:
            with self.unit_of_work.released():
                screen_request(self._secret_screen, request)
        else:
            screen_request(self._secret_screen, request)
        return request

    def _save(
        self,
        owner: str,
        principal: Principal,
        request: SaveRequest,
        source: Source,
        policy: Policy,
        started: float,
        written_by: WrittenBy,
    ) -> Memory:
        now = self._clock.now()
        shared = request.bank is BankScope.ORG
        memory = request.to_memory(
            memory_id=self._new_id(ids.MEMORY_PREFIX),
            user_id=owner,
            org_id=principal.organization_id,
            source=source,
            created_at=now,
            context_ids=[self._new_id(ids.CONTEXT_PREFIX) for _ in request.contexts],
            written_by=written_by,
            scope=Scope.ORG if shared else Scope.USER,
            author=principal.user_id if shared else None,
        )
        for attempt in range(_CHANGE_ATTEMPTS):
            retiring = self._retiring(principal, owner, request.supersedes, memory.id, now, written_by)
            try:
                self._store.add(user_id=owner, memory=memory, quota=policy.quota, retiring=retiring)
                break
            except QuotaExceededError as error:
                self._emit(events.QUOTA_REFUSED, started, user_id=owner, exceeded=",".join(error.exceeded))
                raise
            except RevisionConflictError:
                # A memory it replaces changed meanwhile: nothing was written; retire its newer version.
                if attempt == _CHANGE_ATTEMPTS - 1:
                    raise
        self._emit(
            events.SAVED,
            started,
            memory_id=memory.id,
            user_id=owner,
            context_count=len(memory.contexts),
            tag_count=len(memory.tags),
            content_length=len(memory.content),
            superseded=len(request.supersedes),
        )
        return memory

    def _retiring(
        self,
        principal: Principal,
        owner: str,
        memory_ids: Sequence[str],
        replacement: str,
        now: datetime,
        written_by: WrittenBy,
    ) -> list[MemoryChange]:
        """The changes retiring the owner's memories `memory_ids` in favour of `replacement`.

        Raises:
            NotFoundError: one of them is not the owner's (malformed, unknown, someone else's alike).
            NotAuthorError: one of them is an org memory the principal may not change.
        """
        if not memory_ids:
            return []
        if not all(ids.is_id(memory_id, prefix=ids.MEMORY_PREFIX) for memory_id in memory_ids):
            raise NotFoundError()
        found = self._store.get_many(user_id=owner, memory_ids=memory_ids)
        if len(found) != len(memory_ids):
            raise NotFoundError()
        for memory in found.values():
            _check_may_change(principal, memory)
        return [
            self._change(found[memory_id], now=now, written_by=written_by, retired_by=replacement)
            for memory_id in memory_ids
        ]

    def _change(self, previous: Memory, *, now: datetime, written_by: WrittenBy, **changes: Any) -> MemoryChange:
        """`previous` changed as `changes` say, as its next revision written now by `written_by`."""
        current = attrs.evolve(
            previous, revision=previous.revision + 1, updated_at=now, written_by=written_by, **changes
        )
        return MemoryChange(previous=previous, current=current, keep_revisions=self.revisions_kept)

    def edit(
        self,
        principal: Principal,
        *,
        memory_id: str,
        request: EditRequest | Body,
        if_match: Collection[int] | None = None,
        door: Door = Door.REST,
        bank: BankScope | str | None = None,
    ) -> Memory:
        """Change one of the principal's memories (of the bank `bank` names: their own, the default, or "org"):
        content, tags and/or contexts (`EditRequest`), or restore a retired one (`{"retired": false}`). The id and
        `created_at` stay; the version it replaces is kept.

        A host hands `request` as an `EditRequest`; a facade hands the `Body` it received, read with a save's
        bounds and secret screen. `if_match` (the revisions of an `If-Match` header; None: any) and the body's
        `revision` name the versions the change was based on: when the stored one is another, nothing is
        written. Without either, a change that raced another is applied to the newer version. A change that
        changes nothing answers the memory as it is, without a new revision.

        Raises:
            ForbiddenError: the principal lacks `mcp:write` (or, for the org bank, `org:write`).
            MemoryDisabledError: an operator switched memory off for the principal; nothing is written.
            NotFoundError: no such memory for this owner (malformed, unknown and someone else's alike).
            NotAuthorError: (a ForbiddenError) an org memory of another author, and the principal is no
                `org:admin`; nothing is written.
            InvalidInputError: the body breaks a bound or changes nothing; nothing is written.
            SecretDetectedError: (an InvalidInputError) a text it writes looks like a credential.
            RevisionConflictError: the memory is not at a revision the caller named; it carries the current one.
            QuotaExceededError: the edit would take the owner over their quota; nothing is written.
            UnavailableError: storage is down; nothing is written.
        """
        started = time.perf_counter()
        owner = _authorize(principal, WRITE_SCOPE)
        # Decoding, validation and the secret screen before the unit opens, as for a save (ADR 0031); what they
        # refuse is raised after the gate, so a switched-off account learns nothing from them.
        parsed: EditRequest | None = None
        refusal: Exception | None = None
        try:
            parsed = self._screened_edit(request)
        except Exception as error:
            refusal = error
        with self.unit_of_work():
            policy = self._admit(principal, owner, "edit")
            if isinstance(refusal, SecretDetectedError):
                self._emit(events.SECRET_REFUSED, started, user_id=owner, kinds=",".join(refusal.kinds))
            if refusal is not None:
                raise refusal
            assert parsed is not None  # noqa: S101 - set whenever nothing was refused
            chosen = BankScope.parse(bank) if not isinstance(bank, BankScope) else bank
            if chosen is not BankScope.USER:
                owner = _bank_owner(principal, WRITE_SCOPE, chosen)
                policy = self._policy(owner, principal.organization_id)
            request = parsed
            allowed = _allowed_revisions(if_match, request.revision)
            if not ids.is_id(memory_id, prefix=ids.MEMORY_PREFIX):
                raise NotFoundError()
            written_by = _written_by(principal, door)
            for attempt in range(_CHANGE_ATTEMPTS):
                current = self._find(owner, memory_id)
                _check_may_change(principal, current)
                if allowed is not None and current.revision not in allowed:
                    raise RevisionConflictError(current)
                change = self._edited(current, request, written_by)
                if change is None:
                    return current
                try:
                    if not self._store.revise(user_id=owner, change=change, quota=policy.quota):
                        raise NotFoundError()
                except QuotaExceededError as error:
                    self._emit(events.QUOTA_REFUSED, started, user_id=owner, exceeded=",".join(error.exceeded))
                    raise
                except RevisionConflictError as error:
                    if allowed is not None or attempt == _CHANGE_ATTEMPTS - 1:
                        raise RevisionConflictError(self._find(owner, memory_id)) from error
                    continue
                self._emit(
                    events.EDITED,
                    started,
                    memory_id=memory_id,
                    user_id=owner,
                    revision=change.current.revision,
                    door=written_by.door.value,
                )
                return change.current
        raise AssertionError("unreachable: the last attempt returns or raises")  # pragma: no cover

    def _screened_edit(self, request: EditRequest | Body) -> EditRequest:
        """`request` read, validated and screened for credentials (CPU work, done outside the unit)."""
        if isinstance(request, Body):
            request = EditRequest.parse(request.value())
        elif not isinstance(request, EditRequest):
            # A host handing raw data: say what to hand instead (its data may be untrusted, so never guess).
            raise TypeError("edit takes an EditRequest (EditRequest.parse(data) for JSON-like data) or a Body")
        screen_edit(self._secret_screen, request)
        return request

    def _find(self, owner: str, memory_id: str) -> Memory:
        found = self._store.get_many(user_id=owner, memory_ids=[memory_id]).get(memory_id)
        if found is None:
            raise NotFoundError()
        return found

    def _edited(self, current: Memory, request: EditRequest, written_by: WrittenBy) -> MemoryChange | None:
        """The change `request` makes to `current`, or None when it changes nothing."""
        now = self._clock.now()
        contexts = current.contexts
        if request.contexts is not None and [_context_key(c) for c in current.contexts] != [
            (c.snippet, c.conversation_id, c.message_id, c.origin) for c in request.contexts
        ]:
            contexts = build_contexts(
                request.contexts,
                memory_id=current.id,
                context_ids=[self._new_id(ids.CONTEXT_PREFIX) for _ in request.contexts],
                created_at=now,
            )
        content = request.content if request.content is not None else current.content
        tags = request.tags if request.tags is not None else current.tags
        retired_by = None if request.restore else current.retired_by
        if (content, tags, contexts, retired_by) == (
            current.content,
            current.tags,
            current.contexts,
            current.retired_by,
        ):
            return None
        return self._change(
            current,
            now=now,
            written_by=written_by,
            content=content,
            tags=tags,
            contexts=contexts,
            retired_by=retired_by,
        )

    def revisions(
        self,
        principal: Principal,
        *,
        memory_id: str,
        limit: int | str | None = None,
        cursor: str | None = None,
        bank: BankScope | str | None = None,
    ) -> RevisionPage:
        """One of the principal's memories (of the bank `bank` names) as it is now, and a page of its versions,
        newest first: the current one first, then the earlier ones kept (`revisions_kept`). Pass `next_cursor`
        for the next page.

        Raises:
            ForbiddenError: the principal lacks `mcp:read` (or, for the org bank, `org:read`).
            MemoryDisabledError: an operator switched memory off for the principal.
            NotFoundError: no such memory for this owner (malformed, unknown and someone else's alike).
            InvalidInputError: `limit` is out of bounds or `cursor` is not one we issued.
        """
        started = time.perf_counter()
        owner = _authorize(principal, READ_SCOPE)
        with self.unit_of_work():
            self._admit(principal, owner, "revisions")
            owner = _read_bank_owner(principal, bank, owner)
            count = clean_text_count(limit, path="limit", bound=limits.REVISIONS_LIMIT)
            before = _revision_cursor(cursor) if cursor is not None else None
            if not ids.is_id(memory_id, prefix=ids.MEMORY_PREFIX):
                raise NotFoundError()
            current = self._find(owner, memory_id)
            page: list[Memory] = [] if before is not None else [current]
            if before is None or before > 1:
                # One extra row tells whether another page exists without a second query.
                wanted = count - len(page) + 1
                page += self._store.revisions(user_id=owner, memory_id=memory_id, limit=wanted, before=before)
        shown, more = page[:count], len(page) > count
        next_cursor = str(shown[-1].revision) if more and shown else None
        self._emit(events.REVISIONS_READ, started, memory_id=memory_id, user_id=owner, result_count=len(shown))
        return RevisionPage(memory=current, revisions=tuple(shown), next_cursor=next_cursor)

    def similar(self, principal: Principal, memory: Memory) -> list[SearchResult]:
        """Up to `limits.SIMILAR_MAX` of the principal's current memories that `memory` (just saved) most
        resembles, by the search engine the bank runs: those it scores at least `similar_min_share` of
        `memory`'s own score, with `memory`'s words as the query. Best first.

        Never raises: it runs after the save committed, and a save is not undone by a failed look-up
        (logged by type, empty answer). Needs `mcp:read` as a search does; without it, nothing.
        """
        started = time.perf_counter()
        try:
            owner = _authorize(principal, READ_SCOPE)
            if memory.scope is Scope.ORG:
                owner = _bank_owner(principal, READ_SCOPE, BankScope.ORG)
            with self.unit_of_work():
                # The engine may reuse what the save computed for this memory (hybrid: its vector, ADR 0035), and
                # storage what it read in the save's last round trip (its candidates, ADR 0042).
                hits = self._search.search_like(
                    user_id=owner, memory_id=memory.id, query=memory.similar_query, limit=limits.SIMILAR_MAX + 1
                )
                own = next((hit.score for hit in hits if hit.memory_id == memory.id), None)
                chosen = [
                    hit
                    for hit in hits
                    if own is not None and hit.memory_id != memory.id and hit.score >= own * self.similar_min_share
                ][: limits.SIMILAR_MAX]
                found = self._store.get_many(user_id=owner, memory_ids=[hit.memory_id for hit in chosen])
        except ForbiddenError:
            return []
        except Exception as error:  # the save stands whatever the look-up does
            _log.warning("similar memories of %s not found (%s)", memory.id, type(error).__name__)
            return []
        results = [
            SearchResult(memory=found[hit.memory_id], score=hit.score, match=hit.match)
            for hit in chosen
            if hit.memory_id in found and not found[hit.memory_id].retired
        ]
        self._emit(events.SIMILAR_FOUND, started, memory_id=memory.id, user_id=owner, result_count=len(results))
        return results

    def search(
        self,
        principal: Principal,
        *,
        query: str | None,
        limit: int | str | None = None,
        bank: BankScope | str | None = None,
    ) -> list[SearchResult]:
        """The principal's memories that match `query`, most relevant first; empty when nothing matches.

        `None` is a parameter not given; a `str` limit is a facade's text as received (`"20"`), read here. `bank`
        (`bankScope`) chooses the principal's own bank (the default), their organization's ("org"), or every bank
        they may read ("all": their own, and their organization's with `org:read`); each bank is ranked with its
        own statistics, and "all" merges the two rankings by score. Each result says its bank (`bank`).

        Raises:
            ForbiddenError: the principal lacks `mcp:read` (or, for `bank="org"`, `org:read`).
            MemoryDisabledError: an operator switched memory off for the principal.
            InvalidInputError: `q` or `limit` is out of bounds.
        """
        started = time.perf_counter()
        owner = _authorize(principal, READ_SCOPE)
        with self.unit_of_work():
            self._admit(principal, owner, "search")  # before validation, as for saves
            owners = _search_owners(principal, BankScope.parse(bank, allow_all=True) if bank is not None else None)
            text = clean_text(query, path="q", bound=limits.QUERY)
            count = clean_text_count(limit, path="limit", bound=limits.SEARCH_LIMIT)
            results: list[SearchResult] = []
            candidates: int | None = None
            for searched in owners:
                hits = self._search.search(user_id=searched, query=text, limit=count)
                found = self._store.get_many(user_id=searched, memory_ids=[hit.memory_id for hit in hits])
                # A memory deleted (or retired) between ranking and loading is simply left out.
                results += [
                    SearchResult(memory=found[hit.memory_id], score=hit.score, match=hit.match)
                    for hit in hits
                    if hit.memory_id in found and not found[hit.memory_id].retired
                ]
                if isinstance(hits, SearchHits):
                    candidates = (candidates or 0) + hits.candidate_count
        if len(owners) > 1:
            # Each bank ranked with its own statistics; merged best first, newer id first on a tie, as one engine.
            results = sorted(results, key=lambda result: (result.score, result.memory.id), reverse=True)[:count]
        fields: dict[str, str | int | float] = {"query_length": len(text), "limit": count, "result_count": len(results)}
        if candidates is not None:
            fields["candidate_count"] = candidates
        self._emit(events.SEARCHED, started, user_id=owners[0], **fields)
        return results

    def list(
        self,
        principal: Principal,
        *,
        limit: int | str | None = None,
        cursor: str | None = None,
        include: str | None = None,
        bank: BankScope | str | None = None,
    ) -> MemoryPage:
        """One page of the principal's memories (of the bank `bank` names: their own, the default, or "org"), newest
        first; retired ones only with `include="retired"`.

        Pass the returned `next_cursor` to get the next page; each memory that lives
        through the whole walk is returned exactly once.

        Raises:
            ForbiddenError: the principal lacks `mcp:read` (or, for the org bank, `org:read`).
            MemoryDisabledError: an operator switched memory off for the principal.
            InvalidInputError: `limit` or `include` is out of bounds or `cursor` is not one we issued.
        """
        started = time.perf_counter()
        owner = _authorize(principal, READ_SCOPE)
        with self.unit_of_work():
            self._admit(principal, owner, "list")  # before validation, as for saves
            owner = _read_bank_owner(principal, bank, owner)
            count = clean_text_count(limit, path="limit", bound=limits.LIST_LIMIT)
            after = decode_cursor(cursor) if cursor is not None else None
            if include not in (None, INCLUDE_RETIRED):
                raise InvalidInputError("include", f'must be "{INCLUDE_RETIRED}" or absent')
            # One extra row tells whether another page exists without a second query.
            rows = list(
                self._store.list(
                    user_id=owner, limit=count + 1, after=after, include_retired=include == INCLUDE_RETIRED
                )
            )
        page, more = rows[:count], len(rows) > count
        next_cursor = (
            encode_cursor(ListPosition(created_at=page[-1].created_at, memory_id=page[-1].id)) if more else None
        )
        self._emit(events.LISTED, started, user_id=owner, limit=count, result_count=len(page))
        return MemoryPage(memories=tuple(page), next_cursor=next_cursor)

    def delete(self, principal: Principal, *, memory_id: str, bank: BankScope | str | None = None) -> None:
        """Hard-delete one of the principal's memories (of the bank `bank` names: their own, the default, or
        "org") and all its contexts.

        Raises:
            ForbiddenError: the principal lacks `mcp:write` (or, for the org bank, `org:write`).
            NotAuthorError: (a ForbiddenError) an org memory of another author, and the principal is no
                `org:admin`; nothing is deleted.
            MemoryDisabledError: an operator switched memory off for the principal; nothing is deleted.
            NotFoundError: no such memory for this owner: malformed, never existed,
                already deleted and someone else's are indistinguishable.
        """
        started = time.perf_counter()
        owner = _authorize(principal, WRITE_SCOPE)
        with self.unit_of_work():
            self._admit(principal, owner, "delete")
            chosen = BankScope.parse(bank) if not isinstance(bank, BankScope) else bank
            if chosen is not BankScope.USER:
                owner = _bank_owner(principal, WRITE_SCOPE, chosen)
                if ids.is_id(memory_id, prefix=ids.MEMORY_PREFIX):
                    _check_may_change(principal, self._find(owner, memory_id))
            if not ids.is_id(memory_id, prefix=ids.MEMORY_PREFIX) or not self._store.delete(
                user_id=owner, memory_id=memory_id
            ):
                raise NotFoundError()
        self._emit(events.DELETED, started, memory_id=memory_id, user_id=owner)

    def usage(self, principal: Principal, *, bank: BankScope | str | None = None) -> UsageReport:
        """How many memories and characters the principal stores (of the bank `bank` names: their own, the default,
        or "org", their organization's), and the quota that applies to them.

        Raises:
            ForbiddenError: the principal lacks `mcp:read` (or, for the org bank, `org:read`).
            MemoryDisabledError: an operator switched memory off for the principal.
            InvalidInputError: ("bankScope") not "user" or "org".
        """
        started = time.perf_counter()
        owner = _authorize(principal, READ_SCOPE)
        with self.unit_of_work():
            policy = self._admit(principal, owner, "usage")
            chosen = _read_bank_owner(principal, bank, owner)
            if chosen != owner:
                # The team bank's quota: the organization's control, else the default (as its saves are charged).
                owner, policy = chosen, self._policy(chosen, principal.organization_id)
            used = self._store.usage(user_id=owner)
        self._emit(events.USAGE_READ, started, user_id=owner, memories=used.memories)
        return UsageReport(usage=used, quota=policy.quota)

    def delete_batch(self, principal: Principal, request: DeleteAll | Body) -> DeletedBatch:
        """One bounded step of "delete all": hard-delete up to `request.limit` of the principal's memories.

        A host hands a `DeleteAll` (its `confirm` must be `DELETE_ALL_CONFIRMATION`: nobody deletes
        everything by accident); a facade hands the `Body` it received (`{"confirm", "limit"?}`), read
        here after the gate. Call again until `remaining` is 0; each call is one unit of work, so a page
        closed half-way leaves whole memories deleted or kept, and the next call simply carries on.

        Raises:
            ForbiddenError: the principal lacks `mcp:write`.
            MemoryDisabledError: an operator switched memory off for the principal; nothing is deleted.
            InvalidInputError: `confirm` is not the confirmation, or `limit` is out of bounds; nothing is deleted.
        """
        started = time.perf_counter()
        owner = _authorize(principal, WRITE_SCOPE)
        with self.unit_of_work():
            # The gate before validation, as on every route: a switched-off account learns nothing else.
            self._admit(principal, owner, "delete_all")
            if isinstance(request, Body):
                request = DeleteAll.parse(request.value())
            batch = self._store.list(user_id=owner, limit=request.limit, after=None, include_retired=True)
            deleted = sum(1 for memory in batch if self._store.delete(user_id=owner, memory_id=memory.id))
            remaining = self._store.usage(user_id=owner).memories
        self._emit(events.DELETED_BATCH, started, user_id=owner, deleted=deleted, remaining=remaining)
        return DeletedBatch(deleted=deleted, remaining=remaining)

    def export(self, principal: Principal) -> Iterator[ExportedMemory]:
        """Every memory of the principal (retired ones too) with its kept earlier versions, newest first, read a
        page per unit of work (for a streamed download).

        The checks run at once, before the first memory is yielded; a memory saved or deleted while
        the export runs may or may not be in it, and none is repeated.

        Raises:
            ForbiddenError: the principal lacks `mcp:read`.
            MemoryDisabledError: an operator switched memory off for the principal.
        """
        owner = _authorize(principal, READ_SCOPE)
        with self.unit_of_work():
            self._admit(principal, owner, "export")
            first = self._store.list(user_id=owner, limit=limits.EXPORT_PAGE, after=None, include_retired=True)
            exported = with_history(self._store, user_id=owner, memories=first)
        return self._export_from(principal, owner, exported)

    def _export_from(
        self, principal: Principal, owner: str, page: Sequence[ExportedMemory]
    ) -> Iterator[ExportedMemory]:
        started = time.perf_counter()
        exported = 0
        while True:
            yield from page
            exported += len(page)
            if len(page) < limits.EXPORT_PAGE:
                break
            last = page[-1].memory
            after = ListPosition(created_at=last.created_at, memory_id=last.id)
            with self.unit_of_work():
                self._admit(principal, owner, "export")
                memories = self._store.list(user_id=owner, limit=limits.EXPORT_PAGE, after=after, include_retired=True)
                page = with_history(self._store, user_id=owner, memories=memories)
        self._emit(events.EXPORTED, started, user_id=owner, exported=exported)

    def memory_enabled(self, principal: Principal) -> bool:
        """Whether memory is on for `principal` now (no scope needed): facades hide memory when it is off.

        A principal without usable ids gets False, as every use case would refuse it.
        """
        try:
            owner = _authorize(principal, None)
        except ForbiddenError:
            return False
        with self.unit_of_work():
            return self._policy(owner, principal.organization_id).enabled

    def _policy(self, owner: str, org_id: str) -> Policy:
        found = self._controls.find(user_id=owner, org_id=org_id) if self._controls is not None else ()
        return resolve(found, user_id=owner, org_id=org_id, default=self.default_quota)

    def _admit(self, principal: Principal, owner: str, operation: str) -> Policy:
        """The policy of this request, once the gate let it through (an indexed read of at most three rows)."""
        policy = self._policy(owner, principal.organization_id)
        if not policy.enabled:
            switch = policy.switched_off_by.value if policy.switched_off_by is not None else "-"
            self._events.emit(
                events.GATE_REFUSED,
                {"user_id": owner, "org_id": principal.organization_id, "operation": operation, "switch": switch},
            )
            raise MemoryDisabledError()
        return policy

    def _emit(self, name: str, started: float, **fields: str | int | float) -> None:
        fields["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
        self._events.emit(name, fields)


def _authorize(principal: Principal, scope: str | None) -> str:
    """Check the principal holds `scope` (if any) and return its user id, the owner of everything it touches."""
    user_id, org_id = principal.user_id, principal.organization_id
    # A host handing us a principal without usable ids is a host bug; refuse rather than guess.
    # Surrounding whitespace is refused too: MySQL's collations ignore trailing spaces, so `bob ` would
    # be `bob` there and no one else.
    for value in (user_id, org_id):
        if not isinstance(value, str) or not limits.ID.min <= len(value) <= limits.ID.max or value != value.strip():
            raise ForbiddenError(scope or WRITE_SCOPE)
    # An organization's bank is an owner too (`org_bank_owner`): no person may carry its id.
    if is_org_bank_owner(user_id):
        raise ForbiddenError(scope or WRITE_SCOPE)
    if scope is not None and scope not in principal.scopes:
        raise ForbiddenError(scope)
    return user_id


def _bank_owner(principal: Principal, scope: str, bank: BankScope) -> str:
    """The owner of the bank `bank` names for an operation needing `scope` (`mcp:read` or `mcp:write`), once the
    principal was authorized for `scope` itself: the principal (their own bank), or their organization's bank,
    which also needs `org:read` or `org:write` (`org:admin` includes both).

    Raises:
        ForbiddenError: the principal lacks the org scope.
    """
    if bank is BankScope.USER:
        return principal.user_id
    needed = ORG_READ_SCOPE if scope == READ_SCOPE else ORG_WRITE_SCOPE
    if needed not in principal.scopes and ORG_ADMIN_SCOPE not in principal.scopes:
        raise ForbiddenError(needed)
    return org_bank_owner(principal.organization_id)


def _read_bank_owner(principal: Principal, bank: BankScope | str | None, owner: str) -> str:
    """The owner a read of `bank` (not "all") reads: `owner` (the principal's) or their organization's bank.

    Raises:
        InvalidInputError: ("bankScope") not "user" or "org".
        ForbiddenError: the org bank, and the principal lacks `org:read`.
    """
    chosen = BankScope.parse(bank) if not isinstance(bank, BankScope) else bank
    return owner if chosen is BankScope.USER else _bank_owner(principal, READ_SCOPE, chosen)


def _search_owners(principal: Principal, bank: BankScope | None) -> list[str]:
    """The owners a search of `bank` reads: "all" is the principal's own bank, and their organization's when they
    may read it; "org" needs `org:read`.

    Raises:
        ForbiddenError: `bank` is "org" and the principal lacks `org:read`.
    """
    if bank is None or bank is BankScope.USER:
        return [principal.user_id]
    if bank is BankScope.ORG:
        return [_bank_owner(principal, READ_SCOPE, bank)]
    try:
        return [principal.user_id, _bank_owner(principal, READ_SCOPE, BankScope.ORG)]
    except ForbiddenError:
        return [principal.user_id]


def _check_may_change(principal: Principal, memory: Memory) -> None:
    """Refuse a change of an org memory by anyone but its author or an `org:admin`.

    Raises:
        NotAuthorError: the memory is an org memory of another author and the principal is no `org:admin`.
    """
    if memory.scope is Scope.ORG and memory.author != principal.user_id and ORG_ADMIN_SCOPE not in principal.scopes:
        raise NotAuthorError()


def _written_by(principal: Principal, door: Door) -> WrittenBy:
    """Who is writing: the door, and the principal's credential (its `credential_id`, else its `issuer`) if it
    names one that can be recorded; never a secret, which a principal does not carry."""
    for name in ("credential_id", "issuer"):
        value = getattr(principal, name, None)
        if isinstance(value, str) and value.strip():
            credential = value.strip()[: limits.CREDENTIAL.max]
            try:
                check_characters(credential, path=name)
            except InvalidInputError:
                continue
            return WrittenBy(door=door, credential=credential)
    return WrittenBy(door=door)


def _allowed_revisions(if_match: Collection[int] | None, named: int | None) -> set[int] | None:
    """The revisions a change may apply to: those of `If-Match` and the body's `revision` (each that is given)."""
    allowed = set(if_match) if if_match is not None else None
    if named is not None:
        allowed = {named} if allowed is None else allowed & {named}
    return allowed


def _context_key(context: object) -> tuple[object, ...]:
    citation = getattr(context, "citation", None)
    return (
        getattr(context, "snippet", None),
        citation.conversation_id if citation is not None else None,
        citation.message_id if citation is not None else None,
        getattr(context, "origin", None),
    )


def _revision_cursor(cursor: str) -> int:
    """The revision a revisions cursor names (the last one already returned).

    Raises:
        InvalidInputError: ("cursor") not a cursor we issued.
    """
    if not cursor.isascii() or not cursor.isdigit() or len(cursor) > 10 or int(cursor) < 1:
        raise InvalidInputError("cursor", "must be the next_cursor of the previous page")
    return int(cursor)


def _screened_characters(request: SaveRequest) -> int:
    return (
        len(request.content) + sum(map(len, request.tags)) + sum(len(context.snippet) for context in request.contexts)
    )
