"""Every input bound of the memory bank, in one place.

The values are the reference host's (OpenWork den-api), so an agent that works
there works here. The same constants feed the validators, the SQL column sizes,
the OpenAPI schema, the error messages and the hypothesis strategies.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class TextBound:
    """Inclusive character-count bounds for a text field (counted after trimming)."""

    min: int
    max: int

    def describe(self) -> str:
        """The bound as an error message fragment."""
        return f"must hold {self.min} to {self.max} characters"


@attrs.frozen
class CountBound:
    """Inclusive bounds for an integer such as a page size, with its default."""

    min: int
    max: int
    default: int

    def describe(self) -> str:
        """The bound as an error message fragment."""
        return f"must be an integer from {self.min} to {self.max}"


CONTENT = TextBound(1, 8_000)
TAG = TextBound(1, 64)
TAGS_MAX = 32
CONTEXTS_MAX = 16
SNIPPET = TextBound(1, 4_000)
CITATION_ID = TextBound(1, 128)
QUERY = TextBound(1, 512)
SEARCH_LIMIT = CountBound(1, 50, default=20)
LIST_LIMIT = CountBound(1, 100, default=20)
#: Memories one "delete all" call removes: one bounded transaction; the panel calls again until none are left.
DELETE_ALL_BATCH = CountBound(1, 500, default=200)
#: Memories an export reads per page (one unit of work each), however many there are in all.
EXPORT_PAGE = LIST_LIMIT.max
#: Memories one save may replace (`supersedes`): a correction replaces one or a few, never a bank.
SUPERSEDES_MAX = 10
#: A page of one memory's versions (`GET /v1/memory/{memoryId}/revisions`), newest first.
REVISIONS_LIMIT = CountBound(1, 100, default=20)
#: Earlier versions kept per memory, a setting (`MEMORYBANK_REVISIONS_KEPT`): the newest are kept, an older one
#: goes when an edit makes one more. 0 keeps none (edits still count revisions, for If-Match).
REVISIONS_KEPT = CountBound(0, 1_000, default=20)
#: At most this many of a person's current memories come back as `similar` on a save's answer.
SIMILAR_MAX = 3
#: A credential named in a revision (a token or session id, or an issuer URL), cut to this many characters.
CREDENTIAL = TextBound(1, 255)

#: Units of work the secret screen may spend on one save (all its texts together), or on one stored memory when
#: `secrets scan` reads it back: each unit is one place the screen judges in Python beyond its linear regex scans
#: (an assignment to a secret-named key, a candidate token, a finding). Ordinary memories spend a handful; a text
#: built to be costly (a keyword every five characters) runs out and the save is refused, never stored unscreened
#: (ADR 0031). At about 2 microseconds a unit, the whole budget is a few milliseconds of CPU.
SCREEN_BUDGET = 2_048

#: Search terms one memory's search document holds at most (ADR 0041): its content's terms first, then its tags', then
#: its snippets', cut where the count is reached, as Lucene's `LimitTokenCountAnalyzer` and Elasticsearch's `limit`
#: token filter cut a field. A text yields at most two terms a character (CJK: its bigrams and its characters), so
#: content and tags at their bounds (2 x (8,000 + 32 x 64) = 20,096) are always indexed whole; English prose filling
#: every field to its bound is about 9,400 terms, indexed whole with room to spare. Only term-dense text (CJK, letters
#: between invisible characters) filling its snippets reaches it: the words of the snippets past it find nothing.
#: It bounds what a save writes to the full-text index and what each later search reads back from a candidate
#: (about 22 characters a term), so one memory's index costs the same few milliseconds whatever its script.
INDEXED_TERMS_MAX = 20_480

#: Stored identifiers (memory, context, user, organization, token) fit VARCHAR(64).
ID_MAX_LENGTH = 64
ID = TextBound(1, ID_MAX_LENGTH)
#: A list cursor is opaque but short; anything longer is not one we issued.
CURSOR_MAX_LENGTH = 256

#: A panel sign-in link lives 10 minutes unless its issuer says otherwise, and never more than a day.
PANEL_LINK_TTL_DEFAULT_SECONDS = 10 * 60
PANEL_LINK_TTL_MAX_SECONDS = 24 * 60 * 60
#: A panel session lasts a working day; signing in again is one link or one pasted token away.
PANEL_SESSION_TTL_SECONDS = 12 * 60 * 60

#: The storage quota of every user unless a deployment or an operator says otherwise (docs/operations.md).
#: 10,000 memories is years of deliberate, human-confirmed saves; 20 million characters lets every one of
#: them average 2,000 characters of content, tags and snippets, a quarter of a full-size memory.
QUOTA_MEMORIES_DEFAULT = 10_000
QUOTA_CHARACTERS_DEFAULT = 20_000_000
#: An operator's quota value is a whole number from 0 (no new saves) to this.
QUOTA_MAX = 10**12
#: An offboarding purge deletes this many memories (with their contexts) per transaction unless told
#: otherwise: short transactions, so other users' reads and writes never wait long on its locks.
PURGE_BATCH = CountBound(1, 10_000, default=500)
#: How long a purge rests between batches, in milliseconds: 0 (the default) runs them back to back;
#: a pause leaves the database's CPU and disk to other users' requests, for a longer purge.
PURGE_PAUSE_MS = CountBound(0, 10_000, default=0)
