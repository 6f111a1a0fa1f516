"""Bulk import and export of memories as JSON Lines (`memorybank import` / `memorybank export`).

One memory per line; the format is in docs/portability.md. Every line is checked with the same
bounds as a save (`SaveRequest.parse`) plus well-formed `usr_`/`org_`/`mem_`/`mctx_` TypeIDs and
timezone-aware timestamps. A bad line is reported by its line number and field (never its
content) and skipped; the good lines are written in batches, one transaction per batch, a memory
always with all its contexts. Export writes exactly what import reads, ids and timestamps
included, so export -> import round-trips.

Every line also goes through the save path's secret screen (`memorybank_core.secret_screening`, the
same judgement as a save): a line holding a credential is reported by number, memory id, owner and
kind (never the secret) and, as the operator chose, skipped (`skip`) or the whole import refused
before anything is written (`refuse`).

It depends on the core's ports only (`MemoryStore` to export, `BulkMemoryWriter` to import), so a host's
own store runs it as memorybank's SQL storage does (docs/portability.md shows one in memory).
"""

from __future__ import annotations

import json
import os
import secrets
import stat
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, TextIO

import attrs

from memorybank_core import (
    BulkMemoryWriter,
    Door,
    ExportedMemory,
    InvalidInputError,
    ListPosition,
    Memory,
    MemoryStore,
    SaveRequest,
    Scope,
    SecretScreen,
    Source,
    WrittenBy,
    ids,
    secrets_in_memory,
    with_history,
)
from memorybank_core.banks import org_bank_owner
from memorybank_core.limits import REVISIONS_KEPT
from memorybank_core.strict_json import RepeatedKeyError, strict_json
from memorybank_core.wire import EXPORT_FORMAT, export_line

#: Memories written per transaction.
DEFAULT_BATCH_SIZE = 1000

#: What `memorybank import --on-secret` does with a line holding a credential: leave it out and import the rest,
#: or import nothing at all.
SKIP_LINE = "skip"
REFUSE_FILE = "refuse"
ON_SECRET_CHOICES = (SKIP_LINE, REFUSE_FILE)

#: An export holds a person's memories in clear: readable and writable by its owner only (0600).
PRIVATE_FILE_MODE = stat.S_IRUSR | stat.S_IWUSR


@attrs.frozen
class LineProblem:
    """Why one input line was skipped: its 1-based number and the problems, by field."""

    line: int
    problems: tuple[str, ...]

    def describe(self) -> str:
        """One line for a report: `line 12: content must hold 1 to 8000 characters`."""
        return f"line {self.line}: " + "; ".join(self.problems)


@attrs.frozen
class SecretLine:
    """A line holding what looks like a credential: its number, memory id, owner and the kinds found (never the
    secret). The id is the line's own, or the one minted for it when it had none."""

    line: int
    memory_id: str
    user_id: str
    kinds: tuple[str, ...]

    def describe(self) -> str:
        """One line for a report: `line 12 (mem_..., owner usr_...): aws_access_key, private_key`."""
        return f"line {self.line} ({self.memory_id}, owner {self.user_id}): {', '.join(self.kinds)}"


@attrs.frozen
class ImportReport:
    """What an import did: memories written, the lines it skipped as invalid, and the lines holding credentials.

    `refused`: the import wrote nothing because a line held a credential and the operator chose `refuse`.
    """

    imported: int
    skipped: tuple[LineProblem, ...]
    secrets: tuple[SecretLine, ...] = ()
    refused: bool = False

    def secret_counts(self) -> dict[str, int]:
        """How many lines held each kind of credential, most frequent first."""
        return dict(Counter(kind for line in self.secrets for kind in line.kinds).most_common())


