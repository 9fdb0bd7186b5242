"""Finding candidate names in a message: sentences, words, lexicon hits, capitalised runs.

The first pass of :class:`~nams_local.extraction.rules.RuleExtractor`. Runs of capitalised
words (plus lower-case words the lexicon knows, such as "berlin" or "vscode") become
candidates; words that are never names (greetings, days, pronouns, "Thanks", "Sure") are
skipped; a lone unknown capitalised word opening a sentence is marked ``weak`` and only
kept if a pattern uses it. A candidate's type comes from the lexicon, its last word
("Acme Corp", "Nandi Hills", "Web Summit"), a known first name, or later from the
pattern it takes part in (:mod:`nams_local.extraction.rules`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .lexicon import (
    CASED,
    EVENT_WORDS,
    FIRST_NAMES,
    KNOWN,
    LOCATION_SUFFIXES,
    NAME_CONNECTORS,
    NOT_NAMES,
    ORG_SUFFIXES,
    PERSON_TITLES,
    UPPER_ONLY,
)
from .patterns import TOKEN

__all__ = [
    "GUESS",
    "LIKELY",
    "SURE",
    "Candidate",
    "Sentence",
    "Token",
    "candidate_at",
    "candidate_ending",
    "find_candidates",
    "split_sentences",
    "text_between",
]

#: Confidence of a pattern-backed fact or a lexicon name, and of a bare guess.
SURE = 0.9
LIKELY = 0.8
GUESS = 0.6


def _lexicon_sizes() -> dict[str, tuple[int, ...]]:
    """First word of each lexicon name → the word counts of names starting with it, longest
    first: most words start no name, so the lookup usually ends after one dict probe."""
    sizes: dict[str, set[int]] = {}
    for key in KNOWN:
        words = key.split(" ")
        sizes.setdefault(words[0], set()).add(len(words))
    return {word: tuple(sorted(found, reverse=True)) for word, found in sizes.items()}


_LEXICON_SIZES = _lexicon_sizes()
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_ABBREVIATION = re.compile(r"\b(?:prof|dr|mr|mrs|ms|st|vs|e\.g|i\.e|etc)\.$", re.IGNORECASE)
_POSSESSIVE = ("'s", "’s")
_CAMEL_EVENT = re.compile(r"[a-z](?:Con|Conf|Fest|Camp)$")


@dataclass(slots=True)
class Token:
    start: int
    end: int
    text: str
    lower: str
    key: str  # lower case without a possessive "'s": what the lexicon is keyed by
    possessive: bool
    cap: bool  # capitalised ("Berlin") or camel-cased ("iPhone")


@dataclass(slots=True)
class Candidate:
    """A possible entity: a span of the message, its canonical name, and what we know."""

    start: int
    end: int
    name: str
    type: str | None
    confidence: float
    hint: str | None = None
    possessive: bool = False
    weak: bool = False  # a lone unknown capitalised first word: kept only if a pattern uses it
    used: bool = False


@dataclass(slots=True)
class Sentence:
    start: int
    end: int
    text: str
    question: bool
    candidates: list[Candidate] = field(default_factory=list)
    #: Sentence offsets where clauses start (after "," or "but" ...), filled on first use.
    clause_starts: list[int] | None = None


#: A sentence longer than this is cut at spaces into pieces of at most this length: the
#: patterns look across a sentence, so unbounded sentences would make hostile input (one
#: 30,000-character "sentence") cost quadratic time. Chat sentences are far shorter.
MAX_SENTENCE_CHARS = 400
#: How far back from a sentence end an abbreviation ("Dr.", "e.g.") can start.
_ABBREVIATION_REACH = 12


def split_sentences(text: str) -> list[Sentence]:
    out: list[Sentence] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        tail = text[max(start, match.start() - _ABBREVIATION_REACH) : match.start()]
        if _ABBREVIATION.search(tail):
            continue
        out.extend(_bounded(text, start, match.start()))
        start = match.end()
    if start < len(text):
        out.extend(_bounded(text, start, len(text)))
    return [s for s in out if s.text.strip()]


def _bounded(text: str, start: int, end: int) -> list[Sentence]:
    """The sentence ``text[start:end]``, cut at spaces into pieces of bounded length."""
    pieces: list[Sentence] = []
    while end - start > MAX_SENTENCE_CHARS:
        cut = text.rfind(" ", start + 1, start + MAX_SENTENCE_CHARS)
        if cut <= start:
            cut = start + MAX_SENTENCE_CHARS
        pieces.append(_sentence(text, start, cut))
        start = cut
    pieces.append(_sentence(text, start, end))
    return pieces


def _sentence(text: str, start: int, end: int) -> Sentence:
    piece = text[start:end]
    return Sentence(start, end, piece, piece.rstrip().endswith("?"))


def _tokens(sentence: Sentence) -> list[Token]:
    base = sentence.start
    out: list[Token] = []
    for m in TOKEN.finditer(sentence.text):
        text = m.group()
        lower = text.lower()
        possessive = lower.endswith(_POSSESSIVE)
        key = lower[:-2] if possessive else lower
        cap = text[0].isupper() or text[1:2].isupper()
        out.append(Token(base + m.start(), base + m.end(), text, lower, key, possessive, cap))
    return out


def _strip_possessive(token: Token) -> tuple[str, bool]:
    return (token.text[:-2], True) if token.possessive else (token.text, False)


def _adjacent(text: str, left: Token, right: Token) -> bool:
    return text[left.end : right.start] == " "


def _lexicon_match(
    text: str, tokens: list[Token], i: int, initial: bool
) -> tuple[int, str, str] | None:
    """``(words, canonical, type)`` of the longest lexicon name starting at token ``i``."""
    sizes = _LEXICON_SIZES.get(tokens[i].lower) or _LEXICON_SIZES.get(tokens[i].key)
    if sizes is None:
        return None
    for size in sizes:
        if i + size > len(tokens):
            continue
        if size > 1 and not all(
            _adjacent(text, tokens[j], tokens[j + 1]) for j in range(i, i + size - 1)
        ):
            continue
        last = tokens[i + size - 1]
        key = " ".join([*(t.lower for t in tokens[i : i + size - 1]), last.key])
        entry = KNOWN.get(key)
        if entry is None:
            continue
        canonical, kind = entry
        if key in CASED:
            if initial or not tokens[i].text[0].isupper():
                return None
            tail = last.text[:-2] if last.possessive else last.text
            if key in UPPER_ONLY and not tail.isupper():
                return None
        return size, canonical, kind
    return None


def _suffix_type(words: list[str]) -> str | None:
    last = words[-1].lower()
    if last in ORG_SUFFIXES or (len(words) > 2 and words[1].lower() == "of"):
        return "organization" if words[0].lower() not in ("bay", "city", "isle") else "location"
    if last in LOCATION_SUFFIXES:
        return "location"
    if last in EVENT_WORDS or (last.endswith("con") and len(last) > 4 and words[-1][0].isupper()):
        return "event"
    return None


def find_candidates(text: str, sentence: Sentence) -> list[Candidate]:
    """Name candidates of one sentence, left to right, non-overlapping."""
    tokens = _tokens(sentence)
    out: list[Candidate] = []
    i = 0
    n = len(tokens)
    while i < n:
        token = tokens[i]
        initial = i == 0
        title = token.lower.rstrip(".") in PERSON_TITLES
        lexical = _lexicon_match(text, tokens, i, initial)
        span_end = _span_end(text, tokens, i) if token.cap else i
        if title and span_end == i and i + 1 < n and tokens[i + 1].cap:
            span_end = _span_end(text, tokens, i + 1)
        if lexical is not None and span_end < i + lexical[0]:
            size, canonical, kind = lexical
            last = tokens[i + size - 1]
            possessive = _strip_possessive(last)[1]
            end = last.end - (2 if possessive else 0)
            compound = _lower_compound(tokens, i + size, canonical, kind)
            if compound is not None:
                size, canonical, kind = size + compound[0], compound[1], compound[2]
                end = tokens[i + size - 1].end
            out.append(Candidate(token.start, end, canonical, kind, SURE, possessive=possessive))
            i += size
            continue
        if span_end > i or (token.cap and token.lower not in NOT_NAMES):
            cand = _span_candidate(tokens, i, span_end, initial, title, lexical)
            if cand is not None:
                out.append(cand)
            i = span_end + 1
            continue
        i += 1
    return out


def _span_end(text: str, tokens: list[Token], i: int) -> int:
    """Index of the last token of the capitalised run starting at ``i`` (``i`` if none)."""
    first = tokens[i]
    if first.lower in NOT_NAMES and first.lower not in PERSON_TITLES:
        return i
    if _strip_possessive(first)[1]:
        return i
    end = i
    j = i + 1
    while j < len(tokens) and _adjacent(text, tokens[j - 1], tokens[j]):
        tok = tokens[j]
        if tok.cap and tok.lower not in NOT_NAMES:
            end = j
            if _strip_possessive(tok)[1]:
                break
            j += 1
            continue
        if (
            tok.lower in NAME_CONNECTORS
            and j + 1 < len(tokens)
            and tokens[j + 1].cap
            and _adjacent(text, tok, tokens[j + 1])
        ):
            j += 1
            continue
        break
    return end


def _span_candidate(
    tokens: list[Token],
    i: int,
    end: int,
    initial: bool,
    title: bool,
    lexical: tuple[int, str, str] | None,
) -> Candidate | None:
    first = i + 1 if title else i
    if first > end:
        return None
    words = [t.text for t in tokens[first : end + 1]]
    words[-1], possessive = _strip_possessive(tokens[end])
    start, stop = tokens[first].start, tokens[end].end - (2 if possessive else 0)
    name = " ".join(words)
    kind = _suffix_type(words) if len(words) > 1 else None
    if kind is not None:
        return Candidate(start, stop, name, kind, LIKELY, possessive=possessive)
    if title or words[0].lower() in FIRST_NAMES:
        return Candidate(start, stop, name, "person", LIKELY, possessive=possessive)
    if _CAMEL_EVENT.search(words[-1]):
        return Candidate(start, stop, name, "event", LIKELY, possessive=possessive)
    hint = lexical[2] if lexical is not None else None
    return Candidate(
        start,
        stop,
        name,
        None,
        GUESS,
        hint=hint,
        possessive=possessive,
        weak=initial and len(words) == 1,
    )


def _lower_compound(
    tokens: list[Token], j: int, canonical: str, kind: str
) -> tuple[int, str, str] | None:
    """ "kyoto university", "tokyo game show": a known place and a lower-case type word."""
    if kind != "location":
        return None
    for size in (1, 2):
        if j + size > len(tokens):
            return None
        words = [t.text for t in tokens[j : j + size]]
        if any(w[0].isupper() or not w.isalpha() for w in words):
            return None
        typed = _suffix_type(words) if words[-1] not in ("city",) else None
        if typed is not None:
            name = " ".join([canonical, *(w.capitalize() for w in words)])
            return size, name, typed
    return None


def candidate_at(sentence: Sentence, position: int) -> Candidate | None:
    for cand in sentence.candidates:
        if cand.start == position:
            return cand
    return None


def candidate_ending(sentence: Sentence, position: int) -> Candidate | None:
    for cand in sentence.candidates:
        if cand.end == position or (cand.possessive and cand.end + 2 == position):
            return cand
    return None


def text_between(sentence: Sentence, start: int, end: int) -> str:
    return sentence.text[start - sentence.start : end - sentence.start]
