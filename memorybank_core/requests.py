"""What a caller asks the bank to do, parsed from untrusted JSON-like data.

Parsing collects every problem (each naming its field and bound) before raising,
so a client fixes its request in one round trip. Unknown keys are ignored, and so
are `scope` and `source`: the server decides those (a save names its bank with `bankScope`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import TypeVar

import attrs

from memorybank_core import limits
from memorybank_core.banks import BankScope
from memorybank_core.entities import Citation, Memory, MemoryContext, Origin, Scope, Source, WrittenBy
from memorybank_core.errors import InvalidInputError, Problem
from memorybank_core.validation import clean_count, clean_text

T = TypeVar("T")

DELETE_ALL_CONFIRMATION = "delete all"
"""What a "delete all" call must say in `confirm`."""


@attrs.frozen(kw_only=True)
class ContextInput:
    """One provenance snippet offered with a save."""

    snippet: str
    conversation_id: str | None = None
    message_id: str | None = None
    origin: Origin | None = None


@attrs.frozen(kw_only=True)
class SaveRequest:
    """A validated, trimmed request to save one memory."""

    content: str
    tags: tuple[str, ...] = ()
    contexts: tuple[ContextInput, ...] = ()
    supersedes: tuple[str, ...] = ()
    """Ids of the caller's memories this one replaces: they are retired in the save's transaction."""
    bank: BankScope = BankScope.USER
    """The bank to save in (`bankScope`): the caller's own (default) or their organization's (`org`)."""

    @classmethod
    def parse(cls, data: object) -> SaveRequest:
        """Parse a JSON object `{content, tags?, contexts?, supersedes?, bankScope?}`.

        Raises:
            InvalidInputError: listing every invalid field; nothing is saved.
        """
        collector = _Collector()
        if not isinstance(data, Mapping):
            raise InvalidInputError("body", "must be a JSON object")
        content = collector.check(lambda: clean_text(data.get("content"), path="content", bound=limits.CONTENT))
        tags = collector.check(lambda: _parse_tags(data.get("tags"), collector))
        contexts = collector.check(lambda: _parse_contexts(data.get("contexts"), collector))
        supersedes = collector.check(lambda: _parse_supersedes(data.get("supersedes")))
        bank = collector.check(lambda: BankScope.parse(data.get("bankScope")))
        if (
            content is None
            or tags is None
            or contexts is None
            or supersedes is None
            or bank is None
            or collector.problems
        ):
            raise InvalidInputError.from_problems(collector.problems)
        return cls(content=content, tags=tags, contexts=contexts, supersedes=supersedes, bank=bank)

    def to_memory(
        self,
        *,
        memory_id: str,
        user_id: str,
        org_id: str,
        source: Source,
        created_at: datetime,
        context_ids: Sequence[str],
        context_times: Sequence[datetime | None] = (),
        updated_at: datetime | None = None,
        written_by: WrittenBy | None = None,
        scope: Scope = Scope.USER,
        author: str | None = None,
    ) -> Memory:
        """The memory this request describes, once its ids and times are chosen, in the bank `scope` (the use case
        decides it, never the client's `scope`); an org memory names its `author`.

        `context_ids` gives one id per context; a context without a time in `context_times` gets `created_at`.
        """
        contexts = build_contexts(
            self.contexts, memory_id=memory_id, context_ids=context_ids, created_at=created_at, times=context_times
        )
        return Memory(
            id=memory_id,
            user_id=user_id,
            org_id=org_id,
            scope=scope,
            content=self.content,
            source=source,
            tags=self.tags,
            created_at=created_at,
            updated_at=updated_at or created_at,
            contexts=contexts,
            written_by=written_by,
            author=author,
        )


def build_contexts(
    inputs: Sequence[ContextInput],
    *,
    memory_id: str,
    context_ids: Sequence[str],
    created_at: datetime,
    times: Sequence[datetime | None] = (),
) -> tuple[MemoryContext, ...]:
    """The contexts `inputs` describe, once their ids are chosen; one without a time in `times` gets `created_at`."""
    if len(context_ids) != len(inputs):
        raise ValueError("one context id per context")
    padded = list(times) + [None] * (len(inputs) - len(times))
    return tuple(
        MemoryContext(
            id=context_id,
            memory_id=memory_id,
            snippet=context.snippet,
            citation=(
                Citation(conversation_id=context.conversation_id, message_id=context.message_id)
                if context.conversation_id is not None or context.message_id is not None
                else None
            ),
            origin=context.origin,
            created_at=time or created_at,
        )
        for context, context_id, time in zip(inputs, context_ids, padded, strict=True)
    )


#: The fields an edit may change (at least one of them, or `retired`).
EDITABLE_FIELDS = ("content", "tags", "contexts")


@attrs.frozen(kw_only=True)
class EditRequest:
    """A validated change of one memory: each field given replaces the stored one; None leaves it as it is."""

    content: str | None = None
    tags: tuple[str, ...] | None = None
    contexts: tuple[ContextInput, ...] | None = None
    restore: bool = False
    """`{"retired": false}`: bring a retired memory back into search and lists."""
    revision: int | None = None
    """The revision the change was based on, for callers that cannot send `If-Match` (an agent's rail)."""

    @classmethod
    def parse(cls, data: object) -> EditRequest:
        """Parse a JSON object `{content?, tags?, contexts?, retired?: false, revision?}`, with a save's bounds.

        Raises:
            InvalidInputError: listing every invalid field, or a body that changes nothing; nothing is written.
        """
        if not isinstance(data, Mapping):
            raise InvalidInputError("body", "must be a JSON object")
        collector = _Collector()
        content = (
            collector.check(lambda: clean_text(data.get("content"), path="content", bound=limits.CONTENT))
            if data.get("content") is not None
            else None
        )
        tags = collector.check(lambda: _parse_tags(data["tags"], collector)) if data.get("tags") is not None else None
        contexts = (
            collector.check(lambda: _parse_contexts(data["contexts"], collector))
            if data.get("contexts") is not None
            else None
        )
        retired = data.get("retired")
        if retired is not None and retired is not False:
            collector.problems.append(
                Problem(
                    "retired",
                    "can only be false (restore); to retire a memory, save the one that replaces it with supersedes",
                )
            )
        revision = data.get("revision")
        if revision is not None and (isinstance(revision, bool) or not isinstance(revision, int) or revision < 1):
            collector.problems.append(Problem("revision", "must be a whole number from 1"))
        if collector.problems:
            raise InvalidInputError.from_problems(collector.problems)
        if content is None and tags is None and contexts is None and retired is None:
            raise InvalidInputError("body", "must change at least one of content, tags, contexts or retired")
        return cls(
            content=content,
            tags=tags,
            contexts=contexts,
            restore=retired is False,
            revision=revision if isinstance(revision, int) else None,
        )


def _confirmed(_instance: object, _attribute: attrs.Attribute[str], value: object) -> None:
    if value != DELETE_ALL_CONFIRMATION:
        raise InvalidInputError("confirm", f'must be "{DELETE_ALL_CONFIRMATION}"')


def _batch_size(_instance: object, _attribute: attrs.Attribute[int], value: object) -> None:
    clean_count(value, path="limit", bound=limits.DELETE_ALL_BATCH)


@attrs.frozen(kw_only=True)
class DeleteAll:
    """One confirmed step of "delete all": up to `limit` of the caller's memories.

    `confirm` must be `DELETE_ALL_CONFIRMATION`, so nobody deletes everything by accident.

    Raises:
        InvalidInputError: (on construction) a wrong `confirm` or a `limit` out of bounds.
    """

    confirm: str = attrs.field(validator=_confirmed)
    limit: int = attrs.field(default=limits.DELETE_ALL_BATCH.default, validator=_batch_size)

    @classmethod
    def parse(cls, data: object) -> DeleteAll:
        """Parse a JSON object `{confirm, limit?}`, reporting every problem at once.

        Raises:
            InvalidInputError: listing every invalid field; nothing is deleted.
        """
        if not isinstance(data, Mapping):
            raise InvalidInputError("body", "must be a JSON object")
        collector = _Collector()
        confirm = data.get("confirm")
        if confirm != DELETE_ALL_CONFIRMATION:
            collector.problems.append(Problem("confirm", f'must be "{DELETE_ALL_CONFIRMATION}"'))
        limit = data.get("limit")
        count: int | None = None
        if "limit" in data and limit is None:
            # An explicit null is not "the default": it is a limit of the wrong type.
            collector.problems.append(Problem("limit", limits.DELETE_ALL_BATCH.describe()))
        else:
            # `1.0` is refused like any other non-integer (issue 27): a proxy that reads it as a float must not
            # judge a different request than the server does. Only a JSON integer literal is an integer here.
            count = collector.check(lambda: clean_count(limit, path="limit", bound=limits.DELETE_ALL_BATCH))
        if collector.problems:
            raise InvalidInputError.from_problems(collector.problems)
        assert count is not None  # noqa: S101 - no problem was found, so the limit was read
        return cls(confirm=DELETE_ALL_CONFIRMATION, limit=count)


class _Collector:
    """Runs checks, remembering each InvalidInputError instead of stopping at the first."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def check(self, parse: Callable[[], T]) -> T | None:
        try:
            return parse()
        except InvalidInputError as error:
            self.problems.extend(error.problems)
            return None


def _parse_tags(value: object, collector: _Collector) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise InvalidInputError("tags", f"must be a list of at most {limits.TAGS_MAX} strings")
    # Exact repeats add nothing to a memory: they are dropped before the count is bounded, so
    # 33 copies of one tag are one tag. Counted before each item is judged, so a huge list is
    # refused in one problem, not one per item.
    if len({_repeat_key(item) for item in value}) > limits.TAGS_MAX:
        raise InvalidInputError("tags", f"must hold at most {limits.TAGS_MAX} distinct tags")
    tags: dict[str, None] = {}
    for index, item in enumerate(value):
        tag = collector.check(partial(clean_text, item, path=f"tags.{index}", bound=limits.TAG))
        if tag is not None:
            tags.setdefault(tag)
    return tuple(tags)


def _parse_supersedes(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    expected = f"must be a list of at most {limits.SUPERSEDES_MAX} memory ids"
    if not isinstance(value, list) or len(value) > limits.SUPERSEDES_MAX:
        raise InvalidInputError("supersedes", expected)
    if not all(isinstance(item, str) and limits.ID.min <= len(item) <= limits.ID.max for item in value):
        raise InvalidInputError("supersedes", expected)
    # A malformed id is not refused here: like any id that is not the caller's, it is "not found" (404).
    return tuple(dict.fromkeys(value))


def _repeat_key(item: object) -> object:
    # What makes two items the same tag: equal strings once trimmed; anything else stays distinct.
    return item.strip() if isinstance(item, str) else object()


def _parse_contexts(value: object, collector: _Collector) -> tuple[ContextInput, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise InvalidInputError("contexts", f"must be a list of at most {limits.CONTEXTS_MAX} objects")
    if len(value) > limits.CONTEXTS_MAX:
        raise InvalidInputError("contexts", f"must hold at most {limits.CONTEXTS_MAX} contexts")
    contexts: list[ContextInput] = []
    for index, item in enumerate(value):
        context = collector.check(partial(_parse_context, item, f"contexts.{index}", collector))
        if context is not None:
            contexts.append(context)
    return tuple(contexts)


def _parse_context(value: object, path: str, collector: _Collector) -> ContextInput | None:
    if not isinstance(value, Mapping):
        raise InvalidInputError(path, "must be an object with a snippet")
    before = len(collector.problems)
    snippet = collector.check(lambda: clean_text(value.get("snippet"), path=f"{path}.snippet", bound=limits.SNIPPET))
    ids = {
        key: collector.check(partial(_optional_text, value.get(key), f"{path}.{key}", limits.CITATION_ID))
        for key in ("conversation_id", "message_id")
    }
    origin = collector.check(lambda: _parse_origin(value.get("origin"), f"{path}.origin"))
    if len(collector.problems) > before or snippet is None:
        return None
    return ContextInput(
        snippet=snippet, conversation_id=ids["conversation_id"], message_id=ids["message_id"], origin=origin
    )


def _optional_text(value: object, path: str, bound: limits.TextBound) -> str | None:
    return None if value is None else clean_text(value, path=path, bound=bound)


def _parse_origin(value: object, path: str) -> Origin | None:
    if value is None:
        return None
    try:
        if not isinstance(value, str):
            raise ValueError(value)
        return Origin(value)
    except ValueError as error:
        choices = " or ".join(repr(o.value) for o in Origin)
        raise InvalidInputError(path, f"must be {choices}") from error
