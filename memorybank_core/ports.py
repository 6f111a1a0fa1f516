"""The ports: what the core needs from the world, named by role.

Every storage method takes the owner as a required keyword, so an unscoped read
cannot even be written. Adapters subclass these explicitly.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime
from typing import Protocol

import attrs

from memorybank_core import limits
from memorybank_core.entities import (
    ApiToken,
    Control,
    MatchKind,
    Memory,
    MemoryChange,
    PanelCredential,
    Quota,
    SubjectKind,
    Usage,
)
from memorybank_core.errors import ScreenBudgetExceededError
from memorybank_core.rate_windows import RateLimit, WindowState


class Principal(Protocol):
    """Who is calling: a read-only view that a host's own user object can satisfy.

    An optional `credential_id` attribute (the token or session behind the call) lets per-credential
    rate limits apply; without it only the user's limits do. It (else an optional `issuer`) is also recorded
    as who wrote each version of a memory: an id, never a secret.
    """

    @property
    def user_id(self) -> str:
        """The owner of every memory this principal reads or writes."""
        ...

    @property
    def organization_id(self) -> str:
        """The organization active for this call; recorded on saves, not used to scope reads."""
        ...

    @property
    def scopes(self) -> Collection[str]:
        """Granted scopes: `mcp:read` for search and list, `mcp:write` for save and delete."""
        ...


@attrs.frozen(kw_only=True)
class ListPosition:
    """A point in a user's newest-first listing: the last memory already returned."""

    created_at: datetime
    memory_id: str


@attrs.frozen(kw_only=True)
class SearchHit:
    """One ranked match from a search engine, before the memory is loaded."""

    memory_id: str
    score: float
    match: MatchKind = "words"
    """Why it matched (`SearchResult.match`); a lexical engine's hits all share words with the query."""
    coverage: float | None = None
    """The share of the query's weight (its terms' idf, the owner's own) the memory's words hold, 0 to 1;
    None when the engine does not say. Hybrid search weighs a word match by it."""
    terms: int | None = None
    """How many of the query's terms the memory's words hold; None when the engine does not say. Hybrid
    search does not return a memory for one incidental word of a longer question."""


class SearchHits(list[SearchHit]):
    """An engine's hits, best first, with how many candidate memories it scored to choose them.

    An engine may return a plain sequence instead; the count then goes unreported. It feeds the
    search event (and so the `memorybank_search_candidates` metric): a count, never a query.
    """

    def __init__(self, hits: Iterable[SearchHit] = (), *, candidate_count: int) -> None:
        super().__init__(hits)
        self.candidate_count = candidate_count


class MemoryStore(Protocol):
    """Durable storage of memories with their contexts, always scoped to one owner."""

    @abstractmethod
    def add(
        self, *, user_id: str, memory: Memory, quota: Quota | None = None, retiring: Sequence[MemoryChange] = ()
    ) -> None:
        """Store `memory` and all its contexts atomically: all of it or none of it.

        The owner's usage (`usage`) grows by one memory and its `charged_characters` in the same
        transaction. With a `quota`, the growth is conditional on staying within it, race-safe
        against concurrent saves of the same owner: at the quota, nothing is written.

        `retiring` are the owner's memories this one replaces (a save's `supersedes`), each changed to
        its retired version in the same transaction, as `revise` would (their previous versions kept).

        Raises:
            QuotaExceededError: the save would take the owner over `quota`; nothing was written.
            NotFoundError: a memory of `retiring` is not the owner's (any more); nothing was written.
            RevisionConflictError: a memory of `retiring` changed since it was read; nothing was written.
            UnavailableError: storage cannot be reached; nothing was written.
        """

    @abstractmethod
    def get_many(self, *, user_id: str, memory_ids: Sequence[str]) -> Mapping[str, Memory]:
        """The owner's memories among `memory_ids` (retired ones too), with contexts, keyed by id; others are absent."""

    @abstractmethod
    def list(
        self, *, user_id: str, limit: int, after: ListPosition | None, include_retired: bool = False
    ) -> Sequence[Memory]:
        """Up to `limit` of the owner's memories, newest first, strictly after `after`; retired ones only if asked."""

    @abstractmethod
    def delete(self, *, user_id: str, memory_id: str) -> bool:
        """Delete the owner's memory with its contexts and every kept revision atomically, and shrink their usage;
        False if none such."""

    @abstractmethod
    def revise(self, *, user_id: str, change: MemoryChange, quota: Quota | None = None) -> bool:
        """Replace the owner's memory `change.previous` by `change.current` atomically: its row, contexts and
        search document, `change.previous` kept as a revision, the oldest revisions beyond
        `change.keep_revisions` removed, and the usage changed by the difference in characters (within
        `quota` when given, if it grows). False when the owner has no such memory (any more).

        Raises:
            RevisionConflictError: the stored revision is not `change.previous.revision`; nothing was written.
            QuotaExceededError: the change would take the owner over `quota`; nothing was written.
            UnavailableError: storage cannot be reached; nothing was written.
        """

    @abstractmethod
    def revisions(self, *, user_id: str, memory_id: str, limit: int, before: int | None) -> Sequence[Memory]:
        """Up to `limit` of the kept earlier versions of the owner's memory, newest first, each with a revision
        below `before` (None: below the current one); empty for a memory that is not the owner's."""

    @abstractmethod
    def usage(self, *, user_id: str) -> Usage:
        """How many memories, and characters of them (`entities.charged_characters`), the owner stores."""


