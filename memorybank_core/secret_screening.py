"""The save-path secret screen: every text a memory stores goes through the `SecretScreen` port before a write.

Content, each tag and each context snippet are screened; citation ids are not (they are opaque ids,
often random-looking, and a screen would refuse ordinary ones). One function serves the save use
case, bulk import and `memorybank secrets scan`, so all three judge a memory the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import attrs

from memorybank_core.entities import Memory
from memorybank_core.errors import ScreenBudgetExceededError, SecretDetectedError, SecretProblem
from memorybank_core.history import with_history
from memorybank_core.ports import ListPosition, MemoryStore, ScreenBudget, SecretFinding, SecretScreen
from memorybank_core.requests import EditRequest, SaveRequest

#: What the person or agent should do instead, when no particular credential was found (the prompt, the docs).
SAVE_A_POINTER = (
    "A memory must not hold credentials: keep the secret in a password manager or secret store and save where it "
    "is instead, e.g. \"the deploy token is in 1Password under 'ci-deploy'\"."
)

#: The kind `secrets_in_memory` reports for a memory whose texts ran the screen's budget out (ADR 0031).
SCREEN_BUDGET_EXCEEDED = "screen_budget_exceeded"

#: How the advice names a kind whose machine name does not read as a noun.
_SPOKEN_KINDS = {
    "password_assignment": "password",
    "command_line_password": "password",
    "url_password": "database password",
    "high_entropy_string": "key",
    "jwt": "token",
}


def save_a_pointer(kinds: Sequence[str]) -> str:
    """`SAVE_A_POINTER`, its example naming the first kind found (`github_token`: "the github token is in ...")."""
    if not kinds:
        return SAVE_A_POINTER
    spoken = _SPOKEN_KINDS.get(kinds[0], kinds[0].replace("_", " "))
    return SAVE_A_POINTER.replace("the deploy token", f"the {spoken}")


def find_secrets(
    screen: SecretScreen,
    *,
    content: str,
    tags: Sequence[str] = (),
    snippets: Sequence[str] = (),
    budget: ScreenBudget | None = None,
) -> tuple[SecretProblem, ...]:
    """Every credential the screen finds in a memory's texts, each with its field path (`content`, `tags.0`,
    `contexts.1.snippet`), kind and character range; empty for an ordinary memory.

    The texts share one `budget` (a fresh `ScreenBudget()` when None): the memory as a whole has a bound.

    Raises:
        ScreenBudgetExceededError: naming the field where the budget ran out; the memory counts as unscreened.
    """
    return _screened_fields(screen, _fields(content, tags, snippets), budget)


def _screened_fields(
    screen: SecretScreen, fields: Iterable[tuple[str, str]], budget: ScreenBudget | None
) -> tuple[SecretProblem, ...]:
    budget = budget if budget is not None else ScreenBudget()
    problems: list[SecretProblem] = []
    for path, text in fields:
        try:
            found = screen.find(text, budget)
        except ScreenBudgetExceededError as error:
            raise ScreenBudgetExceededError(path, error.budget) from None
        problems.extend(_problem(path, finding) for finding in found)
    return tuple(problems)


def screen_request(screen: SecretScreen | None, request: SaveRequest) -> None:
    """Refuse `request` if it holds a credential; nothing when `screen` is None (an operator turned it off).

    Raises:
        SecretDetectedError: naming each field, kind and range found; never the secret.
        ScreenBudgetExceededError: the screen's budget ran out before it could judge the texts.
    """
    if screen is None:
        return
    found = find_secrets(
        screen,
        content=request.content,
        tags=request.tags,
        snippets=[context.snippet for context in request.contexts],
    )
    if found:
        raise SecretDetectedError(found)


def screen_edit(screen: SecretScreen | None, request: EditRequest) -> None:
    """Refuse an edit if a text it writes holds a credential (what it leaves as it is was screened when written).

    Raises:
        SecretDetectedError: naming each field, kind and range found; never the secret.
        ScreenBudgetExceededError: the screen's budget ran out before it could judge the texts.
    """
    if screen is None:
        return
    fields: list[tuple[str, str]] = []
    if request.content is not None:
        fields.append(("content", request.content))
    fields += [(f"tags.{index}", tag) for index, tag in enumerate(request.tags or ())]
    fields += [(f"contexts.{index}.snippet", context.snippet) for index, context in enumerate(request.contexts or ())]
    found = _screened_fields(screen, fields, None)
    if found:
        raise SecretDetectedError(found)


def secrets_in_memory(screen: SecretScreen, memory: Memory) -> tuple[SecretProblem, ...]:
    """What `find_secrets` finds in a stored (or imported) memory.

    A memory the screen cannot judge within its budget is reported as one problem of kind
    `SCREEN_BUDGET_EXCEEDED`: it may hold anything, so it is treated like one that holds a credential.
    """
    try:
        return find_secrets(
            screen, content=memory.content, tags=memory.tags, snippets=[context.snippet for context in memory.contexts]
        )
    except ScreenBudgetExceededError as error:
        (problem,) = error.problems
        return (SecretProblem(problem.path, problem.message, SCREEN_BUDGET_EXCEEDED, 0, 0),)


#: Memories read per page while scanning an owner's bank.
SCAN_PAGE_SIZE = 100


@attrs.frozen(kw_only=True)
class StoredSecret:
    """A stored version of a memory that holds what looks like a credential (`scan_owner`)."""

    version: Memory
    """The memory as it is now, or one of its kept earlier versions (`earlier`); `version.revision` is its number."""
    problems: tuple[SecretProblem, ...]
    earlier: bool
    """A kept earlier version (history an edit left behind), not what the memory says now."""


def scan_owner(store: MemoryStore, screen: SecretScreen, *, user_id: str) -> Iterator[StoredSecret]:
    """Every stored version of `user_id`'s memories (retired ones and kept earlier versions too) that holds a
    credential, with what was found: memories newest first, each before its own earlier versions, newest first.

    Memories and their versions are read page by page through `store`, so sealed ones are opened as any read
    opens them.

    Raises:
        UnavailableError: storage cannot be reached.
    """
    after: ListPosition | None = None
    while True:
        page = store.list(user_id=user_id, limit=SCAN_PAGE_SIZE, after=after, include_retired=True)
        for line in with_history(store, user_id=user_id, memories=page):
            for version in (line.memory, *line.revisions):
                found = secrets_in_memory(screen, version)
                if found:
                    yield StoredSecret(version=version, problems=found, earlier=version is not line.memory)
        if len(page) < SCAN_PAGE_SIZE:
            return
        after = ListPosition(created_at=page[-1].created_at, memory_id=page[-1].id)


def _fields(content: str, tags: Sequence[str], snippets: Sequence[str]) -> Iterator[tuple[str, str]]:
    yield "content", content
    for index, tag in enumerate(tags):
        yield f"tags.{index}", tag
    for index, snippet in enumerate(snippets):
        yield f"contexts.{index}.snippet", snippet


def _problem(path: str, finding: SecretFinding) -> SecretProblem:
    message = f"holds what looks like {finding.label} (characters {finding.start} to {finding.end})"
    return SecretProblem(path, message, finding.kind, finding.start, finding.end)
