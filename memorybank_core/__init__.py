"""memorybank_core: the domain of the memory bank, free of any infrastructure.

A host imports its names from here; adapters implement its ports.
"""

from memorybank_core.clock import FixedClock, SystemClock
from memorybank_core.entities import (
    ApiToken,
    Citation,
    Memory,
    MemoryContext,
    MemoryPage,
    Origin,
    PanelCredential,
    PanelCredentialKind,
    Scope,
    SearchResult,
    Source,
)
from memorybank_core.errors import (
    CredentialsRefusedError,
    ForbiddenError,
    InvalidInputError,
    MemoryBankError,
    NotFoundError,
    Problem,
    SignInDeclinedError,
    UnavailableError,
)
from memorybank_core.events import LoggingEventSink, RecordingEventSink
from memorybank_core.inmemory import InMemoryPanelSessionStore, InMemoryStore, InMemoryTokenStore
from memorybank_core.panel_sessions import IssuedLink, PanelSessions, StartedSession
from memorybank_core.ports import (
    Clock,
    EventSink,
    IdentityProviderSignIn,
    ListPosition,
    MemoryStore,
    NoUnitOfWork,
    PanelSessionStore,
    Principal,
    SearchEngine,
    SearchHit,
    SearchHits,
    SignInRedirect,
    TokenStore,
    UnitOfWork,
)
from memorybank_core.requests import ContextInput, SaveRequest
from memorybank_core.sealing import BlindIndex, BrokenSealError, SealBinding, Sealer
from memorybank_core.tokens import IssuedToken, TokenPrincipal, TokenService
from memorybank_core.use_cases import READ_SCOPE, WRITE_SCOPE, MemoryBank

__all__ = [
    "READ_SCOPE",
    "WRITE_SCOPE",
    "ApiToken",
    "BlindIndex",
    "BrokenSealError",
    "Citation",
    "Clock",
    "ContextInput",
    "CredentialsRefusedError",
    "EventSink",
    "FixedClock",
    "ForbiddenError",
    "IdentityProviderSignIn",
    "InMemoryPanelSessionStore",
    "InMemoryStore",
    "InMemoryTokenStore",
    "InvalidInputError",
    "IssuedLink",
    "IssuedToken",
    "ListPosition",
    "LoggingEventSink",
    "Memory",
    "MemoryBank",
    "MemoryBankError",
    "MemoryContext",
    "MemoryPage",
    "MemoryStore",
    "NoUnitOfWork",
    "NotFoundError",
    "Origin",
    "PanelCredential",
    "PanelCredentialKind",
    "PanelSessionStore",
    "PanelSessions",
    "Principal",
    "Problem",
    "RecordingEventSink",
    "SaveRequest",
    "Scope",
    "SealBinding",
    "Sealer",
    "SearchEngine",
    "SearchHit",
    "SearchHits",
    "SearchResult",
    "SignInDeclinedError",
    "SignInRedirect",
    "Source",
    "StartedSession",
    "SystemClock",
    "TokenPrincipal",
    "TokenService",
    "TokenStore",
    "UnavailableError",
    "UnitOfWork",
]
