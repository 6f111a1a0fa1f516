"""The composition root: storage -> MemoryBank -> HTTP app. The only place the parts are wired.

Every function takes what it needs as arguments; nothing here runs at import time.
"""

from __future__ import annotations

import attrs
from starlette.applications import Starlette

from adapters_http import bearer_token_resolver, create_app
from adapters_mysql import SqlStorage, open_storage
from memorybank.settings import DatabaseChoice, prepare_embedded_directory
from memorybank_core import Clock, EventSink, MemoryBank, TokenService


def open_ready_storage(choice: DatabaseChoice) -> SqlStorage:
    """Open the chosen database and make sure its schema is the one this version serves.

    SQLite is embedded, so it is initialized in place (created on first use). A MySQL
    schema is never changed here: a missing, behind or index-less schema is refused
    with a message naming `memorybank migrate`.

    Raises:
        InvalidInputError: ("db") a malformed or unsupported URL.
        UnavailableError: the database cannot be reached.
        SchemaNotReadyError: the schema is not ready; the message names the fix.
        OSError: the embedded database's directory cannot be created.
    """
    prepare_embedded_directory(choice)
    storage = open_storage(choice.url)
    try:
        if storage.dialect_name == "sqlite":
            storage.initialize()
        storage.check_ready()
    except BaseException:
        storage.close()
        raise
    return storage


def open_storage_for_migration(choice: DatabaseChoice) -> SqlStorage:
    """Open the chosen database without any schema check, for `memorybank migrate`.

    Raises:
        InvalidInputError: ("db") a malformed or unsupported URL.
        UnavailableError: the database cannot be reached.
        OSError: the embedded database's directory cannot be created.
    """
    prepare_embedded_directory(choice)
    return open_storage(choice.url)


@attrs.frozen(kw_only=True)
class Services:
    """The wired use cases over one storage."""

    bank: MemoryBank
    tokens: TokenService


def build_services(storage: SqlStorage, *, clock: Clock | None = None, events: EventSink | None = None) -> Services:
    """The bank and the token service over `storage`."""
    return Services(
        bank=MemoryBank(store=storage.store, search_engine=storage.search_engine, clock=clock, events=events),
        tokens=TokenService(store=storage.token_store, clock=clock),
    )


def build_app(services: Services) -> Starlette:
    """The standalone HTTP app: bearer tokens from the same database authenticate every request."""
    return create_app(services.bank, bearer_token_resolver(services.tokens))
