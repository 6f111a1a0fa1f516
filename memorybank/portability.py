"""Bulk import and export of memories as JSON Lines (`memorybank import` / `memorybank export`).

One memory per line; the format is in docs/portability.md. Every line is checked with the same
bounds as a save (`SaveRequest.parse`) plus well-formed `usr_`/`org_`/`mem_`/`mctx_` TypeIDs and
timezone-aware timestamps. A bad line is reported by its line number and field (never its
content) and skipped; the good lines are written in batches, one transaction per batch, a memory
always with all its contexts. Export writes exactly what import reads, ids and timestamps
included, so export -> import round-trips.
"""

from __future__ import annotations

import json
import sys
from abc import abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Protocol, TextIO

import attrs
from tqdm import tqdm

from adapters_mysql import ReindexReport, SqlStorage
from memorybank_core import (
    InvalidInputError,
    ListPosition,
    Memory,
    MemoryStore,
    SaveRequest,
    Source,
    ids,
)
from memorybank_core.wire import export_line

#: Memories written per transaction.
DEFAULT_BATCH_SIZE = 1000


class BulkMemoryWriter(Protocol):
    """A store that writes many memories (of any owners) in one all-or-nothing transaction."""

    @abstractmethod
    def add_many(self, memories: Sequence[Memory]) -> None:
        """Store `memories` with their contexts, all or none.

        Raises:
            InvalidInputError: ("id") one of the ids is already stored; nothing was written.
            UnavailableError: storage cannot be reached; nothing was written.
        """


@attrs.frozen
class LineProblem:
    """Why one input line was skipped: its 1-based number and the problems, by field."""

    line: int
    problems: tuple[str, ...]

    def describe(self) -> str:
        """One line for a report: `line 12: content must hold 1 to 8000 characters`."""
        return f"line {self.line}: " + "; ".join(self.problems)


@attrs.frozen
class ImportReport:
    """What an import did: memories written, and the lines it skipped."""

    imported: int
    skipped: tuple[LineProblem, ...]