def import_lines(
    lines: Iterable[str],
    store: BulkMemoryWriter,
    *,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: Callable[[int], None] | None = None,
    screen: SecretScreen | None = None,
) -> ImportReport:
    """Import JSON Lines: validate each, write the valid ones in batches of `batch_size`.

    With `screen`, a line holding a credential is left out and listed in the report's `secrets`.

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
    secret_lines: list[SecretLine] = []
    batch: list[tuple[int, ExportedMemory]] = []
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
            parsed = parse_exported(line, now=now)
        except InvalidInputError as error:
            skipped.append(LineProblem(number, tuple(f"{p.path} {p.message}" for p in error.problems)))
            continue
        secret = _secret_line(screen, number, parsed)
        if secret is not None:
            secret_lines.append(secret)
            continue
        # A batch is one transaction, and a transaction never spans two users: on a sharded
        # database two users may live on two servers, where a commit of both is not atomic.
        if batch and batch[-1][1].memory.user_id != parsed.memory.user_id:
            flush()
        batch.append((number, parsed))
        if len(batch) >= batch_size:
            flush()
    flush()
    return ImportReport(
        imported=imported,
        skipped=tuple(sorted(skipped, key=lambda problem: problem.line)),
        secrets=tuple(secret_lines),
    )


def find_secret_lines(
    lines: Iterable[str], screen: SecretScreen, *, now: Callable[[], datetime] = lambda: datetime.now(UTC)
) -> tuple[SecretLine, ...]:
    """The lines of a JSON Lines import that hold credentials, writing nothing (invalid lines are not judged)."""
    found: list[SecretLine] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            parsed = parse_exported(line, now=now)
        except InvalidInputError:
            continue
        secret = _secret_line(screen, number, parsed)
        if secret is not None:
            found.append(secret)
    return tuple(found)


def _secret_line(screen: SecretScreen | None, number: int, line: ExportedMemory) -> SecretLine | None:
    if screen is None:
        return None
    # Every version: an earlier one is stored too (sealed, never searched), and must not hold a secret either.
    found = [problem for version in (line.memory, *line.revisions) for problem in secrets_in_memory(screen, version)]
    if not found:
        return None
    kinds = tuple(dict.fromkeys(problem.kind for problem in found))
    return SecretLine(line=number, memory_id=line.memory.id, user_id=line.memory.user_id, kinds=kinds)


def _write(store: BulkMemoryWriter, batch: list[tuple[int, ExportedMemory]], skipped: list[LineProblem]) -> int:
    try:
        store.add_many([line.memory for _, line in batch], [v for _, line in batch for v in line.revisions])
        return len(batch)
    except InvalidInputError:
        pass
    written = 0
    for number, line in batch:
        try:
            store.add_many([line.memory], line.revisions)
            written += 1
        except InvalidInputError as error:
            skipped.append(LineProblem(number, tuple(f"{p.path} {p.message}" for p in error.problems)))
    return written


def parse_line(line: str, *, now: Callable[[], datetime]) -> Memory:
    """The memory one JSON line describes; missing ids are minted and a missing `created_at` is now.

    Raises:
        InvalidInputError: every problem found, each naming its field.
    """
    return parse_exported(line, now=now).memory


def parse_exported(line: str, *, now: Callable[[], datetime]) -> ExportedMemory:
    """The memory one JSON line describes, with its earlier versions (`revisions`, format 2).

    A line of format 1 (no `format`) is a memory without history, written by this import (door `import`).

    Raises:
        InvalidInputError: every problem found, each naming its field (`revisions.0.content`).
    """
    try:
        data = strict_json(line)
    except RepeatedKeyError as error:
        raise InvalidInputError("line", str(error)) from error
    except (ValueError, RecursionError) as error:
        where = f" ({error.msg} at column {error.colno})" if isinstance(error, json.JSONDecodeError) else ""
        raise InvalidInputError("line", f"must be one JSON object{where}") from error
    if not isinstance(data, dict):
        raise InvalidInputError("line", "must be one JSON object")
    problems: list[InvalidInputError] = []

    def check(parse: Callable[[], Any]) -> Any:
        try:
            return parse()
        except InvalidInputError as error:
            problems.append(error)
            return None

    check(lambda: _format(data.get("format")))
    scope = check(lambda: _scope(data.get("scope")))
    org_id = check(lambda: ids.parse_id(data.get("org_id"), prefix=ids.ORGANIZATION_PREFIX, field="org_id"))
    author: str | None = None
    former = data.get("author_former_member", False)
    if not isinstance(former, bool) or (former and scope is not Scope.ORG):
        problems.append(
            InvalidInputError("author_former_member", 'must be true or false, and true only for scope "org"')
        )
        former = False
    user_id: Any
    if scope is Scope.ORG:
        # A team memory: its owner is its organization's bank, whatever the line says; a `user_id` that is not
        # that bank is refused, so no line moves a memory into a person's bank or another organization's.
        author = check(lambda: ids.parse_id(data.get("author"), prefix=ids.USER_PREFIX, field="author"))
        user_id = org_bank_owner(org_id) if org_id is not None else None
        if data.get("user_id") is not None and data.get("user_id") != user_id:
            problems.append(InvalidInputError("user_id", "must be absent or the bank of org_id for scope org"))
    else:
        user_id = check(lambda: ids.parse_id(data.get("user_id"), prefix=ids.USER_PREFIX, field="user_id"))
        if data.get("author") is not None:
            problems.append(InvalidInputError("author", 'is only for scope "org"'))
    memory_id = check(lambda: _optional_id(data.get("id"), ids.MEMORY_PREFIX, "id")) or ids.new_id(ids.MEMORY_PREFIX)
    created_at = check(lambda: _optional_time(data.get("created_at"), "created_at")) or now()
    source = check(lambda: _source(data.get("source")))
    current = _version(data, "", check, created_at)
    raw_versions = data.get("revisions")
    if raw_versions is not None and (not isinstance(raw_versions, list) or len(raw_versions) > REVISIONS_KEPT.max):
        problems.append(InvalidInputError("revisions", f"must be a list of at most {REVISIONS_KEPT.max} versions"))
        raw_versions = None
    versions = [
        _version(raw if isinstance(raw, dict) else {}, f"revisions.{index}.", check, created_at)
        for index, raw in enumerate(raw_versions or [])
    ]
    if not problems and versions and current.revision <= max(version.revision for version in versions):
        problems.append(InvalidInputError("revision", "must be higher than every revision in revisions"))
    if problems:
        raise InvalidInputError.from_problems([p for error in problems for p in error.problems])

    def memory_of(version: _Version) -> Memory:
        memory = version.request.to_memory(
            memory_id=memory_id,
            user_id=user_id,
            org_id=org_id,
            source=source,
            created_at=created_at,
            updated_at=version.updated_at,
            context_ids=[context_id or ids.new_id(ids.CONTEXT_PREFIX) for context_id in version.context_ids],
            context_times=version.context_times,
            written_by=version.written_by,
            scope=Scope.ORG if author is not None else Scope.USER,
            author=author,
        )
        return attrs.evolve(
            memory, revision=version.revision, retired_by=version.retired_by, author_former_member=bool(former)
        )

    return ExportedMemory(memory=memory_of(current), revisions=tuple(memory_of(version) for version in versions))


@attrs.frozen
class _Version:
    """One version of a memory as a line (or one of its `revisions`) gives it, checked."""

    request: SaveRequest
    context_ids: list[str | None]
    context_times: list[datetime | None]
    updated_at: datetime | None
    revision: int
    retired_by: str | None
    written_by: WrittenBy | None


def _version(data: dict[str, Any], path: str, check: Callable[[Callable[[], Any]], Any], created_at: datetime) -> Any:
    """The version `data` describes, its problems (named under `path`) given to `check`; None when it has any."""

    def at(parse: Callable[[], Any]) -> Any:
        def prefixed() -> Any:
            try:
                return parse()
            except InvalidInputError as error:
                raise InvalidInputError.from_problems(
                    [attrs.evolve(problem, path=path + problem.path) for problem in error.problems]
                ) from error

        return check(prefixed)

    request = at(lambda: SaveRequest.parse(_with_flat_citations({**data, "supersedes": None})))
    given = data.get("contexts")
    raw_contexts: list[object] = given if isinstance(given, list) else []
    context_ids: list[str | None] = []
    context_times: list[datetime | None] = []
    for index, raw in enumerate(raw_contexts):
        context_ids.append(at(partial(_optional_id, _get(raw, "id"), ids.CONTEXT_PREFIX, f"contexts.{index}.id")))
        context_times.append(at(partial(_optional_time, _get(raw, "created_at"), f"contexts.{index}.created_at")))
    updated_at = at(lambda: _optional_time(data.get("updated_at"), "updated_at"))
    revision = at(lambda: _revision(data.get("revision")))
    retired_by = at(lambda: _optional_id(data.get("retired_by"), ids.MEMORY_PREFIX, "retired_by"))
    written_by = at(lambda: _written_by(data))
    if request is None or revision is None:
        return _Version(SaveRequest(content="-"), [], [], None, 1, None, None)  # reported through `check`
    return _Version(request, context_ids, context_times, updated_at or created_at, revision, retired_by, written_by)


def _format(value: object) -> int:
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= EXPORT_FORMAT):
        return value or 1
    raise InvalidInputError("format", f"must be a format this version reads, 1 to {EXPORT_FORMAT}")


def _scope(value: object) -> Scope:
    if value is None or value == Scope.USER.value:
        return Scope.USER
    if value == Scope.ORG.value:
        return Scope.ORG
    raise InvalidInputError("scope", 'must be "user" or "org"')


def _revision(value: object) -> int:
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 2**31 - 1:
        raise InvalidInputError("revision", "must be a whole number from 1")
    return value


def _written_by(data: dict[str, Any]) -> WrittenBy | None:
    """Who wrote a version: as the line says (format 2, `door` present, null for unknown), else this import."""
    if "door" not in data:
        return WrittenBy(door=Door.IMPORT)
    door, credential = data.get("door"), data.get("credential")
    if door is None:
        return None
    choices = " or ".join(repr(choice.value) for choice in Door)
    if not isinstance(door, str) or door not in {choice.value for choice in Door}:
        raise InvalidInputError("door", f"must be {choices} or null")
    if credential is not None and not isinstance(credential, str):
        raise InvalidInputError("credential", "must be a string or null")
    return WrittenBy(door=Door(door), credential=credential)


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
    """Write every memory of `user_id` (retired ones too) to `out` with its kept earlier versions, one JSON line
    each, newest first; the count.

    Raises:
        InvalidInputError: ("user") `user_id` is not a `usr_` TypeID.
        UnavailableError: storage cannot be reached.
    """
    ids.parse_id(user_id, prefix=ids.USER_PREFIX, field="user")
    return _export_owner(store, user_id, out)


def export_org(store: MemoryStore, org_id: str, out: TextIO) -> int:
    """Write every memory of organization `org_id`'s team bank (retired ones too) to `out` as `export_user` does,
    each line with `scope` "org" and its `author`; the count. The members' own memories are not in it.

    Raises:
        InvalidInputError: ("org") `org_id` is not an `org_` TypeID.
        UnavailableError: storage cannot be reached.
    """
    ids.parse_id(org_id, prefix=ids.ORGANIZATION_PREFIX, field="org")
    return _export_owner(store, org_bank_owner(org_id), out)


def _export_owner(store: MemoryStore, owner: str, out: TextIO) -> int:
    written = 0
    after: ListPosition | None = None
    while True:
        page = store.list(user_id=owner, limit=EXPORT_PAGE_SIZE, after=after, include_retired=True)
        for line in with_history(store, user_id=owner, memories=page):
            out.write(memory_line(line.memory, line.revisions) + "\n")
        written += len(page)
        if len(page) < EXPORT_PAGE_SIZE:
            return written
        after = ListPosition(created_at=page[-1].created_at, memory_id=page[-1].id)


@contextmanager
def private_output(path: Path, *, replace: bool = False) -> Iterator[TextIO]:
    """A text file at `path` readable by its owner only (0600): an export holds a person's memories in clear.

    A new file is created exclusively: an existing `path` is never overwritten unless `replace`,
    and then the new one is written beside it and renamed over it, so a failed export leaves the
    old file (or none); a failed export's own file is removed.

    Raises:
        FileExistsError: `path` exists and `replace` is False.
        OSError: the file cannot be written.
    """
    target = path.with_name(f".{path.name}.{secrets.token_hex(4)}.partial") if replace else path
    descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            yield file
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    if replace:
        os.replace(target, path)


def import_file(
    path: Path,
    store: BulkMemoryWriter,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    show_progress: bool = True,
    screen: SecretScreen | None = None,
    on_secret: str = SKIP_LINE,
) -> ImportReport:
    """`import_lines` over a UTF-8 JSON Lines file, with a progress bar (in bytes) on stderr.

    With `screen`, lines holding credentials are skipped (`on_secret="skip"`), or, with `"refuse"`, the
    file is read once without writing and nothing is imported if any line holds one.

    Raises:
        OSError: the file cannot be read.
        UnavailableError: storage cannot be reached; earlier batches stay written.
    """
    from tqdm import tqdm  # the `sql` extra's: a host importing lines itself needs only the core

    if screen is not None and on_secret == REFUSE_FILE:
        with path.open("rb") as raw:
            found = find_secret_lines((line.decode("utf-8", errors="surrogateescape") for line in raw), screen)
        if found:
            return ImportReport(imported=0, skipped=(), secrets=found, refused=True)
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

        return import_lines(decoded(), store, batch_size=batch_size, progress=advance, screen=screen)
