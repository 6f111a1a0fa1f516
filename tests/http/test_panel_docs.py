"""docs/panel.md says what the code does: its headers, names, commands and pictures are the real ones."""

from __future__ import annotations

import re
from pathlib import Path

from adapters_http import panel
from memorybank.cli import build_parser
from memorybank_core import limits

DOCS = Path(__file__).resolve().parents[2] / "docs"
BROWSER_TESTS = Path(__file__).resolve().parents[1] / "browser"
PANEL_DOC = (DOCS / "panel.md").read_text(encoding="utf-8")
MAX_PICTURE_BYTES = 200_000


def test_the_documented_headers_are_the_served_ones() -> None:
    assert f"Content-Security-Policy: {panel.CONTENT_SECURITY_POLICY}" in PANEL_DOC
    for name, value in panel.SECURITY_HEADERS.items():
        if name != "Cache-Control":
            assert f"{name}: {value}" in PANEL_DOC
    assert f"`{panel.PANEL_HEADER}: 1`" in PANEL_DOC
    assert f"`{panel.SESSION_COOKIE}`" in PANEL_DOC
    assert f"expires after {limits.PANEL_SESSION_TTL_SECONDS // 3600} hours" in PANEL_DOC
    assert f"valid {limits.PANEL_LINK_TTL_DEFAULT_SECONDS // 60} minutes" in PANEL_DOC


def test_the_documented_names_exist() -> None:
    for name in ("set_session_cookie", "panel_calls_only", "panel_routes"):
        assert name in PANEL_DOC
        assert hasattr(panel, name)


def test_every_documented_panel_link_command_parses() -> None:
    parser = build_parser({})
    commands = re.findall(r"^memorybank (panel-link[^#\n]*)", PANEL_DOC, flags=re.MULTILINE)
    assert len(commands) == 3
    for command in commands:
        parser.parse_args(command.replace("usr_…", "usr_01h0000000000000000000000").split())


def test_every_picture_exists_and_stays_small() -> None:
    pictures = re.findall(r"\]\((panel/[^)]+\.png)\)", PANEL_DOC)
    assert len(pictures) >= 8
    for picture in pictures:
        path = DOCS / picture
        assert path.is_file(), picture
        assert path.stat().st_size <= MAX_PICTURE_BYTES, picture


def _recorded_states() -> list[re.Pattern[str]]:
    """Each name a browser test gives `panel.state`, as a pattern (an f-string's fields match any word)."""
    patterns = []
    for test in BROWSER_TESTS.glob("test_*.py"):
        for name in re.findall(r"(?:panel\.state\(|name = )f?\"([^\"]+)\"", test.read_text(encoding="utf-8")):
            fields = re.split(r"\{[^}]*\}", name)
            patterns.append(re.compile("[a-z0-9]+".join(re.escape(part) for part in fields)))
    return patterns


def test_every_picture_is_named_after_a_state_the_browser_tests_record() -> None:
    # So a picture is remade by the command the docs give, and a renamed state cannot leave a stale one.
    states = _recorded_states()
    assert len(states) >= 30
    for picture in re.findall(r"\]\(panel/([^)]+)\.png\)", PANEL_DOC):
        assert any(state.fullmatch(picture) for state in states), picture
