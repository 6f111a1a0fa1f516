"""The core's error hierarchy; facades map each class to one response."""

from __future__ import annotations

from collections.abc import Iterable

import attrs


class MemoryBankError(Exception):
    """Base class of every error the memory bank raises on purpose."""


@attrs.frozen
class Problem:
    """One invalid field: where it is (dotted path) and what is wrong with it."""

    path: str
    message: str


class InvalidInputError(MemoryBankError, ValueError):
    """Input broke a bound or a type rule; nothing was written.

    Carries every problem found, each naming its field and the bound.
    """

    def __init__(self, path: str, message: str) -> None:
        self.problems: tuple[Problem, ...] = (Problem(path, message),)
        super().__init__(self._render())

    @classmethod
    def from_problems(cls, problems: Iterable[Problem]) -> InvalidInputError:
        """Build one error from several problems (at least one)."""
        found = tuple(problems)
        if not found:
            raise ValueError("an InvalidInputError needs at least one problem")
        error = cls(found[0].path, found[0].message)
        error.problems = found
        error.args = (error._render(),)
        return error

    def _render(self) -> str:
        return "; ".join(f"{p.path} {p.message}" for p in self.problems)


@attrs.frozen
class SecretProblem(Problem):
    """A field holding what looks like a credential: its kind and the range [start, end) of characters it spans.

    Never the credential itself: the range lets a person find it in what they sent.
    """

    kind: str
    start: int
    end: int


class SecretDetectedError(InvalidInputError):
    """A save held what looks like a credential (an API key, a token, a private key, a password in a URL, ...).

    `problems` are `SecretProblem`s naming each field, the kind found and where; nothing was written.
    """

    def __init__(self, problems: Iterable[SecretProblem]) -> None:
        found = tuple(problems)
        if not found:
            raise ValueError("a SecretDetectedError needs at least one problem")
        super().__init__(found[0].path, found[0].message)
        self.problems = found
        self.secrets: tuple[SecretProblem, ...] = found
        self.args = (self._render(),)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds found, each once, in order of first appearance."""
        return tuple(dict.fromkeys(problem.kind for problem in self.secrets))


class ScreenBudgetExceededError(InvalidInputError):
    """The secret screen spent its whole budget on a save's texts before it could judge them; nothing was written.

    Refused rather than stored unscreened: the texts are shaped so that screening them would cost far more than
    any ordinary memory (ADR 0031). `path` names the field the budget ran out in.
    """

    def __init__(self, path: str, budget: int) -> None:
        super().__init__(path, f"costs more than the secret screen's budget of {budget} units to screen")
        self.budget = budget


class NotFoundError(MemoryBankError, LookupError):
    """No such memory for this owner. Deliberately identical for 'never existed' and 'not yours'."""

    def __init__(self, what: str = "memory") -> None:
        super().__init__(f"{what} not found")


class ForbiddenError(MemoryBankError, PermissionError):
    """The principal lacks the scope the operation requires."""

    def __init__(self, required_scope: str) -> None:
        self.required_scope = required_scope
        super().__init__(f"this operation requires the scope {required_scope}")


class NotAuthorError(ForbiddenError):
    """An org memory is changed or deleted by someone who is neither its author nor an `org:admin`; nothing changed.

    Raised only for a memory the caller can read (their organization's), so it says nothing about other banks."""

    def __init__(self) -> None:
        super().__init__("org:admin")
        self.args = ("only the memory's author or an org:admin may change or delete an org memory",)


class QuotaExceededError(MemoryBankError, PermissionError):
    """A save would take the owner over their storage quota; nothing was written.

    `limit` and `used` hold each measure ("memories", "characters") at refusal time; `exceeded`
    names the measures the save would have broken, and `requested` what it asked for.
    """

    def __init__(
        self, *, exceeded: tuple[str, ...], limit: dict[str, int], used: dict[str, int], requested: dict[str, int]
    ) -> None:
        self.exceeded = exceeded
        self.limit = limit
        self.used = used
        self.requested = requested
        broken = ", ".join(f"{name} {used[name]} of {limit[name]} used" for name in exceeded)
        super().__init__(f"the storage quota is full ({broken}): delete old memories to save new ones")


class MemoryDisabledError(MemoryBankError, PermissionError):
    """Memory is switched off for this principal (its user, its organization or everyone) by an operator."""

    def __init__(self) -> None:
        super().__init__("memory is switched off for this account")


class CredentialsRefusedError(MemoryBankError):
    """Credentials were presented and refused (expired, for another resource, badly signed, ...).

    `reason` says why in a few words, for the caller and the logs; it never quotes the credentials.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"the credentials were refused: {reason}")


class SignInDeclinedError(CredentialsRefusedError):
    """An identity provider answered a sign-in with an error instead of a person (e.g. `access_denied`).

    `code` is the provider's OAuth error code (RFC 6749 section 4.1.2.1), or `error` when it sent none
    that is well formed; the provider's free-text description is never kept.
    """

    def __init__(self, code: str) -> None:
        self.code = code
        super().__init__(f"the identity provider answered {code}")


class UnavailableError(MemoryBankError, ConnectionError):
    """The storage behind the bank cannot be reached right now; retrying later may succeed."""


class SchemaUnavailableError(UnavailableError):
    """The storage answers but its schema is not there (dropped, or never migrated): an operator must migrate it."""