def import_lines(
    lines: Iterable[str],
    store: BulkMemoryWriter,
    *,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Import JSON Lines: validate each, write the valid ones in batches of `batch_size`.

    Blank lines are ignored. `progress` is called with the number of lines each batch covered.
    A batch holds one user's memories only (a new user's line starts a new batch), so every
    transaction stays on one shard of a sharded database.
    A batch the store refuses as a whole (an id already stored) is retried one memory at a
    time, so only the offending lines are skipped.

    Raises:
        UnavailableError: storage cannot be reached; earlier batches stay written.
    """
    imported = 0
    skipped: list[LineProblem] = []
    batch: list[tuple[int, Memory]] = []
    seen = 0

    def flush() -> None:
        nonlocal imported, seen
        if batch:
            imported += _write(store, batch, skipped)
        if progress is not None:
            progress(seen)
        seen = 0
        batch.clear()

    for number, line in enumerate(lines, start=1):
        seen += 1
        if not line.strip():
            continue
        try:
            parsed = parse_line(line, now=now)
        except InvalidInputError as error:
            skipped.append(LineProblem(number, tuple(f"{p.path} {p.message}" for p in error.problems)))
            continue
        # A batch is one transaction, and a transaction never spans two users: on a sharded
        # database two users may live on two servers, where a commit of both is not atomic.
        if batch and batch[-1][1].user_id != parsed.user_id:
            flush()
        batch.append((number, parsed))
        if len(batch) >= batch_size:
            flush()
    flush()
    return ImportReport(imported=imported, skipped=tuple(sorted(skipped, key=lambda problem: problem.line)))


def _write(store: BulkMemoryWriter, batch: list[tuple[int, Memory]], skipped: list[LineProblem]) -> int:
    try:
        store.add_many([memory for _, memory in batch])
        return len(batch)
    except InvalidInputError:
        pass
    written = 0
    for number, memory in batch:
        try:
            store.add_many([memory])
            written += 1
        except InvalidInputError as error:
            skipped.append(LineProblem(number, tuple(f"{p.path} {p.message}" for p in error.problems)))
    return written


def parse_line(line: str, *, now: Callable[[], datetime]) -> Memory:
    """The memory one JSON line describes; missing ids are minted and a missing `created_at` is now.

    Raises:
        InvalidInputError: every problem found, each naming its field.
    """
    try:
        data = json.loads(line)
    except ValueError as error:
        raise InvalidInputError("line", "must be one JSON object") from error
    if not isinstance(data, dict):
        raise InvalidInputError("line", "must be one JSON object")
    problems: list[InvalidInputError] = []

    def check(parse: Callable[[], Any]) -> Any:
        try:
            return parse()
        except InvalidInputError as error:
            problems.append(error)
            return None

    user_id = check(lambda: ids.parse_id(data.get("user_id"), prefix=ids.USER_PREFIX, field="user_id"))
    org_id = check(lambda: ids.parse_id(data.get("org_id"), prefix=ids.ORGANIZATION_PREFIX, field="org_id"))
    memory_id = check(lambda: _optional_id(data.get("id"), ids.MEMORY_PREFIX, "id"))
    created_at = check(lambda: _optional_time(data.get("created_at"), "created_at"))
    updated_at = check(lambda: _optional_time(data.get("updated_at"), "updated_at"))
    source = check(lambda: _source(data.get("source")))
    request: SaveRequest | None = check(lambda: SaveRequest.parse(_with_flat_citations(data)))
    given = data.get("contexts")
    raw_contexts: list[object] = given if isinstance(given, list) else []
    context_ids: list[str | None] = []
    context_times: list[datetime | None] = []
    for index, raw in enumerate(raw_contexts):
        context_ids.append(check(partial(_optional_id, _get(raw, "id"), ids.CONTEXT_PREFIX, f"contexts.{index}.id")))
        context_times.append(check(partial(_optional_time, _get(raw, "created_at"), f"contexts.{index}.created_at")))
    if problems or request is None:
        raise InvalidInputError.from_problems([p for error in problems for p in error.problems])
    return request.to_memory(
        memory_id=memory_id or ids.new_id(ids.MEMORY_PREFIX),
        user_id=user_id,
        org_id=org_id,
        source=source,
        created_at=created_at or now(),
        updated_at=updated_at,
        context_ids=[context_id or ids.new_id(ids.CONTEXT_PREFIX) for context_id in context_ids],
        context_times=context_times,
    )


def _with_flat_citations(data: dict[str, Any]) -> dict[str, Any]:
    """`data` with each context's `citation` object (the export's shape) lifted to its ids (a save's shape)."""
    contexts = data.get("contexts")
    if not isinstance(contexts, list):
        return data
    lifted: list[object] = []
    for context in contexts:
        citation = context.get("citation") if isinstance(context, dict) else None
        if isinstance(context, dict) and isinstance(citation, dict):
            context = {**citation, **{key: value for key, value in context.items() if key != "citation"}}
        lifted.append(context)
    return {**data, "contexts": lifted}


def _get(value: object, key: str) -> object:
    return value.get(key) if isinstance(value, dict) else None


def _optional_id(value: object, prefix: str, field: str) -> str | None:
    return None if value is None else ids.parse_id(value, prefix=prefix, field=field)


def _optional_time(value: object, field: str) -> datetime | None:
    if value is None:
        return None
    expected = "must be an ISO 8601 timestamp with a time zone, e.g. 2026-07-02T12:00:00.123456Z"
    if not isinstance(value, str):
        raise InvalidInputError(field, expected)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as error:
        raise InvalidInputError(field, expected) from error
    if parsed.tzinfo is None:
        raise InvalidInputError(field, expected)
    return parsed.astimezone(UTC)


def _source(value: object) -> Source:
    if value is None:
        return Source.CHAT
    try:
        if not isinstance(value, str):
            raise ValueError(value)
        return Source(value)
    except ValueError as error:
        choices = " or ".join(repr(s.value) for s in Source)
        raise InvalidInputError("source", f"must be {choices}") from error


memory_line = export_line
"""One exported line (`memorybank_core.wire.export_line`, shared with the panel's download)."""


#: Memories read per page while exporting.
EXPORT_PAGE_SIZE = 100


def export_user(store: MemoryStore, user_id: str, out: TextIO) -> int:
    """Write every memory of `user_id` to `out`, one JSON line each, newest first; the count.

    Raises:
        InvalidInputError: ("user") `user_id` is not a `usr_` TypeID.
        UnavailableError: storage cannot be reached.
    """
    ids.parse_id(user_id, prefix=ids.USER_PREFIX, field="user")
    written = 0
    after: ListPosition | None = None
    while True:
        page = store.list(user_id=user_id, limit=EXPORT_PAGE_SIZE, after=after)
        for memory in page:
            out.write(memory_line(memory) + "\n")
        written += len(page)
        if len(page) < EXPORT_PAGE_SIZE:
            return written
        after = ListPosition(created_at=page[-1].created_at, memory_id=page[-1].id)


def import_file(
    path: Path, store: BulkMemoryWriter, *, batch_size: int = DEFAULT_BATCH_SIZE, show_progress: bool = True
) -> ImportReport:
    """`import_lines` over a UTF-8 JSON Lines file, with a progress bar (in bytes) on stderr.

    Raises:
        OSError: the file cannot be read.
        UnavailableError: storage cannot be reached; earlier batches stay written.
    """
    with (
        path.open("rb") as raw,
        tqdm(total=path.stat().st_size, unit="B", unit_scale=True, disable=not show_progress, file=sys.stderr) as bar,
    ):
        consumed = 0

        def decoded() -> Iterator[str]:
            nonlocal consumed
            for line in raw:
                consumed += len(line)
                # Bytes that are not UTF-8 become lone surrogates, which the field checks reject
                # ("must be valid Unicode"), so the line is reported by number, not imported garbled.
                yield line.decode("utf-8", errors="surrogateescape")

        def advance(_lines: int) -> None:
            nonlocal consumed
            bar.update(consumed)
            consumed = 0

        return import_lines(decoded(), store, batch_size=batch_size, progress=advance)


def reindex_with_progress(
    storage: SqlStorage, *, everything: bool = False, show_progress: bool = True
) -> ReindexReport:
    """`SqlStorage.reindex` with a progress bar on stderr: re-index, `encrypt` and `keys rotate` alike.

    Raises:
        UnavailableError: storage cannot be reached; committed batches stay done.
    """
    total = storage.count_to_reindex(everything=everything)
    with tqdm(total=total, unit="memory", disable=not show_progress, file=sys.stderr) as bar:
        return storage.reindex(everything=everything, progress=bar.update)
