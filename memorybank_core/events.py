"""Structured events, and the default sinks. Never content, snippets or query text."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import attrs

from memorybank_core.ports import EventSink

SAVED = "memory.saved"
SEARCHED = "memory.searched"
LISTED = "memory.listed"
DELETED = "memory.deleted"
#: A memory was changed: edited or restored (fields: memory_id, user_id, revision, door).
EDITED = "memory.edited"
#: A person read one memory's versions (fields: memory_id, user_id, result_count).
REVISIONS_READ = "memory.revisions_read"
#: A save's answer looked for similar memories (fields: memory_id, user_id, result_count).
SIMILAR_FOUND = "memory.similar_found"
#: One batch of a person's "delete all" (fields: user_id, deleted, remaining).
DELETED_BATCH = "memory.deleted_batch"
#: A person read their own use and quota (fields: user_id, memories).
USAGE_READ = "memory.usage_read"
#: A person's own export finished streaming (fields: user_id, exported).
EXPORTED = "memory.exported"
#: A save refused because the owner's quota is full (fields: user_id, exceeded).
QUOTA_REFUSED = "memory.quota_refused"
#: A save refused because it held what looks like a credential (fields: user_id, kinds): never the secret.
SECRET_REFUSED = "memory.secret_refused"  # noqa: S105 - an event name, not a secret
#: A request refused because memory is switched off (fields: user_id, org_id, operation, switch).
GATE_REFUSED = "memory.gate_refused"
#: An operator switched memory on or off for a subject (fields: subject_kind, subject_id, enabled).
GATE_CHANGED = "memory.gate_changed"
#: An operator set a subject's quota (fields: subject_kind, subject_id).
QUOTA_CHANGED = "memory.quota_changed"
#: An operator removed every control of a subject (fields: subject_kind, subject_id, cleared).
CONTROLS_CLEARED = "memory.controls_cleared"

_log = logging.getLogger("memorybank.events")


class LoggingEventSink(EventSink):
    """Logs each event at INFO on the `memorybank.events` logger as `name key=value ...`.

    The fields also ride on the record as `event` and `event_fields`, for JSON log formatters.
    """

    def emit(self, name: str, fields: Mapping[str, str | int | float]) -> None:
        rendered = " ".join(f"{key}={value}" for key, value in fields.items())
        _log.info("%s %s", name, rendered, extra={"event": name, "event_fields": dict(fields)})


@attrs.define
class RecordingEventSink(EventSink):
    """Keeps events in a list; for tests and for hosts that forward events themselves."""

    events: list[tuple[str, dict[str, str | int | float]]] = attrs.field(factory=list)

    def emit(self, name: str, fields: Mapping[str, str | int | float]) -> None:
        self.events.append((name, dict(fields)))