class BulkMemoryWriter(Protocol):
    """A store that writes many memories, of any owners, in one all-or-nothing step (`memorybank import`)."""

    @abstractmethod
    def add_many(self, memories: Sequence[Memory], revisions: Sequence[Memory] = ()) -> None:
        """Store `memories` with their contexts, all or none; each keeps the id, owner, times and revision it
        carries. `revisions` are earlier versions of them (an export's history), kept as `MemoryStore.revise` keeps
        them, in the same step.

        Each owner's usage grows by what was added, with no quota: an import is the operator's act.

        Raises:
            InvalidInputError: ("id") a memory or context id is already stored; nothing was written.
            UnavailableError: storage cannot be reached; nothing was written.
        """


class RevisionEraser(Protocol):
    """Deletes single kept earlier versions of a memory: the operator's remedy for a credential an edit took out of
    a memory while its history still holds it (`memorybank secrets scan --drop-revisions`)."""

    @abstractmethod
    def drop_revisions(self, *, user_id: str, memory_id: str, revisions: Sequence[int]) -> None:
        """Delete the owner's kept versions numbered `revisions` of `memory_id`, atomically; the memory as it is
        now, its other versions and every other owner's rows stay untouched. Numbers not kept are no error.

        Raises:
            UnavailableError: storage cannot be reached; nothing was deleted.
        """


class MemoryOwners(Protocol):
    """Who stores memories: the one read across owners, ids only, for operator walks (`memorybank secrets scan`)."""

    @abstractmethod
    def memory_owners(self) -> Sequence[str]:
        """Every user id that owns at least one memory, in ascending order.

        Raises:
            UnavailableError: storage cannot be reached.
        """


class SearchEngine(Protocol):
    """Owner-scoped relevance search over a user's memories."""

    @abstractmethod
    def search(self, *, user_id: str, query: str, limit: int) -> Sequence[SearchHit]:
        """At most `limit` of the owner's matches, best first (score descending, then newer id first).

        Scores are positive, higher is more relevant. No match is an empty sequence.
        """

    def search_like(self, *, user_id: str, memory_id: str, query: str, limit: int) -> Sequence[SearchHit]:
        """`search` for `query`, the words of the owner's stored memory `memory_id` (a save's `similar`).

        An engine that keeps something computed from that memory may use it in place of the query's own
        (hybrid search: the vector the save embedded, so a save embeds its text once). By default, `search`:
        an engine need not implement it.
        """
        del memory_id  # for the engines that override this
        return self.search(user_id=user_id, query=query, limit=limit)


@attrs.frozen(kw_only=True)
class SecretFinding:
    """What a secret screen found in one text: the kind of credential and the characters [start, end) it spans."""

    kind: str
    """A stable machine name, e.g. `aws_access_key`, `private_key`, `url_password`."""
    label: str
    """The same kind in words for people, e.g. "an AWS access key id"."""
    start: int
    end: int


