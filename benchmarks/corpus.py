"""Synthetic memories with a controlled vocabulary, as `memorybank import` JSON Lines.

Text is English function words (at about their real frequencies: `and` in most memories, `did`
and `say` in some) mixed with a Zipf-distributed vocabulary of made-up content words, so every
posting list has a realistic length. Four *planted* words occur with set probabilities in every
user's memories, so a query's cost can be read against how many rows hold its words:

| word | share of memories |
|---|---|
| `zanzibar` | about 100 memories in the whole table, whatever its size |
| `lighthouse` | 1 % |
| `deployment` | 10 % |
| `project` | 84 % |

User 0 is the measured user: exactly 100 memories, with `zanzibar` in 2, `lighthouse` in 1,
`deployment` in 10 and `project` in 84. Everything is seeded: the same arguments give the same lines.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import attrs
import uuid_utils
from typeid import TypeID

from memorybank_core import ids

RARE, ONE_PERCENT, TEN_PERCENT, COMMON = "zanzibar", "lighthouse", "deployment", "project"
RARE_ROWS_PER_TABLE = 100
MEMORIES_PER_USER = 100

#: The queries the scale benchmark times, by name.
QUERIES = {
    "rare word": RARE,
    "1 % word": ONE_PERCENT,
    "10 % word": TEN_PERCENT,
    "84 % word": COMMON,
    "sentence": f"what did I say about the {ONE_PERCENT} and the {TEN_PERCENT}?",
}

#: Function words and how many times each appears per 1,000 words of text (roughly English).
_FUNCTION_WORDS = {
    "the": 60,
    "and": 30,
    "to": 28,
    "of": 26,
    "a": 24,
    "i": 22,
    "in": 18,
    "that": 12,
    "it": 12,
    "is": 11,
    "for": 10,
    "my": 10,
    "with": 8,
    "on": 8,
    "was": 7,
    "we": 7,
    "this": 6,
    "be": 6,
    "at": 5,
    "you": 5,
    "have": 5,
    "from": 4,
    "not": 4,
    "but": 4,
    "they": 4,
    "about": 3,
    "what": 3,
    "did": 3,
    "say": 2,
    "when": 2,
    "will": 2,
    "our": 2,
}
_SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ren",
    "tas",
    "vor",
    "pel",
    "dun",
    "sil",
    "bra",
    "qui",
    "fen",
    "mor",
    "tal",
    "zen",
    "gri",
    "hov",
    "lum",
    "nes",
    "pra",
    "sto",
    "wex",
    "yar",
    "cel",
]
_TAGS = ["work", "family", "health", "travel", "infra", "finance", "ideas", "reading", "music", "food"]
_START = datetime(2025, 1, 1, tzinfo=UTC)


@attrs.frozen
class CorpusSpec:
    """How big a corpus to make."""

    users: int
    memories_per_user: int = MEMORIES_PER_USER
    vocabulary: int = 30_000
    seed: int = 6

    @property
    def rows(self) -> int:
        """Memories in the corpus."""
        return self.users * self.memories_per_user


def _vocabulary(size: int, rng: random.Random) -> list[str]:
    words: dict[str, None] = {}
    planted = {RARE, ONE_PERCENT, TEN_PERCENT, COMMON}
    while len(words) < size:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.choice((2, 2, 3, 3, 4))))
        if word not in planted and word not in _FUNCTION_WORDS:
            words[word] = None
    return list(words)


class CorpusWriter:
    """Generates the corpus of a `CorpusSpec`, line by line."""

    def __init__(self, spec: CorpusSpec) -> None:
        self.spec = spec
        self._rng = random.Random(spec.seed)
        vocabulary = _vocabulary(spec.vocabulary, self._rng)
        # Zipf (s = 1.1) over the content vocabulary, then function words at their own rates.
        content_weights = [1 / (rank**1.1) for rank in range(1, len(vocabulary) + 1)]
        function_share = sum(_FUNCTION_WORDS.values()) / 1000
        content_total = sum(content_weights)
        scale = (1 - function_share) / content_total
        self._words = [*vocabulary, *_FUNCTION_WORDS]
        cumulative = []
        running = 0.0
        for weight in [w * scale for w in content_weights] + [n / 1000 for n in _FUNCTION_WORDS.values()]:
            running += weight
            cumulative.append(running)
        self._cumulative = cumulative
        self.user_ids = [
            ids.new_id(ids.USER_PREFIX) if index else _measured_user(spec.seed) for index in range(spec.users)
        ]
        self.org_ids = [ids.new_id(ids.ORGANIZATION_PREFIX) for _ in range(max(1, spec.users // 10))]

    @property
    def measured_user(self) -> str:
        """The user whose searches are timed."""
        return self.user_ids[0]

    def probe_sentences(self, count: int) -> list[str]:
        """`count` memories' worth of text drawn like the corpus's own (same vocabulary and word rates), for the
        saves a benchmark times: each shares common words with the bank, as a person's next memory does, and none
        repeats another, so a save's `similar` look-up (ADR 0035) weighs an ordinary bank, not a pile of copies."""
        return [" ".join(self._sentence(self._rng.randint(12, 48))).capitalize() + "." for _ in range(count)]

    def _sentence(self, length: int) -> list[str]:
        return self._rng.choices(self._words, cum_weights=self._cumulative, k=length)

    def lines(self) -> Iterator[str]:
        """Every memory as one JSON line, user by user."""
        rare_chance = max(0, RARE_ROWS_PER_TABLE - 2) / max(1, self.spec.rows - self.spec.memories_per_user)
        for user_index, user_id in enumerate(self.user_ids):
            org_id = self.org_ids[user_index % len(self.org_ids)]
            for n in range(self.spec.memories_per_user):
                if user_index == 0:
                    planted = {
                        RARE: n in (3, 7),
                        ONE_PERCENT: n == 5,
                        TEN_PERCENT: n % 10 == 0,
                        COMMON: n < 84,
                    }
                else:
                    roll = self._rng.random
                    planted = {
                        RARE: roll() < rare_chance,
                        ONE_PERCENT: roll() < 0.01,
                        TEN_PERCENT: roll() < 0.10,
                        COMMON: roll() < 0.84,
                    }
                yield self._line(user_id, org_id, n, [word for word, present in planted.items() if present])

    def _line(self, user_id: str, org_id: str, n: int, planted: list[str]) -> str:
        words = self._sentence(self._rng.randint(12, 48))
        for word in planted:
            words.insert(self._rng.randrange(len(words) + 1), word)
        content = " ".join(words).capitalize() + "."
        line: dict[str, object] = {
            "user_id": user_id,
            "org_id": org_id,
            "content": content,
            "tags": self._rng.sample(_TAGS, self._rng.choice((0, 1, 1, 2))),
            "created_at": (_START + timedelta(minutes=n * 97 + self._rng.randrange(90))).isoformat(),
        }
        if self._rng.random() < 0.2:
            line["contexts"] = [{"snippet": " ".join(self._sentence(self._rng.randint(6, 16)))}]
        return json.dumps(line, separators=(",", ":"))


def _measured_user(seed: int) -> str:
    # Stable across runs, so a kept database and a new run agree on who is measured.
    suffix = uuid_utils.UUID(int=random.Random(seed).getrandbits(128))
    return str(TypeID.from_uuid(suffix, prefix=ids.USER_PREFIX))
