"""Key ring files: created private, read strictly, refused clearly."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from adapters_crypto import FILE_MODE, KeyRing, load_key_ring, new_key_ring, parse_key_ring, write_key_ring
from memorybank_core import InvalidInputError


def test_a_written_ring_is_private_and_reads_back(tmp_path: Path) -> None:
    ring = new_key_ring()
    path = tmp_path / "keys.json"

    write_key_ring(path, ring)

    assert stat.S_IMODE(path.stat().st_mode) == FILE_MODE
    loaded = load_key_ring(path)
    assert dict(loaded.keys) == dict(ring.keys)
    assert (loaded.primary, loaded.index) == (ring.primary, ring.index)


def test_an_existing_key_file_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    write_key_ring(path, new_key_ring())
    before = path.read_text()

    with pytest.raises(FileExistsError):
        write_key_ring(path, new_key_ring())
    assert path.read_text() == before


def test_replacing_a_ring_keeps_it_private(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    ring = new_key_ring()
    write_key_ring(path, ring)

    write_key_ring(path, ring.with_new_primary(), replace=True)

    assert len(load_key_ring(path).keys) == 2
    assert stat.S_IMODE(path.stat().st_mode) == FILE_MODE
    assert not path.with_name("keys.json.new").exists()


def test_a_new_primary_keeps_old_keys_and_keeps_the_index_unless_told() -> None:
    ring = new_key_ring()

    moved = ring.with_new_primary(new_index=True)
    kept = ring.with_new_primary()

    assert ring.primary in moved.keys
    assert moved.primary != ring.primary
    assert moved.index == moved.primary
    assert kept.index == ring.index


def test_a_key_still_in_use_cannot_be_dropped() -> None:
    ring = new_key_ring()

    with pytest.raises(InvalidInputError):
        ring.without(ring.primary)
    rotated = ring.with_new_primary(new_index=True)
    assert ring.primary not in rotated.without(ring.primary).keys
    with pytest.raises(InvalidInputError):
        ring.with_new_primary().without(ring.primary)  # still the index key


def _document(**changes: object) -> str:
    document: dict[str, object] = {
        "memorybank_key_ring": 1,
        "primary": "kaaaaaaaa",
        "keys": {"kaaaaaaaa": "A" * 43 + "="},
    }
    document.update(changes)
    return json.dumps(document)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not json",
        "[]",
        json.dumps({"primary": "kaaaaaaaa", "keys": {"kaaaaaaaa": "A" * 43 + "="}}),  # no format marker
        _document(memorybank_key_ring=2),
        _document(keys={}),
        _document(primary="kbbbbbbbb"),  # primary not held
        _document(index="kbbbbbbbb"),  # index not held
        _document(index=7),
        _document(keys={"kaaaaaaaa": "c2hvcnQ="}),  # 5 bytes, not 32
        _document(keys={"kaaaaaaaa": "not base64!"}),
        _document(keys={"kaaaaaaaa": 12}),
        _document(keys={"Bad Id": "A" * 43 + "="}, primary="Bad Id"),
    ],
)
def test_a_malformed_ring_is_refused_naming_its_origin_never_its_content(text: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_key_ring(text, origin="/etc/memorybank/keys.json")

    assert "/etc/memorybank/keys.json" in str(caught.value)
    assert "A" * 20 not in str(caught.value)


def test_a_missing_key_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="cannot read"):
        load_key_ring(tmp_path / "absent.json")


def test_the_index_defaults_to_the_primary() -> None:
    ring = parse_key_ring(_document(), origin="env")

    assert isinstance(ring, KeyRing)
    assert ring.index == ring.primary == "kaaaaaaaa"
