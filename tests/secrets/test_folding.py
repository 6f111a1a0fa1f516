"""Invisible and look-alike characters do not get a credential past the screen (issue 27, finding 3), and the
ranges it reports point at the characters the person sent."""

from __future__ import annotations

import pytest

from adapters_secrets import DetectSecretsScreen
from adapters_secrets.folding import fold
from harness.secret_cases import Case, harmless, secrets

SCREEN = DetectSecretsScreen()
AWS = next(case for case in secrets() if case.name == "aws key id").secret  # AKIA + 16 characters
PASSWORD = "Winter2024!"
ENCRYPTED = (
    "-----BEGIN ENCRYPTED PRIVATE KEY-----\n"
    "MIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQI\n"
    "-----END ENCRYPTED PRIVATE KEY-----"
)


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


#: (name, text, kind, the characters of the text the finding must cover exactly).
DISGUISED = [
    (
        "zero-width joiner in an AWS key id",
        f"key {AWS[:2]}\u200d{AWS[2:]} ok",
        "aws_access_key",
        f"{AWS[:2]}\u200d{AWS[2:]}",
    ),
    ("soft hyphen in an AWS key id", f"{AWS[:6]}\u00ad{AWS[6:]}", "aws_access_key", f"{AWS[:6]}\u00ad{AWS[6:]}"),
    ("full-width AWS key id", f"key {_fullwidth(AWS)}", "aws_access_key", _fullwidth(AWS)),
    ("Cyrillic A and K in AKIA", "key \u0410\u041aIA" + AWS[4:], "aws_access_key", "\u0410\u041aIA" + AWS[4:]),
    ("Cyrillic I in AKIA", "key AK\u0406A" + AWS[4:], "aws_access_key", "AK\u0406A" + AWS[4:]),
    ("zero-width space in a URL scheme", f"db postgres\u200b://app:{PASSWORD}@db/prod", "url_password", PASSWORD),
    ("full-width at sign in a URL", f"postgres://app:{PASSWORD}\uff20db/prod", "url_password", PASSWORD),
    ("full-width colon in a URL", f"postgres://app\uff1a{PASSWORD}@db/prod", "url_password", PASSWORD),
    ("credentials without a scheme", f"use app:{PASSWORD}@db:5432/prod", "url_password", PASSWORD),
    ("credentials without a scheme, a path", f"use app:{PASSWORD}@db.internal/x", "url_password", PASSWORD),
    ("an encrypted PKCS#8 key", ENCRYPTED, "private_key", ENCRYPTED),
    (
        "a lower-case PEM header",
        "see -----begin rsa private key-----\nMIIEpAIBAAKCAQEA\n-----end rsa private key-----",
        "private_key",
        "-----begin rsa private key-----\nMIIEpAIBAAKCAQEA\n-----end rsa private key-----",
    ),
]


@pytest.mark.parametrize(("name", "text", "kind", "covered"), DISGUISED, ids=[case[0] for case in DISGUISED])
def test_a_disguised_credential_is_found_and_its_range_is_in_the_original_text(
    name: str, text: str, kind: str, covered: str
) -> None:
    found = SCREEN.find(text)

    assert [(f.kind, text[f.start : f.end]) for f in found] == [(kind, covered)]


def test_a_sentence_in_another_script_is_not_read_as_a_key() -> None:
    texts = [
        "Пароль хранится в менеджере паролей, ключ AWS тоже там",
        "\u0391\u039a\u0399\u0391 είναι το πρόθεμα των κλειδιών, όχι το κλειδί",
        "Κωδικός: ρωτήστε την Άννα, είναι στο θησαυροφυλάκιο",
        "東京のラーメン屋は駅の近くにあります 😀👍🏽🇫🇷",
    ]

    assert [SCREEN.find(text) for text in texts] == [[] for _ in texts]


@pytest.mark.parametrize("case", harmless(), ids=[case.name for case in harmless()])
def test_folding_a_harmless_memory_with_invisible_characters_finds_nothing(case: Case) -> None:
    assert SCREEN.find(case.text.replace(" ", " \u200b")) == []


def test_folding_keeps_positions_of_an_ascii_text_and_maps_dropped_and_expanded_characters_back() -> None:
    assert fold("plain ascii").is_identity()
    folded = fold("a\u200bb\ufb01c")  # a, zero-width space, b, the ligature fi, c

    assert folded.text == "abfic"
    assert folded.original(1, 2) == (2, 3)  # b
    assert folded.original(2, 4) == (3, 4)  # fi: both halves come from the one ligature
    assert folded.original(4, 5) == (4, 5)  # c