class ScreenBudget:
    """What a secret screen may still spend on one save's texts, in units of work (`limits.SCREEN_BUDGET`).

    One budget is made per save (or per stored memory a scan reads) and handed to `SecretScreen.find` for each of
    its texts, so the save as a whole has a bound, whatever its shape (ADR 0031). Not thread-safe: one per save.
    """

    def __init__(self, units: int = limits.SCREEN_BUDGET) -> None:
        self.units = units
        self.spent = 0

    def spend(self, units: int = 1) -> None:
        """Count `units` more work.

        Raises:
            ScreenBudgetExceededError: ("text") the budget is spent; the screen stops there and the text counts as
                unscreened (a save is refused).
        """
        self.spent += units
        if self.spent > self.units:
            raise ScreenBudgetExceededError("text", self.units)


class SecretScreen(Protocol):
    """Finds credentials in text a person is about to save, so the bank can refuse them before anything is written."""

    @abstractmethod
    def find(self, text: str, budget: ScreenBudget | None = None) -> Sequence[SecretFinding]:
        """Every credential-looking span of `text`, ordered by `start`; empty for ordinary text.

        Must be pure and thread-safe: it runs on every save, from any thread, and never logs `text`. Its cost is
        linear in `len(text)`; the work beyond its linear scans is charged to `budget` (a fresh
        `ScreenBudget()` when None).

        Raises:
            ScreenBudgetExceededError: `budget` ran out before the text was judged.
        """


class Clock(Protocol):
    """The time source, a port so tests can control it."""

    @abstractmethod
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""


class EventSink(Protocol):
    """Where structured events go. Events carry ids, counts and timings, never content."""

    @abstractmethod
    def emit(self, name: str, fields: Mapping[str, str | int | float]) -> None:
        """Record one event."""


class TokenStore(Protocol):
    """Storage of API tokens for the standalone server. Only hashes are stored, never secrets."""

    @abstractmethod
    def add(self, token: ApiToken) -> None:
        """Store a newly issued token."""

    @abstractmethod
    def find_by_hash(self, token_hash: str) -> ApiToken | None:
        """The token with this secret hash, revoked or not; None if there is none."""

    @abstractmethod
    def get(self, token_id: str) -> ApiToken | None:
        """The token with this id, revoked or not."""

    @abstractmethod
    def list(self, *, user_id: str | None) -> Sequence[ApiToken]:
        """All tokens, or one user's, oldest first."""

    @abstractmethod
    def revoke(self, token_id: str, *, at: datetime) -> bool:
        """Mark the token revoked from `at` on, and count the revocation; False if no live token has that id."""

    @abstractmethod
    def revocation_generation(self) -> int:
        """How many revocations were ever made: it changes whenever any token is revoked."""


class ControlStore(Protocol):
    """Storage of the operators' controls (memorybank_core.controls): gate switches and quotas per subject."""

    @abstractmethod
    def find(self, *, user_id: str, org_id: str | None) -> Sequence[Control]:
        """The controls of this user, this organization (if given) and everyone: what one request needs."""

    @abstractmethod
    def set(self, change: Control) -> Control:
        """Store `change`'s settings that are not None for its subject, stamped `change.updated_at`.

        The subject's control is created if needed; its other settings stay. Returns the control now.
        """

    @abstractmethod
    def clear(self, *, kind: SubjectKind, subject_id: str) -> bool:
        """Remove one subject's control; False if it had none."""

    @abstractmethod
    def unset_quota(self, *, kind: SubjectKind, subject_id: str, at: datetime) -> bool:
        """Forget one subject's quota (both measures) and keep its gate; False if it had no quota set.

        A control left with nothing set is removed.
        """

    @abstractmethod
    def list(self) -> Sequence[Control]:
        """Every control: everyone's first, then organizations', then users', each by id."""


class UnitOfWork(Protocol):
    """One storage session for a whole use case: one connection, however many store calls it makes.

    It is not a transaction around the block: each store call in it is atomic on its own and
    committed when it returns, so later calls (and other sessions) see it, a call that fails writes
    nothing, and a block that raises after a write keeps that write (a "delete all" step cut short
    leaves whole memories deleted or kept). `memorybank_testing.UnitOfWorkContract` checks this.
    """

    @abstractmethod
    def __call__(self) -> AbstractContextManager[None]:
        """A block whose storage calls share one session; a block inside another shares the outer one.

        Each thread (each request) has its own: blocks in two threads never share a session.
        """

    def released(self) -> AbstractContextManager[None]:
        """A block of CPU work (the secret screen) during which an open unit holds no connection.

        A unit that already checked one out hands it back to its pool for the block (ending its read snapshot);
        the next storage call checks one out again. Storage without sessions has nothing to release.
        """
        return nullcontext()


