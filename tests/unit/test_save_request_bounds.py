"""Every save bound: at the limit accepted, one past rejected, with an error naming field and bound."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memorybank_core import InvalidInputError, Origin, SaveRequest, limits


def problems(body: object) -> dict[str, str]:
    with pytest.raises(InvalidInputError) as error:
        SaveRequest.parse(body)
    return {p.path: p.message for p in error.value.problems}


def test_content_at_the_bound_is_accepted_and_one_more_is_rejected() -> None:
    assert len(SaveRequest.parse({"content": "x" * limits.CONTENT.max}).content) == limits.CONTENT.max
    assert problems({"content": "x" * (limits.CONTENT.max + 1)}) == {"content": "must hold 1 to 8000 characters"}


def test_content_is_trimmed_before_it_is_measured() -> None:
    padded = "  " + "x" * limits.CONTENT.max + "\n\t "
    assert SaveRequest.parse({"content": padded}).content == "x" * limits.CONTENT.max


@pytest.mark.parametrize("content", ["", "   ", "\n\t", None])
def test_blank_or_missing_content_is_rejected(content: object) -> None:
    body = {} if content is None else {"content": content}
    assert set(problems(body)) == {"content"}


@pytest.mark.parametrize("content", [42, ["a"], {"a": 1}, True])
def test_content_must_be_a_string(content: object) -> None:
    assert "must be a string" in problems({"content": content})["content"]


def test_tag_bounds() -> None:
    tags = [f"t{i}" for i in range(limits.TAGS_MAX)]
    assert SaveRequest.parse({"content": "c", "tags": tags}).tags == tuple(tags)
    assert problems({"content": "c", "tags": [*tags, "one-more"]}) == {"tags": "must hold at most 32 distinct tags"}
    assert SaveRequest.parse({"content": "c", "tags": ["x" * limits.TAG.max]}).tags == ("x" * limits.TAG.max,)
    assert problems({"content": "c", "tags": ["ok", "x" * (limits.TAG.max + 1)]}) == {
        "tags.1": "must hold 1 to 64 characters"
    }
    assert problems({"content": "c", "tags": ["  "]}) == {"tags.0": "must hold 1 to 64 characters"}
    assert "must be a list" in problems({"content": "c", "tags": "deploy"})["tags"]


def test_repeated_tags_are_kept_once_in_order() -> None:
    assert SaveRequest.parse({"content": "c", "tags": ["b", " a", "b", "a "]}).tags == ("b", "a")


def test_exact_repeats_are_dropped_before_the_tag_count_is_bounded() -> None:
    # As the schema says: 33 copies of one tag are one tag, and 32 distinct tags repeated are 32.
    assert SaveRequest.parse({"content": "c", "tags": ["deploy"] * (limits.TAGS_MAX + 1)}).tags == ("deploy",)
    distinct = [f"t{i}" for i in range(limits.TAGS_MAX)]
    assert SaveRequest.parse({"content": "c", "tags": distinct * 3}).tags == tuple(distinct)


@pytest.mark.parametrize(
    "invisible", ["\u200b", "\ufeff", "\u200b\u200c\u200d", " \u2060 ", "\u00ad", "\ufe0f", "\u3164"]
)
def test_invisible_only_text_is_refused_like_whitespace_only(invisible: str) -> None:
    assert problems({"content": invisible}) == {
        "content": "must hold a visible character, not only invisible ones such as zero-width spaces"
    }
    assert set(problems({"content": "c", "tags": [invisible]})) == {"tags.0"}
    assert set(problems({"content": "c", "contexts": [{"snippet": invisible}]})) == {"contexts.0.snippet"}


def test_invisible_characters_inside_visible_text_are_kept() -> None:
    # A zero-width joiner holds an emoji sequence together; only invisible-only text is blank.
    assert SaveRequest.parse({"content": "👨\u200d👩 family"}).content == "👨\u200d👩 family"


def test_context_bounds() -> None:
    contexts = [{"snippet": "s"}] * limits.CONTEXTS_MAX
    assert len(SaveRequest.parse({"content": "c", "contexts": contexts}).contexts) == limits.CONTEXTS_MAX
    assert problems({"content": "c", "contexts": [*contexts, {"snippet": "s"}]}) == {
        "contexts": "must hold at most 16 contexts"
    }
    at_max = {"snippet": "s" * limits.SNIPPET.max, "conversation_id": "c" * limits.CITATION_ID.max}
    parsed = SaveRequest.parse({"content": "c", "contexts": [at_max]}).contexts[0]
    assert len(parsed.snippet) == limits.SNIPPET.max
    assert problems(
        {
            "content": "c",
            "contexts": [
                {"snippet": "s" * (limits.SNIPPET.max + 1)},
                {"snippet": "ok", "message_id": "m" * (limits.CITATION_ID.max + 1), "conversation_id": ""},
                {"snippet": "ok", "origin": "somewhere"},
                {"conversation_id": "c1"},
                "just a string",
            ],
        }
    ) == {
        "contexts.0.snippet": "must hold 1 to 4000 characters",
        "contexts.1.message_id": "must hold 1 to 128 characters",
        "contexts.1.conversation_id": "must hold 1 to 128 characters",
        "contexts.2.origin": "must be 'active_conversation' or 'searched_conversation'",
        "contexts.3.snippet": "must be a string of 1 to 4000 characters",
        "contexts.4": "must be an object with a snippet",
    }


def test_every_problem_is_reported_at_once() -> None:
    found = problems({"content": "", "tags": ["x" * 65], "contexts": [{"snippet": ""}]})
    assert set(found) == {"content", "tags.0", "contexts.0.snippet"}


def test_origin_and_citation_ids_are_parsed() -> None:
    context = SaveRequest.parse(
        {"content": "c", "contexts": [{"snippet": "s", "origin": "searched_conversation", "message_id": " m1 "}]}
    ).contexts[0]
    assert context.origin is Origin.SEARCHED_CONVERSATION
    assert context.message_id == "m1"
    assert context.conversation_id is None


@pytest.mark.parametrize("body", [None, [], "content", 3, [{"content": "c"}]])
def test_body_must_be_an_object(body: object) -> None:
    assert problems(body) == {"body": "must be a JSON object"}


@pytest.mark.parametrize(("text", "reason"), [("a\x00b", "NUL"), ("lone \ud800 surrogate", "surrogate")])
def test_text_no_backend_can_store_is_rejected(text: str, reason: str) -> None:
    assert reason in problems({"content": text})["content"]
    assert reason in problems({"content": "ok", "contexts": [{"snippet": text}]})["contexts.0.snippet"]


def test_unknown_fields_are_ignored() -> None:
    assert SaveRequest.parse({"content": "c", "scope": "org", "source": "modal", "extra": [1]}) == SaveRequest(
        content="c"
    )


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(), lambda c: st.lists(c) | st.dictionaries(st.text(), c)
    )
)
def test_any_json_either_parses_or_raises_invalid_input(body: object) -> None:
    try:
        request = SaveRequest.parse(body)
    except InvalidInputError as error:
        problems_found = error.problems
    else:
        problems_found = ()
        assert limits.CONTENT.min <= len(request.content) <= limits.CONTENT.max
    assert isinstance(body, dict) or problems_found


@given(st.dictionaries(st.sampled_from(["content", "tags", "contexts", "scope"]), st.text() | st.lists(st.text())))
def test_parsing_the_same_body_twice_agrees(body: dict[str, object]) -> None:
    def outcome() -> object:
        try:
            return SaveRequest.parse(body)
        except InvalidInputError as error:
            return error.problems

    assert outcome() == outcome()
