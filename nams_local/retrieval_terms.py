"""The word fallback of retrieval: search terms from a query, and overlap ranking.

Hosted NAMS falls back to a literal text match when a workspace has no embeddings, so a
whole question ("what does Alex's sister do?") matches nothing. The second pass searches
the query's longest words one by one (as typed and in Title Case) and ranks what comes
back by word overlap with the question. Rules follow provider-behavior §3.2 exactly.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = [
    "content_terms",
    "content_words",
    "fallback_terms",
    "others_terms",
    "overlap",
    "own_terms",
    "query_tokens",
    "title_case",
]

MIN_WORD_CHARS = 3
MAX_WORDS = 4
_POSSESSIVES = ("'s", "’s")


def _is_alnum(ch: str) -> bool:
    """Unicode letter (``\\p{L}``) or number (``\\p{N}``)."""
    return unicodedata.category(ch)[0] in ("L", "N")


def _strip_edges(token: str) -> str:
    start, end = 0, len(token)
    while start < end and not _is_alnum(token[start]):
        start += 1
    while end > start and not _is_alnum(token[end - 1]):
        end -= 1
    return token[start:end]


def _strip_possessive(token: str) -> str:
    lowered = token.lower()
    for suffix in _POSSESSIVES:
        if lowered.endswith(suffix):
            return token[: -len(suffix)]
    return token


def title_case(word: str) -> str:
    """First character upper-cased, the rest lower-cased (``NEOVIM`` → ``Neovim``)."""
    return word[:1].upper() + word[1:].lower()


def fallback_terms(query: str) -> list[str]:
    """Up to 8 terms: the 4 longest words (≥ 3 letters/numbers), each as typed and Title Case."""
    words: list[str] = []
    for raw in query.split():
        token = _strip_possessive(_strip_edges(raw))
        if sum(1 for ch in token if _is_alnum(ch)) < MIN_WORD_CHARS:
            continue
        if token not in words:
            words.append(token)
    words = sorted(words, key=len, reverse=True)[:MAX_WORDS]  # stable: ties keep query order
    terms: list[str] = []
    for word in words:
        for term in (word, title_case(word)):
            if term not in terms:
                terms.append(term)
    return terms


def query_tokens(text: str) -> set[str]:
    """Lower-cased words: every non letter/number/space character becomes a space."""
    cleaned = "".join(ch if _is_alnum(ch) or ch.isspace() else " " for ch in text.lower())
    return set(cleaned.split())


def overlap(text: str, query: str | set[str]) -> int:
    """How many distinct words of ``text`` also occur in the query."""
    wanted = query if isinstance(query, set) else query_tokens(query)
    return len(query_tokens(text) & wanted)


#: Words that say nothing about what a question is about: function words and the words
#: every question is made of ("which", "now", "remember"). A shared one is no evidence
#: that a memory answers the question (``retrieval_scores`` uses what is left).
_STOP_TEXT = """
    a about after again all also am an and any are as at be been before being but by can
    could did do does doing done for from get got had has have having he her here hers him
    his how i if in into is it its just know me mine more most my myself no not now of off
    on once only or our ours out over own please remember same she should so some such tell
    than that the their them then there these they this those through to too up us very was
    we were what when where which while who whom whose why will with would you your yours
    moment currently right today day days time thing things
"""
STOP_WORDS = frozenset(_STOP_TEXT.split())
_SUFFIXES = ("ing", "ed", "es", "s")
_MIN_STEM = 3
#: Longer stems are cut to this many characters (``allergic`` / ``allergy`` -> ``aller``).
_STEM_CHARS = 5


def _stem(word: str) -> str:
    """A crude stem (``live``, ``lives``, ``living`` -> ``liv``; ``allergic``, ``allergy``
    -> ``aller``): one suffix and a final ``e`` stripped, then cut to 5 characters. Only
    so that another form of a question's word still counts as shared; a stemmer library
    would do better on English and worse on names, and this is only a yes/no."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_STEM:
            word = word[: -len(suffix)]
            break
    if word.endswith("e") and len(word) > _MIN_STEM:
        word = word[:-1]
    return word[:_STEM_CHARS]


def content_words(text: str) -> set[str]:
    """The words of ``text`` that can carry its topic, as written (lower-cased): stop
    words dropped, at least 3 letters or numbers."""
    return {w for w in query_tokens(text) if len(w) >= MIN_WORD_CHARS and w not in STOP_WORDS}


def content_terms(text: str) -> set[str]:
    """``content_words`` of ``text``, suffix-stripped (``_stem``), so that another form of
    a word counts as the same word."""
    return {_stem(word) for word in content_words(text)}


#: ``X's word``: ``word`` belongs to ``X`` (``[^\W_]`` is a letter or digit in any script).
_POSSESSED = re.compile(r"([^\W_]+)['’]s\s+([^\W_]+)")
#: ``my word`` / ``our word``: it belongs to the speaker.
_SPEAKERS = re.compile(r"\b(?:my|our)\s+([^\W_]+)")
#: Before these, ``'s`` is "is" or "has" ("it's", "that's"), not a possessive.
_CONTRACTED_TEXT = (
    "it that what there here let who he she where how everyone everything nobody something someone"
)
_CONTRACTED = frozenset(_CONTRACTED_TEXT.split())


def _owned(word: str) -> set[str]:
    lowered = word.lower()
    ok = len(lowered) >= MIN_WORD_CHARS and lowered not in STOP_WORDS
    return {_stem(lowered)} if ok else set()


def own_terms(text: str) -> set[str]:
    """Content stems ``text`` says belong to the speaker: ``birth`` in "When is my
    birthday?", ``dog`` in "What is my dog's name?"."""
    return {stem for m in _SPEAKERS.finditer(text.lower()) for stem in _owned(m.group(1))}


def others_terms(text: str) -> set[str]:
    """Content stems ``text`` says belong to someone else and never to the speaker:
    ``birth`` in "It is Lars's birthday on Monday". A question about *my* birthday
    shares that word with the hit but not its subject, so it is no lexical support."""
    found = {
        stem
        for m in _POSSESSED.finditer(text)
        if m.group(1).lower() not in _CONTRACTED
        for stem in _owned(m.group(2))
    }
    return found - own_terms(text)
