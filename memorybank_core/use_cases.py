"""The use cases: save, search, list and delete, all owner-scoped.

Policy lives here and only here: scope forcing, input bounds, required scopes,
and 'not found' looking the same as 'not yours'.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence

from memorybank_core import events, ids, limits
from memorybank_core.bodies import Body
from memorybank_core.clock import SystemClock
from memorybank_core.configuration import BankSettings
from memorybank_core.controls import resolve
from memorybank_core.cursor import decode_cursor, encode_cursor
from memorybank_core.entities import (
    DeletedBatch,
    Memory,
    MemoryPage,
    Policy,
    Quota,
    SearchResult,
    Source,
    UsageReport,
)
from memorybank_core.errors import (
    ForbiddenError,
    MemoryDisabledError,
    NotFoundError,
    QuotaExceededError,
    SecretDetectedError,
)
from memorybank_core.events import LoggingEventSink
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
from memorybank_core.requests import DeleteAll, SaveRequest
from memorybank_core.secret_screening import screen_request
from memorybank_core.validation import clean_text, clean_text_count

READ_SCOPE = "mcp:read"
WRITE_SCOPE = "mcp:write"
#: Characters of text above which a save hands its facade's connection back while the secret screen runs: about
#: 0.2 ms of screening, the price of handing a pooled connection back and taking it again.
SCREEN_WITHOUT_CONNECTION_ABOVE = 1_000


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
    ) -> None:
        """`controls` holds the operators' gate switches and quotas (`memorybank_core.controls`); without it
        memory is on for everyone. `default_quota` applies where no operator set one (default: `Quota()`).
        `secret_screen` refuses saves holding credentials (`memorybank_core.secret_screening`); the composition
        root always wires one unless an operator turned it off, and a host embedding the bank should too.
        `settings` is what the operator configured for the use cases (`memorybank.settings` resolves it);
        `default_quota`, when given, wins over its quota.
        """
        self.settings: BankSettings = settings or BankSettings()
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

    def save(self, principal: Principal, request: SaveRequest | Body, *, source: Source = Source.CHAT) -> Memory:
        """Save a human-verified memory with its contexts in one atomic write.

        A host hands `request` as a `SaveRequest`; a facade hands the `Body` it received (`{content, tags?,
        contexts?}`), read here. The scope and the gate are checked first, so a caller without `mcp:write`
        or switched off learns nothing from the body. The stored scope is always 'user', whatever the
        caller sent; `source` is the server's word.

        Raises:
            ForbiddenError: the principal lacks `mcp:write`.
            MemoryDisabledError: an operator switched memory off for the principal; nothing is written.
            InvalidInputError: the body breaks a bound or a type rule; nothing is written.
            SecretDetectedError: (an InvalidInputError) the content, a tag or a snippet holds what looks like
                a credential; nothing is written, and the error names kind and place, never the secret.
            ScreenBudgetExceededError: (an InvalidInputError) the texts cost more than the screen's budget to
                judge; nothing is written (never stored unscreened).
            QuotaExceededError: the owner's storage quota is full; nothing is written.
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
            return self._save(owner, principal.organization_id, parsed, source, policy, started)

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
        self, owner: str, org_id: str, request: SaveRequest, source: Source, policy: Policy, started: float
    ) -> Memory:
        memory = request.to_memory(
            memory_id=self._new_id(ids.MEMORY_PREFIX),
            user_id=owner,
            org_id=org_id,
            source=source,
            created_at=self._clock.now(),
            context_ids=[self._new_id(ids.CONTEXT_PREFIX) for _ in request.contexts],
        )
        try:
            self._store.add(user_id=owner, memory=memory, quota=policy.quota)
        except QuotaExceededError as error:
            self._emit(events.QUOTA_REFUSED, started, user_id=owner, exceeded=",".join(error.exceeded))
            raise
        self._emit(
            events.SAVED,
            started,
            memory_id=memory.id,
            user_id=owner,
            context_count=len(memory.contexts),
            tag_count=len(memory.tags),
            content_length=len(memory.content),
        )
        return memory

    def search(self, principal: Principal, *, query: str | None, limit: int | str | None = None) -> list[SearchResult]:
        """The principal's memories that match `query`, most relevant first; empty when nothing matches.

        `None` is a parameter not given; a `str` limit is a facade's text as received (`"20"`), read here.

        Raises:
            ForbiddenError: the principal lacks `mcp:read`.
            MemoryDisabledError: an operator switched memory off for the principal.
            InvalidInputError: `q` or `limit` is out of bounds.
        """
        started = time.perf_counter()
        owner = _authorize(principal, READ_SCOPE)
        with self.unit_of_work():
            self._admit(principal, owner, "search")  # before validation, as for saves
            text = clean_text(query, path="q", bound=limits.QUERY)
            count = clean_text_count(limit, path="limit", bound=limits.SEARCH_LIMIT)
            hits = self._search.search(user_id=owner, query=text, limit=count)
            found = self._store.get_many(user_id=owner, memory_ids=[hit.memory_id for hit in hits])
        # A memory deleted between ranking and loading is simply left out.
        results = [
            SearchResult(memory=found[hit.memory_id], score=hit.score, match=hit.match)
            for hit in hits
            if hit.memory_id in found
        ]
        fields: dict[str, str | int | float] = {"query_length": len(text), "limit": count, "result_count": len(results)}
        if isinstance(hits, SearchHits):
            fields["candidate_count"] = hits.candidate_count
        self._emit(events.SEARCHED, started, user_id=owner, **fields)
        return results

    def list(self, principal: Principal, *, limit: int | str | None = None, cursor: str | None = None) -> MemoryPage:
        """One page of the principal's memories, newest first.

        Pass the returned `next_cursor` to get the next page; each memory that lives
        through the whole walk is returned exactly once.

        Raises:
            ForbiddenError: the principal lacks `mcp:read`.
            MemoryDisabledError: an operator switched memory off for the principal.
            InvalidInputError: `limit` is out of bounds or `cursor` is not one we issued.
        """
        started = time.perf_counter()
        owner = _authorize(principal, READ_SCOPE)
        with self.unit_of_work():
            self._admit(principal, owner, "list")  # before validation, as for saves
            count = clean_text_count(limit, path="limit", bound=limits.LIST_LIMIT)
            after = decode_cursor(cursor) if cursor is not None else None
            # One extra row tells whether another page exists without a second query.
            rows = list(self._store.list(user_id=owner, limit=count + 1, after=after))
        page, more = rows[:count], len(rows) > count
        next_cursor = (
            encode_cursor(ListPosition(created_at=page[-1].created_at, memory_id=page[-1].id)) if more else None
        )
        self._emit(events.LISTED, started, user_id=owner, limit=count, result_count=len(page))
        return MemoryPage(memories=tuple(page), next_cursor=next_cursor)

    def delete(self, principal: Principal, *, memory_id: str) -> None:
        """Hard-delete one of the principal's memories and all its contexts.

        Raises:
            ForbiddenError: the principal lacks `mcp:write`.
            MemoryDisabledError: an operator switched memory off for the principal; nothing is deleted.
            NotFoundError: no such memory for this owner: malformed, never existed,
                already deleted and someone else's are indistinguishable.
        """
        started = time.perf_counter()
        owner = _authorize(principal, WRITE_SCOPE)
        with self.unit_of_work():
            self._admit(principal, owner, "delete")
            if not ids.is_id(memory_id, prefix=ids.MEMORY_PREFIX) or not self._store.delete(
                user_id=owner, memory_id=memory_id
            ):
                raise NotFoundError()
        self._emit(events.DELETED, started, memory_id=memory_id, user_id=owner)

    def usage(self, principal: Principal) -> UsageReport:
        """How many memories and characters the principal stores, and the quota that applies to them.

        Raises:
            ForbiddenError: the principal lacks `mcp:read`.
            MemoryDisabledError: an operator switched memory off for the principal.
        """
        started = time.perf_counter()
        owner = _authorize(principal, READ_SCOPE)
        with self.unit_of_work():
            policy = self._admit(principal, owner, "usage")
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
            batch = self._store.list(user_id=owner, limit=request.limit, after=None)
            deleted = sum(1 for memory in batch if self._store.delete(user_id=owner, memory_id=memory.id))
            remaining = self._store.usage(user_id=owner).memories
        self._emit(events.DELETED_BATCH, started, user_id=owner, deleted=deleted, remaining=remaining)
        return DeletedBatch(deleted=deleted, remaining=remaining)

    def export(self, principal: Principal) -> Iterator[Memory]:
        """Every memory of the principal, newest first, read a page per unit of work (for a streamed download).

        The checks run at once, before the first memory is yielded; a memory saved or deleted while
        the export runs may or may not be in it, and none is repeated.

        Raises:
            ForbiddenError: the principal lacks `mcp:read`.
            MemoryDisabledError: an operator switched memory off for the principal.
        """
        owner = _authorize(principal, READ_SCOPE)
        with self.unit_of_work():
            self._admit(principal, owner, "export")
            first = self._store.list(user_id=owner, limit=limits.EXPORT_PAGE, after=None)
        return self._export_from(principal, owner, first)

    def _export_from(self, principal: Principal, owner: str, page: Sequence[Memory]) -> Iterator[Memory]:
        started = time.perf_counter()
        exported = 0
        while True:
            yield from page
            exported += len(page)
            if len(page) < limits.EXPORT_PAGE:
                break
            after = ListPosition(created_at=page[-1].created_at, memory_id=page[-1].id)
            with self.unit_of_work():
                self._admit(principal, owner, "export")
                page = self._store.list(user_id=owner, limit=limits.EXPORT_PAGE, after=after)
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
    if scope is not None and scope not in principal.scopes:
        raise ForbiddenError(scope)
    return user_id


def _screened_characters(request: SaveRequest) -> int:
    return (
        len(request.content) + sum(map(len, request.tags)) + sum(len(context.snippet) for context in request.contexts)
    )
