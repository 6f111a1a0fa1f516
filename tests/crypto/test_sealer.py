"""AES-256-GCM sealing and the blind index: what opens, what does not, what the tokens look like."""

from __future__ import annotations

import base64
import re

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters_crypto import AesGcmSealer, KeyedBlindIndex, derive_document_mac_key, derive_index_key, new_key_ring
from adapters_crypto.sealer import TOKEN_BYTES, TOKEN_FORMAT, token_text
from memorybank_core import BrokenSealError, SealBinding

HERE = SealBinding(table="memory", column="content", row_id="mem_01", user_id="usr_alice")


@pytest.fixture
def sealer() -> AesGcmSealer:
    return AesGcmSealer(new_key_ring())


def test_a_sealed_value_opens_to_its_plaintext_under_its_binding(sealer: AesGcmSealer) -> None:
    sealed = sealer.seal("Staging lives in eu-west-1 ☕ 東京", HERE)

    assert sealer.open(sealed, HERE) == "Staging lives in eu-west-1 ☕ 東京"


def test_a_sealed_value_names_its_key_and_holds_no_plaintext(sealer: AesGcmSealer) -> None:
    sealed = sealer.seal("canary-7f3a", HERE)

    assert sealed.startswith(f"1.{sealer.primary_key_id}.")
    assert sealer.key_id_of(sealed) == sealer.primary_key_id
    assert "canary" not in sealed
    assert sealed.isascii()


def test_sealing_twice_gives_different_values(sealer: AesGcmSealer) -> None:
    # A fresh nonce per value: equal texts are not visible as equal ciphertexts.
    assert sealer.seal("same", HERE) != sealer.seal("same", HERE)


@pytest.mark.parametrize(
    "elsewhere",
    [
        SealBinding(table="memory", column="content", row_id="mem_02", user_id="usr_alice"),  # another row
        SealBinding(table="memory", column="content", row_id="mem_01", user_id="usr_bob"),  # another user
        SealBinding(table="memory", column="tags", row_id="mem_01", user_id="usr_alice"),  # another column
        SealBinding(table="memory_context", column="content", row_id="mem_01", user_id="usr_alice"),  # another table
    ],
)
def test_a_value_moved_anywhere_else_does_not_open(sealer: AesGcmSealer, elsewhere: SealBinding) -> None:
    sealed = sealer.seal("private", HERE)

    with pytest.raises(BrokenSealError):
        sealer.open(sealed, elsewhere)


