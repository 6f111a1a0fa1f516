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
