"""The words a query may drop: function words and the phrasing people wrap questions in.

Applied to queries only, never to documents, so a memory still holds every word it
was saved with and a query made only of these words still finds something (see
`TextAnalyzer.query_terms`). Words are compared in their normalized, unstemmed form;
contractions keep their apostrophe, as the analyzer writes them.
"""

from __future__ import annotations

#: English function words (articles, pronouns, auxiliaries, prepositions, conjunctions).
_FUNCTION_WORDS = """
a about above after again against all also am an and any are as at be because been before being below
between both but by can could did do does doing down during each either else ever few for from further
had has have having he her here hers herself him himself his how however i if in into is it its itself
just let may me might mine more most must my myself neither no nor not now of off on once only onto or other
ought our ours ourselves out over own per same shall she should since so some such than that the their
theirs them themselves then there these they this those through thus to too under until up upon us very
was we were what whatever when whenever where wherever whether which while who whoever whom whose why
will with within without would yet you your yours yourself yourselves
"""

#: Contractions, which the analyzer keeps whole with their apostrophe (`she'll` is not `shell`).
_CONTRACTIONS = """
ain't aren't can't couldn't didn't doesn't don't hadn't hasn't haven't he'd he'll i'd i'll i'm isn't
it'll i've mightn't mustn't shan't she'd she'll shouldn't they'd they'll they're they've wasn't we'd
we'll we're we've weren't won't wouldn't you'd you'll you're you've
"""

#: How people ask a memory bank for something: "what did I say about ...", "do you remember ...".
_QUESTION_PHRASING = """
anything everything something tell told say said says saying mention mentioned remember recall
recalled know knew please thing things stuff ok okay lets im
"""

#: Every query stopword.
STOPWORDS: frozenset[str] = frozenset((_FUNCTION_WORDS + _CONTRACTIONS + _QUESTION_PHRASING).split())