def _flip(sealed: str, position: int) -> str:
    head, _, encoded = sealed.rpartition(".")
    raw = bytearray(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
    raw[position] ^= 0x01
    return head + "." + base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()


@pytest.mark.parametrize("position", [0, 11, 12, 20, -1])  # nonce, first ciphertext byte, middle, tag
def test_a_flipped_byte_anywhere_does_not_open(sealer: AesGcmSealer, position: int) -> None:
    sealed = sealer.seal("a memory worth protecting", HERE)

    with pytest.raises(BrokenSealError):
        sealer.open(_flip(sealed, position), HERE)


@pytest.mark.parametrize(
    "garbage",
    ["", "plain text", "1.", "1.k12345678.", "2.k12345678.AAAA", "1.KEY.AAAA", "1.k12345678.%%%%", "1.k12345678.AAAA"],
)
def test_malformed_values_are_broken_seals_not_crashes(sealer: AesGcmSealer, garbage: str) -> None:
    with pytest.raises(BrokenSealError):
        sealer.open(garbage, HERE)


def test_a_relabelled_key_id_does_not_open(sealer: AesGcmSealer) -> None:
    # The key id is authenticated: pointing a value at another ring key fails, never decrypts.
    ring = new_key_ring().with_new_primary()
    two_keys = AesGcmSealer(ring)
    old, new = sorted(ring.keys, key=lambda key_id: key_id == ring.primary)
    sealed = two_keys.seal("x", HERE)

    with pytest.raises(BrokenSealError):
        two_keys.open(sealed.replace(f".{new}.", f".{old}."), HERE)


def test_a_value_under_a_key_the_ring_lacks_names_that_key(sealer: AesGcmSealer) -> None:
    stranger = AesGcmSealer(new_key_ring())
    sealed = stranger.seal("x", HERE)

    with pytest.raises(BrokenSealError) as caught:
        sealer.open(sealed, HERE)
    assert caught.value.key_id == stranger.primary_key_id


def test_an_old_key_still_opens_after_a_new_primary_is_added() -> None:
    ring = new_key_ring()
    before = AesGcmSealer(ring)
    sealed = before.seal("written last year", HERE)

    after = AesGcmSealer(ring.with_new_primary())

    assert after.open(sealed, HERE) == "written last year"
    assert after.key_id_of(after.seal("new", HERE)) != ring.primary


def test_the_sealer_never_prints_key_material() -> None:
    ring = new_key_ring()
    material = base64.b64encode(ring.keys[ring.primary]).decode()

    assert material not in repr(AesGcmSealer(ring))
    assert material not in repr(ring)


# The blind index


def _index(key_id: str, material: bytes, token_format: int = TOKEN_FORMAT) -> KeyedBlindIndex:
    return KeyedBlindIndex(
        key_id, derive_index_key(material), derive_document_mac_key(material), token_format=token_format
    )


def test_blind_tokens_are_stable_per_owner_and_term_and_differ_across_owners() -> None:
    index = _index("k00000000", b"\x01" * 32)

    assert index.token("usr_a", "staging") == index.token("usr_a", "staging")
    assert index.token("usr_a", "staging") != index.token("usr_b", "staging")
    assert index.token("usr_a", "staging") != index.token("usr_a", "stage")


def test_blind_tokens_fit_every_full_text_tokenizer() -> None:
    # One word of [0-9a-z] within InnoDB's 3..84 token sizes (see docs/security.md).
    index = _index("k00000000", b"\x02" * 32)

    for term in ["go", "東京", "c++", "x" * 200, ""]:
        assert re.fullmatch(r"s2[a-z2-7]{16}", index.token("usr_a", term))


def test_tokens_carry_their_format_and_format_1_is_the_unstamped_original() -> None:
    current = _index("k00000000", b"\x02" * 32)
    original = _index("k00000000", b"\x02" * 32, token_format=1)

    word_order = _index("k00000000", b"\x02" * 32, token_format=2)

    assert current.token_format == TOKEN_FORMAT == 3
    assert re.fullmatch(r"[a-z2-7]{16}", original.token("usr_a", "staging"))
    assert current.token("usr_a", "staging") == "s2" + original.token("usr_a", "staging")
    # Format 3 changes how a row stores its tokens, not the tokens: rows of both share posting lists.
    assert word_order.token("usr_a", "staging") == current.token("usr_a", "staging")


# The tokens' authenticator

ROW = SealBinding(table="memory", column="search_terms", row_id="mem_1", user_id="usr_a")


@pytest.mark.parametrize("token_format", [2, 3])
def test_a_rows_tokens_verify_only_at_their_own_place_with_their_own_count(token_format: int) -> None:
    index = _index("k00000000", b"\x06" * 32, token_format=token_format)
    mac = index.document_mac(ROW, "s2aaaa s2bbbb", 2)

    assert index.verifies(mac, ROW, "s2aaaa s2bbbb", 2)
    assert not index.verifies(mac, ROW, "s2aaaa s2cccc", 2)
    assert not index.verifies(mac, ROW, "s2aaaa s2bbbb", 3)
    assert not index.verifies(mac, attrs.evolve(ROW, row_id="mem_2"), "s2aaaa s2bbbb", 2)
    assert not index.verifies(mac, attrs.evolve(ROW, user_id="usr_b"), "s2aaaa s2bbbb", 2)
    other_key = _index("k00000001", b"\x07" * 32, token_format=token_format)
    assert not other_key.verifies(mac, ROW, "s2aaaa s2bbbb", 2)


def test_format_1_tokens_have_no_authenticator() -> None:
    original = _index("k00000000", b"\x06" * 32, token_format=1)

    with pytest.raises(BrokenSealError):
        original.document_mac(ROW, "aaaa", 1)
    assert not original.verifies("2.x", ROW, "aaaa", 1)


def test_the_authenticator_key_is_neither_the_index_nor_the_sealing_key() -> None:
    material = b"\x08" * 32

    assert derive_document_mac_key(material) not in (material, derive_index_key(material))


def test_blind_tokens_depend_on_the_index_key_and_hide_the_term() -> None:
    one = _index("k00000000", b"\x03" * 32)
    two = _index("k00000001", b"\x04" * 32)

    assert one.token("usr_a", "staging") != two.token("usr_a", "staging")
    assert "stag" not in one.token("usr_a", "staging")


def test_owner_and_term_cannot_run_into_each_other() -> None:
    index = _index("k00000000", b"\x05" * 32)

    assert index.token("usr_ab", "c") != index.token("usr_a", "bc")


def test_the_index_key_is_not_the_sealing_key() -> None:
    ring = new_key_ring()

    assert derive_index_key(ring.keys[ring.primary]) != ring.keys[ring.primary]


# Format 3: a row's tokens keep no word order


def test_format_3_stores_a_rows_tokens_sorted_so_two_orders_of_the_same_words_are_identical() -> None:
    index = _index("k00000000", b"\x08" * 32)

    forwards = index.document_terms("usr_a", ["alpha", "bravo", "charlie", "alpha"])
    backwards = index.document_terms("usr_a", ["alpha", "charlie", "bravo", "alpha"])

    assert forwards == backwards
    tokens = forwards.split(" ")
    assert tokens == sorted(tokens)
    assert tokens.count(index.token("usr_a", "alpha")) == 2  # counts kept: ranking needs them
    assert len(tokens) == 4


@settings(max_examples=100)
@given(st.lists(st.sampled_from(["alpha", "bravo", "東京", "a", "c++"]), max_size=40), st.sampled_from([2, 3]))
def test_a_rows_tokens_are_one_token_a_term_repeats_kept_in_the_formats_order(
    terms: list[str], token_format: int
) -> None:
    # Issue 27: tokens are hashed once per distinct term and written in C; the stored form must not change.
    index = _index("k00000000", b"\x0a" * 32, token_format=token_format)
    tokens = [index.token("usr_a", term) for term in terms]

    stored = index.document_terms("usr_a", terms)

    assert stored == " ".join(sorted(tokens) if token_format >= 3 else tokens)


def test_format_2_kept_word_order() -> None:
    word_order = _index("k00000000", b"\x08" * 32, token_format=2)

    assert word_order.document_terms("usr_a", ["b", "a"]).split(" ") == [
        word_order.token("usr_a", "b"),
        word_order.token("usr_a", "a"),
    ]


def test_a_format_3_authenticator_holds_only_for_the_sorted_form_and_its_own_format() -> None:
    material = b"\x09" * 32
    current = _index("k00000000", material)
    word_order = _index("k00000000", material, token_format=2)
    terms = current.document_terms("usr_a", ["delta", "charlie", "bravo", "alpha"])
    mac = current.document_mac(ROW, terms, 4)
    reversed_terms = " ".join(reversed(terms.split(" ")))

    assert current.verifies(mac, ROW, terms, 4)
    # The same tokens in another order are not this format's form, even with an authenticator over them.
    assert not current.verifies(current.document_mac(ROW, reversed_terms, 4), ROW, reversed_terms, 4)
    # Relabelled as the word-order format (mac prefix and all), or the reverse, the row does not verify.
    assert not word_order.verifies("2" + mac[1:], ROW, terms, 4)
    older = word_order.document_mac(ROW, terms, 4)
    assert not current.verifies("3" + older[1:], ROW, terms, 4)


@settings(max_examples=500)
@given(st.binary(min_size=TOKEN_BYTES, max_size=TOKEN_BYTES))
def test_a_tokens_text_is_the_lowercase_base32_of_its_bytes(body: bytes) -> None:
    # Written ten bits a step for speed (ADR 0041); every stored token depends on it being exactly base32.
    assert token_text(body) == base64.b32encode(body).decode("ascii").lower()
