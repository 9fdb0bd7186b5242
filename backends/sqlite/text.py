"""Full-text helpers: scope tokens and safe FTS5 queries.

Scopes (workspace, user, conversation, entity type) are written as opaque tokens into the
FTS ``scope`` column, so "BM25 within this conversation" is one FTS5 query that intersects
the conversation's token with the query terms instead of ranking the whole table and
filtering afterwards. User text never reaches FTS5 syntax: each term is quoted.
"""

from __future__ import annotations

import hashlib
import re

__all__ = [
    "STOPWORDS",
    "entity_scope",
    "match_query",
    "message_scope",
    "phrase_query",
    "scope_token",
    "terms",
]

_WORD = re.compile(r"\w+", re.UNICODE)

#: Words too common to rank by; dropped from a query unless nothing else is left.
STOPWORDS = frozenset(
    {
        "a",
        "about",
        "am",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
    }
)

#: At most this many distinct terms go into one FTS query.
MAX_TERMS = 32


def scope_token(kind: str, value: str) -> str:
    """An FTS-safe token for one scope value (``kind`` is a one-letter prefix)."""
    digest = hashlib.blake2b(value.encode("utf-8"), digest_size=10).hexdigest()
    return f"{kind}{digest}"


def message_scope(workspace: str, user_id: str | None, conversation_id: str) -> str:
    return " ".join(
        (
            scope_token("w", workspace),
            scope_token("u", f"{workspace}\x1f{user_id or ''}"),
            scope_token("c", conversation_id),
        )
    )


def entity_scope(workspace: str, type_: str) -> str:
    return " ".join((scope_token("w", workspace), scope_token("t", type_.casefold())))


def terms(text: str) -> list[str]:
    """Distinct lower-cased words of ``text``, stopwords dropped unless all are stopwords."""
    words = list(dict.fromkeys(w.casefold() for w in _WORD.findall(text)))
    content = [w for w in words if w not in STOPWORDS]
    return (content or words)[:MAX_TERMS]


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def match_query(text: str, *scopes: str) -> str | None:
    """An FTS5 MATCH expression: any of the query's words, within every given scope token.

    Returns ``None`` when the text has no searchable word.
    """
    words = terms(text)
    if not words:
        return None
    body = "body : (" + " OR ".join(_quote(w) for w in words) + ")"
    if not scopes:
        return body
    scope = " AND ".join(f"scope : {_quote(s)}" for s in scopes)
    return f"{scope} AND {body}"


def phrase_query(phrase: str, *scopes: str) -> str | None:
    """An FTS5 MATCH expression for ``phrase`` as consecutive words, within the scopes."""
    words = [w.casefold() for w in _WORD.findall(phrase)]
    if not words:
        return None
    body = "body : " + _quote(" ".join(words))
    scope = " AND ".join(f"scope : {_quote(s)}" for s in scopes)
    return f"{scope} AND {body}" if scope else body