class StoragePorts(Protocol):
    """The storage ports the bank's services are built over (`memorybank.composition.build_services`, and
    so the admin commands): `adapters_mysql.SqlStorage`, or a host's own bundle."""

    @property
    @abstractmethod
    def store(self) -> MemoryStore:
        """The memories."""

    @property
    @abstractmethod
    def search_engine(self) -> SearchEngine:
        """Search over `store`'s memories."""

    @property
    @abstractmethod
    def controls(self) -> ControlStore:
        """The operators' gate switches and quotas."""

    @property
    @abstractmethod
    def token_store(self) -> TokenStore:
        """The API tokens."""

    @property
    @abstractmethod
    def panel_sessions(self) -> PanelSessionStore:
        """The panel's sign-in links and sessions."""

    @property
    @abstractmethod
    def unit_of_work(self) -> UnitOfWork:
        """One session per use case over all of the above."""


class NoUnitOfWork(UnitOfWork):
    """For storage without sessions (the in-memory reference adapter): every block is a no-op."""

    def __call__(self) -> AbstractContextManager[None]:
        return nullcontext()


class PanelSessionStore(Protocol):
    """Storage of the panel's sign-in links and sessions. Only hashes of their secrets are stored."""

    @abstractmethod
    def add(self, credential: PanelCredential) -> None:
        """Store a newly issued link or session.

        Raises:
            UnavailableError: storage cannot be reached; nothing was written.
        """

    @abstractmethod
    def find_by_hash(self, secret_hash: str) -> PanelCredential | None:
        """The credential with this secret hash, live or not; None if there is none."""

    @abstractmethod
    def end(self, credential_id: str, *, at: datetime) -> bool:
        """Mark the credential ended at `at`; False if it was already ended (so a link is used once only)."""

    @abstractmethod
    def end_all(self, *, user_id: str, at: datetime) -> int:
        """End every live link and session of `user_id`; how many were ended."""

    @abstractmethod
    def end_made_from(self, *, credential_id: str, at: datetime) -> int:
        """End every live session made from the credential `credential_id`; how many were ended."""


class RateLimiter(Protocol):
    """Counts requests against named limits in a store every process of a deployment shares."""

    @abstractmethod
    def hit(self, *, key: str, limit: RateLimit) -> WindowState | None:
        """Count one request against `key` unless `limit` is reached; the window's state either way.

        A refused request is not counted. None when the store cannot be reached: the caller then
        allows the request. It never raises for an outage and never waits longer than its timeout.
        """


@attrs.frozen(kw_only=True)
class SignInRedirect:
    """Where to send a browser to sign in at an identity provider, and what it must keep until it returns."""

    url: str
    pending: str = attrs.field(repr=False)
    """A secret for the browser to hold (e.g. in a short-lived cookie) and hand back with the provider's answer."""


class IdentityProviderSignIn(Protocol):
    """Signing a person in through an identity provider's web page (OpenID Connect, for the panel).

    A sign-in method of the panel: the principal `complete` returns goes to `PanelSessions.start`.
    """

    @property
    @abstractmethod
    def display_name(self) -> str:
        """The provider's name as people know it, for "Sign in with <name>"."""

    @abstractmethod
    def begin(self, *, redirect_uri: str) -> SignInRedirect:
        """A new sign-in: the provider URL to send the browser to, and the pending secret bound to this browser.

        Raises:
            UnavailableError: the provider cannot be reached.
        """

    @abstractmethod
    def complete(self, *, pending: str, redirect_uri: str, response: Mapping[str, str]) -> Principal:
        """The person the provider's answer (`response`, the query it sent the browser back with) speaks for.

        Raises:
            SignInDeclinedError: the provider answered with an error (the person declined, or it refused).
            CredentialsRefusedError: the answer does not belong to the pending sign-in or does not verify.
            UnavailableError: the provider cannot be reached.
        """
