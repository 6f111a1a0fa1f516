"""The `## Memory Bank` prompt: search-first, human-verified saves, explicit recall, no secrets."""

from __future__ import annotations

import re

import pytest

from adapters_mcp import MEMORY_BANK_PROMPT, default_catalog
from adapters_mcp.server import prompt_result


def test_it_is_a_memory_bank_section() -> None:
    assert MEMORY_BANK_PROMPT.startswith("## Memory Bank\n")


@pytest.mark.parametrize("bespoke", ["memory_save", "memory_search", "memory_list", "memory_delete"])
def test_it_never_names_a_bespoke_memory_tool(bespoke: str) -> None:
    assert bespoke not in MEMORY_BANK_PROMPT.lower()


def test_it_is_search_first_and_names_both_tools() -> None:
    text = " ".join(MEMORY_BANK_PROMPT.split())
    assert "to save a memory, search for a capability to save a memory, then execute it" in text
    assert "`search_capabilities`" in text
    assert "`execute_capability`" in text


def test_every_capability_name_it_mentions_exists() -> None:
    mentioned = set(re.findall(r"\b(?:get|post|put|patch|delete)[A-Z][A-Za-z]*\b", MEMORY_BANK_PROMPT))

    assert mentioned == set(default_catalog().names)


def test_save_is_drafted_shown_confirmed_then_executed() -> None:
    text = " ".join(MEMORY_BANK_PROMPT.split())
    draft, show, confirm, execute = (
        text.index("Draft the memory"),
        text.index("Show the draft"),
        text.index("Only after they confirm"),
        text.index('{"content": "..."'),
    )
    assert draft < show < confirm < execute
    assert "confirm it or edit it" in text
    assert "self-contained" in text
    assert "snippet" in text


def test_recall_is_explicit_lexical_and_reduced() -> None:
    text = " ".join(MEMORY_BANK_PROMPT.split())
    assert "only when the person asks" in text
    assert "never search it on your own initiative" in text
    assert "lexical" in text
    assert "`q`" in text
    assert "Reduce the results" in text


def test_delete_is_confirmed_first() -> None:
    text = " ".join(MEMORY_BANK_PROMPT.split())
    assert "wait for the person to confirm" in text[text.index("To delete") :]


@pytest.mark.parametrize("kind", ["secrets", "credentials", "API keys", "tokens", "sensitive personal data"])
def test_it_forbids_storing_secrets(kind: str) -> None:
    section = MEMORY_BANK_PROMPT[MEMORY_BANK_PROMPT.index("### Never store secrets") :]
    assert kind in " ".join(section.split())
    assert "snippets" in section


def test_the_mcp_prompt_carries_the_section_verbatim() -> None:
    (message,) = prompt_result().messages
    assert message.role == "user"
    assert message.content.type == "text"
    assert message.content.text == MEMORY_BANK_PROMPT


def test_the_prompt_makes_no_claim_about_how_memories_are_stored_at_rest() -> None:
    from adapters_mcp.prompt import MEMORY_BANK_PROMPT

    # The same text serves sealed and plaintext servers alike.
    assert "plain text" not in MEMORY_BANK_PROMPT
    assert "whether or not the server encrypts it at rest" in MEMORY_BANK_PROMPT


def test_the_team_bank_is_used_only_when_the_person_says_the_memory_is_for_the_team() -> None:
    text = " ".join(MEMORY_BANK_PROMPT.split())
    section = text[text.index("### The team's bank") : text.index("### Never store secrets")]

    assert "only when the person says a memory is for the team" in section
    assert "never for anything personal" in section
    assert '"bankScope": "org"' in section
    assert "tell the person the memory went to the team's bank" in section
