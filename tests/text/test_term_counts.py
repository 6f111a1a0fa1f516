"""How often each query token occurs in a candidate's stored tokens: the same counts on both of `term_counts`' paths
(a `str.count` pass per token for short queries, one split for long ones: issue 27's 500-bigram CJK query), and
only the tokens it holds (ranking works per token held: a save's `similar` asks with every word of a memory)."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from memorybank_search import term_counts

#: Few distinct tokens, one a prefix of another, so repeats sit back to back and prefixes must not count.
token = st.sampled_from(["k3v9x0qago", "k3v9x0qagoo", "k3v9x0qa_0123456789abc", "k3v9x0qacat", "k3v9x0qa3"])


@settings(max_examples=300)
@given(st.lists(token, max_size=60), st.lists(token, min_size=1, max_size=20))
def test_counts_are_whole_token_occurrences_whatever_the_query_length(stored: list[str], query: list[str]) -> None:
    wanted = list(dict.fromkeys(query))
    # Long queries take the split path: pad with tokens the document never holds.
    padded = [*wanted, *(f"k3v9x0qamissing{index}" for index in range(12))]
    expected = Counter(stored)

    short = term_counts(wanted, " ".join(stored))
    long = term_counts(padded, " ".join(stored))

    assert short == {name: expected[name] for name in wanted if expected[name]}
    assert long == {name: expected[name] for name in padded if expected[name]}


@settings(max_examples=200)
@given(st.lists(st.integers(0, 30), max_size=80), st.lists(st.integers(0, 30), min_size=9, max_size=40))
def test_a_candidate_holding_many_of_a_long_querys_tokens_is_counted_whole(stored: list[int], query: list[int]) -> None:
    # Past a few tokens held, or a long candidate, the counts come from one pass over the split instead of a
    # `list.count` per token held.
    wanted = list(dict.fromkeys(f"k3v9x0qa{number}" for number in query))
    for names in ([f"k3v9x0qa{number}" for number in stored], [f"k3v9x0qa{number}" for number in stored * 9]):
        expected = Counter(names)

        assert term_counts(wanted, " ".join(names)) == {name: expected[name] for name in wanted if expected[name]}
