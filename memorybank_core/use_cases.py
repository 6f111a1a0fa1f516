"""The use cases: save, search, list and delete, all owner-scoped.

Policy lives here and only here: scope forcing, input bounds, required scopes,
and 'not found' looking the same as 'not yours'.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from memorybank_core import events, ids, limits
from memorybank_core.clock import SystemClock
from memorybank_core.cursor import decode_cursor, encode_cursor
from memorybank_core.entities import Memory, MemoryPage, SearchResult, Source
from memorybank_core.errors import ForbiddenError, NotFoundError
from memorybank_core.events import LoggingEventSink
from memorybank_core.ports import (
    Clock,
    EventSink,
    ListPosition,
    MemoryStore,
    NoUnitOfWork,
    Principal,
    SearchEngine,
    SearchHits,
    UnitOfWork,
)
from memorybank_core.requests import SaveRequest
from memorybank_core.validation import clean_count, clean_text

READ_SCOPE = "mcp:read"
WRITE_SCOPE = "mcp:write"


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
    ) -> None:
        self._store = store
        self._search = search_engine
        self.unit_of_work: UnitOfWork = unit_of_work or NoUnitOfWork()
        """Each use case runs in one unit (one connection); a facade may open it earlier, e.g. around auth."""
        self._clock = clock or SystemClock()
        self._events = events or LoggingEventSink()
        self._new_id = new_id

    def save(self, principal: Principal, request: SaveRequest | object, *, source: Source = Source.CHAT) -> Memory:
        """Save a human-verified memory with its contexts in one atomic write.

        `request` is a parsed `SaveRequest` or an untrusted JSON body (`{content, tags?, contexts?}`),
        parsed here. The scope is checked first, so a caller without `mcp:write` learns nothing from
        validation errors. The stored scope is always 'user', whatever the caller sent; `source` is
        the server's word.

        Raises:
            ForbiddenError: the principal lacks `mcp:write`.
            InvalidInputError: the body breaks a bound or a type rule; nothing is written.
            UnavailableError: storage is down; nothing is written.
        """
        started = time.perf_counter()
        owner = _authorize(principal, WRITE_SCOPE)
        if not isinstance(request, SaveRequest):
            request = SaveRequest.parse(request)
        memory = request.to_memory(
            memory_id=self._new_id(ids.MEMORY_PREFIX),
            user_id=owner,
            org_id=principal.organization_id,
            source=source,
            created_at=self._clock.now(),
            context_ids=[self._new_id(ids.CONTEXT_PREFIX) for _ in request.contexts],
        )
        self._store.add(user_id=owner, memory=memory)
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

    def search(self, principal: Principal, *, query: object, limit: object = None) -> list[SearchResult]:
        """The principal's memories that match `query`, most relevant first; empty when nothing matches.

        Raises:
            ForbiddenError: the principal lacks `mcp:read`.
            InvalidInputError: `q` or `limit` is out of bounds.
        """
        started = time.perf_counter()
        owner = _authorize(principal, READ_SCOPE)
        text = clean_text(query, path="q", bound=limits.QUERY)
        count = clean_count(limit, path="limit", bound=limits.SEARCH_LIMIT)
        with self.unit_of_work():
            hits = self._search.search(user_id=owner, query=text, limit=count)
            found = self._store.get_many(user_id=owner, memory_ids=[hit.memory_id for hit in hits])
        # A memory deleted between ranking and loading is simply left out.
        results = [SearchResult(memory=found[hit.memory_id], score=hit.score) for hit in hits if hit.memory_id in found]
        fields: dict[str, str | int | float] = {"query_length": len(text), "limit": count, "result_count": len(results)}
        if isinstance(hits, SearchHits):
            fields["candidate_count"] = hits.candidate_count
        self._emit(events.SEARCHED, started, user_id=owner, **fields)
        return results

    def list(self, principal: Principal, *, limit: object = None, cursor: str | None = None) -> MemoryPage:
        """One page of the principal's memories, newest first.

        Pass the returned `next_cursor` to get the next page; each memory that lives
        through the whole walk is returned exactly once.

        Raises:
            ForbiddenError: the principal lacks `mcp:read`.
            InvalidInputError: `limit` is out of bounds or `cursor` is not one we issued.
        """
        started = time.perf_counter()
        owner = _authorize(principal, READ_SCOPE)
        count = clean_count(limit, path="limit", bound=limits.LIST_LIMIT)
        after = decode_cursor(cursor) if cursor is not None else None
        # One extra row tells whether another page exists without a second query.
        with self.unit_of_work():
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
            NotFoundError: no such memory for this owner: malformed, never existed,
                already deleted and someone else's are indistinguishable.
        """
        started = time.perf_counter()
        owner = _authorize(principal, WRITE_SCOPE)
        if not ids.is_id(memory_id, prefix=ids.MEMORY_PREFIX) or not self._store.delete(
            user_id=owner, memory_id=memory_id
        ):
            raise NotFoundError()
        self._emit(events.DELETED, started, memory_id=memory_id, user_id=owner)

    def _emit(self, name: str, started: float, **fields: str | int | float) -> None:
        fields["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
        self._events.emit(name, fields)


def _authorize(principal: Principal, scope: str) -> str:
    """Check the principal holds `scope` and return its user id, the owner of everything it touches."""
    user_id, org_id = principal.user_id, principal.organization_id
    # A host handing us a principal without usable ids is a host bug; refuse rather than guess.
    for value in (user_id, org_id):
        if not isinstance(value, str) or not limits.ID.min <= len(value) <= limits.ID.max:
            raise ForbiddenError(scope)
    if scope not in principal.scopes:
        raise ForbiddenError(scope)
    return user_id
