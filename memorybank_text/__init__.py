"""memorybank_text: the text analysis every search engine shares (tokenizing, folding, stemming, CJK).

It may import the core; the core never imports it. Adapters inject `TextAnalyzer` into
their engines and indexers, and into the in-memory reference.
"""

from memorybank_text.analyzer import ANALYZER_VERSION, TextAnalyzer, Token, normalize, stem, tokens
from memorybank_text.stopwords import STOPWORDS

__all__ = ["ANALYZER_VERSION", "STOPWORDS", "TextAnalyzer", "Token", "normalize", "stem", "tokens"]
