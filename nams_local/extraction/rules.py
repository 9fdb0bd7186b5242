"""``RuleExtractor``: the default extractor — offline, deterministic, pure Python.

It runs on every stored message during bulk ingest, so it must cost next to nothing: one
tokenising pass, a lexicon lookup per word, and a handful of precompiled regular
expressions per sentence; no model, no I/O.

How a message becomes entities and relationships:

1. **Candidates** (:mod:`nams_local.extraction.candidates`): capitalised runs and lexicon
   hits, typed by the lexicon, a name's last word or a known first name.
2. **Who is speaking.** In a user turn "I", "my", "we" are the user (:data:`SELF`); in an
   assistant turn "you" and "your" are, and the assistant's own "I" is nobody, so
   "Here is what I remember about you" yields no entity about remembering.
3. **Facts.** Verb triggers ("I work at X", "Priya works at Y", "I moved to Z", "I use
   A and B", "I prefer C over D") and relation nouns ("my sister Priya", "Rahul is my
   manager") give typed relationships; questions, negations ("I no longer work at X")
   and wishes ("I'd like to visit Y") give none.

Decisions where the issue left room (documented in ``tests/data/extraction_corpus.json``):
"prefer", "like", "love" and "favourite" all give ``PREFERS``; "X is my manager" gives
``(X)-[MANAGES]->(user)``; "moved to" is ``LIVES_IN``; "I'm from" is ``FROM``. "I" always
resolves to :data:`SELF`, and so does the user's own name (known or stated in the message)
as a relationship endpoint: the pipeline binds ``SELF`` to the user's person entity, so
both spellings end up on one node.
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
import re
from collections import OrderedDict
from dataclasses import replace

from .candidates import (
    GUESS,
    LIKELY,
    SURE,
    Candidate,
    Sentence,
    candidate_at,
    candidate_ending,
    find_candidates,
    split_sentences,
    text_between,
)
from .dates import find_date_phrase
from .lexicon import FIRST_NAMES, KNOWN, NOT_NAMES, PERSON_TITLES, words
from .patterns import (
    APPOSITIVE_JOB,
    CALLED,
    CLAUSE_BREAK,
    COMPARATOR,
    IS_A,
    KIND_NOUNS,
    LIST_GAP,
    RELATION_NOUN,
    RELATION_NOUNS,
    SELF_NAME,
    TOKEN,
    TRIGGER_RE,
    TRIGGERS,
    VOCATIVE,
    WHERE_I,
    YOUR_NAME,
    Trigger,
    gated_triggers,
    trigger_regex,
)
from .types import (
    SELF,
    USER_DESCRIPTION,
    ExtractedEntity,
    ExtractedRelationship,
    Extraction,
    ExtractionInput,
)

__all__ = ["RuleExtractor", "extract_sync", "trigger_matches"]

_CLAUSE_START = re.compile(r"[,;:—–(]|\b(?:but|so|because|although|though|then|while)\b", re.I)
_SUBJECTLESS = words(
    """congrats congratulations on so and also then now btw lol ok okay yeah yes well great
    cool nice got it noted oh hey hi hmm just still currently"""
)
_AUX = words(
    """am 'm ’m is are 're ’re was were be been being have has had 've ’ve 'd ’d will 'll
    also just still now currently recently actually really mostly mainly usually always
    often finally basically already only even primarily generally sometimes kinda totally
    absolutely definitely remotely originally happily both a an got get gets landed found
    started new do does did don't doesn't didn't not never no longer won't can't dont"""
)
_NEGATION = re.compile(
    r"\b(?:not|never|no longer|don'?t|doesn'?t|didn'?t|won'?t|isn'?t|aren'?t|wasn'?t|"
    r"can'?t|cannot|hardly|ex|former|formerly|used to)\b|n't\b",
    re.IGNORECASE,
)
_HYPOTHETICAL = re.compile(
    r"\b(?:would|'d|’d|should|could|might|want to|wanna|hope to|hoping to|plan to|"
    r"planning to|thinking (?:of|about)|if|whether|maybe|considering)\b",
    re.IGNORECASE,
)
_HERE = re.compile(
    r"(?:(?:hi|hey|hello)[,!]?\s+)?(?:this is\s+(?P<n1>)|(?P<n2>))(?P<name>[A-Z][\w'-]+)"
    r"(?(n2)\s+here\b|\b)",
    re.IGNORECASE,
)
_OTHER_PHRASE = re.compile(r"\b(?:in|near|on|from|to|of|by|with)\b", re.IGNORECASE)
_SUBORDINATE = re.compile(
    r"\s*(?:since|if|when|as|once|after|before|although|though|because|while|whereas)\b",
    re.IGNORECASE,
)
_NEGATION_TURN = re.compile(r",?\s*\b(?:only|just|but|instead)\b", re.IGNORECASE)
_PREPOSITIONS_OF_PLACE = words("in near to from around visiting outside across")
_FIRST_PERSON = {"user": {"i", "we", "my", "our", "us", "me"}, "assistant": {"you", "your"}}
_PRONOUN_ALIASES = {
    "i'm": "i",
    "i’m": "i",
    "im": "i",
    "i've": "i",
    "i'd": "i",
    "i'll": "i",
    "we're": "we",
    "we’re": "we",
    "we've": "we",
    "you're": "you",
    "you’re": "you",
    "you've": "you",
    "he's": "he",
    "she's": "she",
    "user's": "user",
}


Endpoint = Candidate | str  # a candidate, or SELF


class _Message:
    """Working state for one message: sentences, candidates, facts found so far."""

    def __init__(self, source: ExtractionInput) -> None:
        self.text = source.text
        self.role = "assistant" if source.role == "assistant" else "user"
        self.sentences = split_sentences(self.text)
        self.user_name: str | None = None
        self.known_user = (source.user_name or "").casefold()
        #: ``(source, type, target, ended)`` → (confidence, date phrase).
        self.relationships: dict[tuple[str, str, str, bool], tuple[float, str | None]] = {}
        self.descriptions: dict[int, str] = {}

    # -- results ----------------------------------------------------------------------
    def relate(
        self,
        source: Endpoint,
        target: Endpoint,
        rel: str,
        confidence: float,
        *,
        ended: bool = False,
        when: str | None = None,
    ) -> None:
        if source is target:
            return
        names: list[str] = []
        users = {self.known_user, (self.user_name or "").casefold()} - {""}
        for end in (source, target):
            if isinstance(end, Candidate):
                if end.type is None:
                    return
                end.used = True
                # The user's own name is the user: one node, bound by the pipeline.
                names.append(SELF if end.name.casefold() in users else end.name)
            else:
                names.append(end)
        if names[0].casefold() == names[1].casefold():
            return
        key = (names[0], rel, names[1], ended)
        known_confidence, known_when = self.relationships.get(key, (0.0, None))
        self.relationships[key] = (max(confidence, known_confidence), known_when or when)

    def result(self) -> Extraction:
        entities: dict[str, ExtractedEntity] = {}
        for sentence in self.sentences:
            for cand in sentence.candidates:
                if cand.type is None or (cand.weak and not cand.used):
                    continue
                key = cand.name.casefold()
                known = entities.get(key)
                if known is not None and known.confidence >= cand.confidence:
                    continue
                description = USER_DESCRIPTION if cand.name == self.user_name else ""
                entities[key] = ExtractedEntity(cand.name, cand.type, description, cand.confidence)
        relationships = tuple(
            ExtractedRelationship(s, t, rel, conf, ended=ended, when=when)
            for (s, rel, t, ended), (conf, when) in self.relationships.items()
            if (s == SELF or s.casefold() in entities) and (t == SELF or t.casefold() in entities)
        )
        return Extraction(tuple(entities.values()), relationships, self.user_name)


class RuleExtractor:
    """The default :class:`~nams_local.extraction.Extractor`: regex, a small lexicon, no model.

    Deterministic (same text, same result) and cheap enough to run on every message.
    Being deterministic, it remembers its last ``cache_size`` answers, holding at most
    ``cache_chars`` characters of text in all: the engine's summariser asks again for the
    facts of the last ``observation_every`` messages of a conversation, which the pipeline
    extracted a moment ago. 1,024 answers were too few for a server: under the ``load``
    mix (48 conversations, ~235 messages/s) 37 % of the summariser's asks missed (442 of
    1,201 in a 20 s window) and were extracted a second time, because every other
    conversation's messages had pushed them out in between.
    """

    def __init__(self, cache_size: int = 8192, cache_chars: int = 4_000_000) -> None:
        self.cache_size = cache_size
        self.cache_chars = cache_chars
        self._cache: OrderedDict[tuple[str, str, str | None], Extraction] = OrderedDict()
        self._cached_chars = 0

    async def extract(self, message: ExtractionInput) -> Extraction:
        key = (message.text, message.role, message.user_name)  # ``recent`` is not used
        found = self._cache.get(key)
        if found is not None:
            self._cache.move_to_end(key)
            return found
        if len(message.text) > INLINE_CHARS:
            # Long text: a thread, so a server's event loop never stalls on it.
            found = await asyncio.to_thread(extract_sync, message)
        else:
            found = extract_sync(message)
        if self.cache_size > 0 and len(message.text) <= self.cache_chars:
            self._cache[key] = found
            self._cached_chars += len(message.text)
            while len(self._cache) > self.cache_size or self._cached_chars > self.cache_chars:
                (text, _, _), _ = self._cache.popitem(last=False)
                self._cached_chars -= len(text)
        return found


#: Only the first this many characters of a message are read: chat turns are far shorter,
#: and it bounds the work a hostile message can cause (about 0.2 s at worst).
MAX_TEXT_CHARS = 20_000
#: Messages longer than this are extracted on a worker thread instead of inline.
INLINE_CHARS = 2_000


def extract_sync(message: ExtractionInput) -> Extraction:
    """The extraction itself, synchronous (the benchmark and tests time it directly)."""
    if len(message.text) > MAX_TEXT_CHARS:
        cut = message.text.rfind(" ", 0, MAX_TEXT_CHARS)
        message = replace(message, text=message.text[: cut if cut > 0 else MAX_TEXT_CHARS])
    state = _Message(message)
    for sentence in state.sentences:
        sentence.candidates = find_candidates(state.text, sentence)
    for sentence in state.sentences:
        _kinds(state, sentence)
    _name_here(state)
    for sentence in state.sentences:
        _self_names(state, sentence)
        _relation_nouns(state, sentence)
        _verb_facts(state, sentence)
        _places(state, sentence)
    for sentence in state.sentences:
        _type_by_context(state, sentence)
    return state.result()


# -- who is who ---------------------------------------------------------------------------
def _name_at(state: _Message, sentence: Sentence, position: int) -> Candidate | None:
    """The person name starting at ``position``: a candidate, or a lower-case first name."""
    cand = candidate_at(sentence, position)
    if cand is not None:
        if cand.type in (None, "person") or (cand.weak and cand.type is None):
            return cand
        return None
    match = TOKEN.match(state.text, position)
    if match is None:
        return None
    word = match.group()
    if word.lower() in FIRST_NAMES and word.lower() not in NOT_NAMES:
        cand = Candidate(match.start(), match.end(), word.capitalize(), "person", LIKELY)
        sentence.candidates.append(cand)
        return cand
    return None


def _plausible_self_name(state: _Message, cand: Candidate) -> bool:
    """ "I'm Alex" but not "I'm Tired": a known first name, or a capitalised word that ends
    the phrase ("I'm Zed.", "I'm Zed, a designer")."""
    first = cand.name.split()[0].lower()
    if first in FIRST_NAMES:
        return True
    if cand.type not in (None, "person") or first in NOT_NAMES:
        return False
    rest = state.text[cand.end : cand.end + 6].lstrip()
    return rest == "" or rest[0] in ",.!;" or rest.lower().startswith(("and ", "from "))


def _self_names(state: _Message, sentence: Sentence) -> None:
    pattern = SELF_NAME if state.role == "user" else YOUR_NAME
    for match in pattern.finditer(sentence.text):
        position = sentence.start + match.end()
        cand = _name_at(state, sentence, position)
        if cand is None or not _plausible_self_name(state, cand):
            continue
        cand.type, cand.confidence, cand.weak = "person", SURE, False
        state.user_name = cand.name
    for match in VOCATIVE.finditer(sentence.text):
        cand = _name_at(state, sentence, sentence.start + match.end())
        if cand is not None:
            cand.type, cand.weak = "person", False


def _name_here(state: _Message) -> None:
    """ "Lucy here." / "Hi, this is Sam." opening a user's message names the user."""
    if state.role != "user" or not state.sentences:
        return
    sentence = state.sentences[0]
    match = _HERE.match(sentence.text)
    if match is None:
        return
    cand = candidate_at(sentence, sentence.start + match.start("name"))
    if cand is not None and cand.type in (None, "person"):
        cand.type, cand.confidence, cand.weak = "person", SURE, False
        state.user_name = cand.name


def _kinds(state: _Message, sentence: Sentence) -> None:
    """ "Figma is my main tool", "a startup called Finch", "my cousin Yasmin": typed by noun."""
    for match in IS_A.finditer(sentence.text):
        cand = candidate_ending(sentence, sentence.start + match.start())
        if cand is None or cand.type not in (None, KIND_NOUNS[match.group("noun").lower()]):
            continue
        kind = KIND_NOUNS[match.group("noun").lower()]
        cand.type, cand.weak = kind, False
        owner = match.group("owner").lower()
        if kind == "tool" and owner in ("my", "our") and state.role == "user":
            state.relate(SELF, cand, "USES", SURE)
    for match in CALLED.finditer(sentence.text):
        noun = (match.group("noun") or match.group("kin")).lower()
        position = sentence.start + match.end()
        cand = candidate_at(sentence, position) if match.group("noun") else None
        if cand is None and KIND_NOUNS[noun] == "person":
            cand = _name_at(state, sentence, position)
        if cand is not None and cand.type in (None, KIND_NOUNS[noun]):
            cand.type, cand.weak = KIND_NOUNS[noun], False


def _last_person(state: _Message, before: int) -> Candidate | None:
    best: Candidate | None = None
    for sentence in state.sentences:
        for cand in sentence.candidates:
            later = best is None or cand.end > best.end
            if cand.type == "person" and cand.end <= before and later:
                best = cand if cand.name != state.user_name else best
    return best


def _pronoun(state: _Message, word: str) -> Endpoint | None:
    """``SELF`` for the user's own pronouns in this role, else ``None``."""
    return SELF if word in _FIRST_PERSON[state.role] else None


def _clause_prefix(sentence: Sentence, local: int) -> tuple[int, str]:
    """``(start, text)`` of the clause before sentence offset ``local``."""
    starts = sentence.clause_starts
    if starts is None:
        starts = sentence.clause_starts = [m.end() for m in _CLAUSE_START.finditer(sentence.text)]
    n = bisect.bisect_right(starts, local)
    cut = starts[n - 1] if n else 0
    return cut, sentence.text[cut:local]


def _subjects(
    state: _Message, sentence: Sentence, at: int, verb: str, previous: list[Endpoint] | None
) -> list[Endpoint] | None:
    """Who does the verb at ``at`` (absolute offset)? ``None``: nobody we can name.

    Reads the clause before the verb backwards: auxiliaries and adverbs are skipped,
    then a pronoun, "the user", a name (or "Lena and I") is the subject. A clause with no
    subject continues the previous one ("User is named Alex, works at TechCorp", "lives in
    Milan and works for Pirelli") or, with nothing before it, is about the user ("Congrats
    on joining Stripe"); a verb opening the sentence is an imperative ("Enjoy the view").
    """
    cut, prefix = _clause_prefix(sentence, at - sentence.start)
    if APPOSITIVE_JOB.match((prefix + verb).strip()):
        return previous or ([SELF] if _first_person_sentence(state, sentence) else None)
    words = [w.group() for w in TOKEN.finditer(prefix)]
    if len(words) >= 2 and [w.lower() for w in words[-2:]] == ["used", "to"]:
        del words[-2:]  # "I used to live in X": the subject stands before "used to"
    while words and words[-1].lower() in _AUX:
        words.pop()
    if not words:
        # A sentence that opens with the verb: the user's "working at X now" drops the
        # subject; the assistant's "Enjoy the view" is an imperative.
        opening = cut == 0 and not prefix.strip()
        return None if opening and state.role == "assistant" else (previous or [SELF])
    if all(w.lower() in _SUBJECTLESS for w in words):
        return previous or [SELF]
    last = _PRONOUN_ALIASES.get(words[-1].lower(), words[-1].lower())
    if last in ("and", "or"):
        return previous
    if last == "user":
        return [SELF]
    if last in ("i", "we", "you", "my", "our", "your"):
        me = _pronoun(state, last)
        if me is None:
            return None
        out: list[Endpoint] = [me]
        if len(words) >= 3 and words[-2].lower() == "and":
            other = candidate_ending(sentence, _word_end(prefix, cut, sentence, len(words) - 3))
            if other is not None:
                out.append(other)
        return out
    if last in ("he", "she"):
        person = _last_person(state, at)
        return [person] if person is not None else None
    end = _word_end(prefix, cut, sentence, len(words) - 1)
    cand = candidate_ending(sentence, end)
    return [cand] if cand is not None else None


def _word_end(prefix: str, cut: int, sentence: Sentence, index: int) -> int:
    """Absolute end offset of word ``index`` of ``prefix``."""
    for n, match in enumerate(TOKEN.finditer(prefix)):
        if n == index:
            return sentence.start + cut + match.end()
    return -1


def _first_person_sentence(state: _Message, sentence: Sentence) -> bool:
    lowered = (m.group().lower() for m in TOKEN.finditer(sentence.text))
    return any(_PRONOUN_ALIASES.get(w, w) in _FIRST_PERSON[state.role] for w in lowered)


# -- facts --------------------------------------------------------------------------------
def _relation_nouns(state: _Message, sentence: Sentence) -> None:
    """ "my sister Priya", "your colleague Wanjiru", "João's sister Inês", "X is my boss"."""
    if sentence.question:
        return
    for match in RELATION_NOUN.finditer(sentence.text):
        ended = bool(match.group("ex"))  # "my ex-wife Priya": a tie that ended
        noun = RELATION_NOUNS[match.group("noun").lower()]
        owner_word = match.group("owner").lower()
        if owner_word in ("'s", "’s"):
            owner: Endpoint | None = candidate_ending(sentence, sentence.start + match.start())
        else:
            owner = _pronoun(state, owner_word)
        if owner is None:
            continue
        position = sentence.start + match.end()
        workplace = _AT_PLACE.match(state.text, position)
        if workplace is not None:
            place = candidate_at(sentence, workplace.start("org"))
            position = workplace.end() if place is not None else position
        named = _named_after(state, sentence, position)
        if named is not None and workplace is not None and noun.type in _WORK_TIES and not ended:
            org = candidate_at(sentence, workplace.start("org"))
            if org is not None and org.type in (None, "organization"):
                org.type = "organization"
                state.relate(named, org, "WORKS_AT", SURE)
        if named is None:
            named = _named_before(state, sentence, sentence.start + match.start("owner"))
        if named is None or (isinstance(owner, Candidate) and owner is named):
            continue
        named.type, named.weak = "person", False
        if isinstance(owner, Candidate) and owner.type is None:
            owner.type = "person"
        source, target = (named, owner) if noun.from_named else (owner, named)
        state.relate(
            source,
            target,
            noun.type,
            SURE,
            ended=ended,
            when=find_date_phrase(sentence.text) if ended else None,
        )


_COORDINATION = re.compile(r"\s*(?:,|,?\s*(?:and|or|plus|&|\+|/))\s*", re.IGNORECASE)
_AT_PLACE = re.compile(r"\s+at\s+(?P<org>[^\W\d_][^,]{0,40}?)\s*,\s*")
_WORK_TIES = frozenset({"MANAGES", "COLLEAGUE_OF"})
_AFTER_NOUN = re.compile(
    r"\s*,\s*|\s+is\s+|\s*'s name is\s+|\s+named\s+|\s+called\s+|\s+|(?=[A-Za-z])"
)
_BEFORE_NOUN = re.compile(r"(?:\bis|\bwas|,)\s*$", re.IGNORECASE)


def _named_after(state: _Message, sentence: Sentence, position: int) -> Candidate | None:
    gap = _AFTER_NOUN.match(state.text, position)
    start = gap.end() if gap is not None else position
    word = TOKEN.match(state.text, start)
    if word is not None and word.group().lower().rstrip(".") in PERSON_TITLES:
        nxt = TOKEN.search(state.text, word.end())
        start = nxt.start() if nxt is not None else start
    return _name_at(state, sentence, start)


def _named_before(state: _Message, sentence: Sentence, position: int) -> Candidate | None:
    """ "Rahul is my manager", "Ravi from the platform team is my new manager"."""
    head = state.text[sentence.start : position]
    if not _BEFORE_NOUN.search(head):
        return None
    cut = 0
    for match in _CLAUSE_START.finditer(head.rstrip(" ,")):
        cut = match.end()
    clause_start = sentence.start + cut
    for cand in sentence.candidates:
        if cand.start >= clause_start and cand.end <= position:
            if cand.type in (None, "person"):
                return cand
            return None
    return None


def _clause_end(sentence: Sentence, local: int, stop: int) -> int:
    match = CLAUSE_BREAK.search(sentence.text, local)
    end = match.start() if match is not None else len(sentence.text)
    return min(end, stop)


def _objects(
    sentence: Sentence, trigger: Trigger, start: int, end: int
) -> list[tuple[Candidate, str, str]]:
    """``(candidate, relationship, entity type)`` for the trigger's objects in the window."""
    out: list[tuple[Candidate, str, str]] = []
    previous: Candidate | None = None
    for cand in sentence.candidates:
        if cand.start < start or cand.end > end:
            continue
        if previous is not None:
            gap = text_between(sentence, previous.end, cand.start)
            if trigger.mode == "first":
                break
            if trigger.mode == "list" and (COMPARATOR.search(gap) or not LIST_GAP.match(gap)):
                break
        if previous is None and cand.type is None:
            lead = text_between(sentence, start, cand.start)
            if _OTHER_PHRASE.search(lead):
                break  # "works as a chef at a tapas bar in Fitzroy": Fitzroy is not the bar
        route = trigger.routes.get(cand.type)
        if route is None:
            if trigger.mode == "all":
                previous = cand
                continue
            break
        out.append((cand, route[0], route[1]))
        previous = cand
    return out


def trigger_matches(text: str) -> list[re.Match[str]]:
    """Every trigger match in ``text``, as :data:`TRIGGER_RE` finds them, but cheaper."""
    lower = text.lower()
    if len(lower) != len(text):  # lower-casing moved offsets (rare scripts): the slow way
        return list(TRIGGER_RE.finditer(text))
    active = gated_triggers({m.group() for m in TOKEN.finditer(lower)})
    return list(trigger_regex(active).finditer(lower)) if active else []


def _verb_facts(state: _Message, sentence: Sentence) -> None:
    if sentence.question:
        return
    matches = trigger_matches(sentence.text)
    found_any = False
    previous: list[Endpoint] | None = None
    for n, match in enumerate(matches):
        group = match.lastgroup
        if group is None:
            continue
        trigger = TRIGGERS[int(group[1:])]
        stop = matches[n + 1].start() if n + 1 < len(matches) else len(sentence.text)
        cut, before = _clause_prefix(sentence, match.start())
        if _SUBORDINATE.match(sentence.text[cut:]):
            comma = sentence.text.find(",", match.end(), stop)
            stop = comma if comma >= 0 else stop
        window_end = sentence.start + _clause_end(sentence, match.end(), stop)
        at = sentence.start + match.start()
        subjects = _subjects(state, sentence, at, match.group(), previous)
        previous = subjects
        if subjects is None or _HYPOTHETICAL.search(before):
            continue
        window_start = sentence.start + match.end()
        ended = trigger.ends
        if trigger.name != "dislikes" and _NEGATION.search(before):
            window = sentence.text[match.end() : window_end - sentence.start]
            if trigger.ends:
                continue  # "I never left Pune", "I didn't quit"
            if _ENDING.search(before) or _NO_MORE.search(window):
                ended = True  # "I no longer work at X", "I used to live in Y"
            else:
                turn = _NEGATION_TURN.search(
                    sentence.text, match.end(), window_end - sentence.start
                )
                if turn is None:
                    continue
                window_start = sentence.start + turn.end()
        objects = _objects(sentence, trigger, window_start, window_end)
        if trigger.ends:
            objects = [o for o in objects if _right_after(sentence, window_start, o[0])]
        clause = sentence.text[cut : window_end - sentence.start]
        when = find_date_phrase(clause)
        for subject in subjects:
            for cand, rel, kind in objects:
                routed = _subject_route(subject, rel)
                if routed is None:
                    continue
                if cand.type is None:
                    cand.type, cand.confidence = kind, LIKELY
                if isinstance(subject, Candidate) and subject.type is None:
                    subject.type, subject.confidence = "person", LIKELY
                state.relate(subject, cand, routed, SURE, ended=ended, when=when)
                found_any = True
                if trigger.to_next:
                    _then_to(state, sentence, subject, cand, routed, kind, window_end, when)
                if trigger.over_next and not ended:
                    _over_next(state, sentence, subject, cand, routed, kind, window_end, when)
    _where_i(state, sentence)
    if not found_any and not matches:
        _implied_use(state, sentence)


#: Before a verb: the fact held once and holds no more.
_ENDING = re.compile(
    r"\b(?:no\s+longer|used\s+to|formerly|once)\s+(?:(?:also|still|really|just)\s+)?$",
    re.IGNORECASE,
)
#: After a negated verb: "I don't work at X anymore".
_NO_MORE = re.compile(r"\b(?:any\s?more|these days)\b", re.IGNORECASE)
#: "moved from X to Y": what stands between X and Y.
_TO_NEXT = re.compile(r"\s*,?\s+(?:(?:and\s+)?(?:then\s+|now\s+)?(?:to|into|for)\s+)", re.I)
_ONLY_ARTICLE = re.compile(r"\s*(?:the\s+|my\s+)?", re.IGNORECASE)


def _right_after(sentence: Sentence, start: int, cand: Candidate) -> bool:
    """ "I left TechCorp" but not "I left my keys at TechCorp": an ending verb's object
    stands right after it."""
    lead = text_between(sentence, start, cand.start)
    return _ONLY_ARTICLE.fullmatch(lead) is not None


def _then_to(
    state: _Message,
    sentence: Sentence,
    subject: Endpoint,
    left: Candidate,
    rel: str,
    kind: str,
    window_end: int,
    when: str | None,
) -> None:
    """ "moved from Bangalore to Berlin": after the place left, the place arrived at."""
    for cand in sentence.candidates:
        if cand.start < left.end or cand is left or cand.end > window_end:
            continue
        gap = text_between(sentence, left.end, cand.start)
        if _TO_NEXT.fullmatch(gap) is None or cand.type not in (None, kind):
            return
        if cand.type is None:
            cand.type, cand.confidence = kind, LIKELY
        state.relate(subject, cand, rel, SURE, when=when)
        return


#: "prefer X over Y": what stands between X and the Y it is preferred to.
_OVER_NEXT = re.compile(
    r"\s*,?\s+(?:over|rather\s+than|instead\s+of)\s+(?:the\s+|my\s+|a\s+|an\s+)?", re.I
)


def _over_next(
    state: _Message,
    sentence: Sentence,
    subject: Endpoint,
    chosen: Candidate,
    rel: str,
    kind: str,
    window_end: int,
    when: str | None,
) -> None:
    """ "I prefer tea over coffee": the thing passed over is a preference that ended (the
    single-valued reading of "prefers X over Y"; preferring both stays possible)."""
    for cand in sentence.candidates:
        if cand.start < chosen.end or cand is chosen or cand.end > window_end:
            continue
        gap = text_between(sentence, chosen.end, cand.start)
        if _OVER_NEXT.fullmatch(gap) is None or cand.type not in (None, kind):
            return
        if cand.type is None:
            cand.type, cand.confidence = kind, LIKELY
        state.relate(subject, cand, rel, SURE, ended=True, when=when)
        return


def _subject_route(subject: Endpoint, rel: str) -> str | None:
    """A place or organisation "based in" somewhere is ``LOCATED_IN``; only people work."""
    if not isinstance(subject, Candidate) or subject.type in (None, "person"):
        return rel
    if rel in ("LIVES_IN", "LOCATED_IN"):
        return "LOCATED_IN"
    return None


def _where_i(state: _Message, sentence: Sentence) -> None:
    """ "Osaka is where I grew up": the place stands before the verb."""
    if state.role != "user":
        return
    for match in WHERE_I.finditer(sentence.text):
        place = candidate_ending(sentence, sentence.start + match.start() - 1)
        if place is None or place.type not in (None, "location"):
            continue
        place.type = "location"
        state.relate(SELF, place, "FROM" if match.group("from") else "LIVES_IN", SURE)


def _implied_use(state: _Message, sentence: Sentence) -> None:
    """ "mostly Python and Go these days", "vscode + docker": tools in a first-person
    statement with no verb pattern are tools the user uses (a guess)."""
    if state.role != "user" or not _first_person_sentence(state, sentence):
        return
    if _NEGATION.search(sentence.text) or _HYPOTHETICAL.search(sentence.text):
        return
    if any(c.type == "person" for c in sentence.candidates):
        return
    for cand in sentence.candidates:
        if cand.type == "tool":
            state.relate(SELF, cand, "USES", GUESS)


def _places(state: _Message, sentence: Sentence) -> None:
    """ "Web Summit in Lisbon", "Koramangala, Bangalore": where a place or event is."""
    cands = sentence.candidates
    for left, right in itertools.pairwise(cands):
        gap = text_between(sentence, left.end, right.start)
        if right.type != "location" or left.type not in ("event", "location", None):
            continue
        if left.type == "event" and re.fullmatch(r"\s+(?:here\s+|held\s+)?in\s+", gap):
            state.relate(left, right, "LOCATED_IN", LIKELY)
        elif gap == ", " and KNOWN.get(right.name.lower(), ("", ""))[1] == "location":
            if left.type is None:
                left.type = "location"
            if left.name.lower() not in KNOWN or left.type == "location":
                state.relate(left, right, "LOCATED_IN", LIKELY)


def _list_peer(sentence: Sentence, cands: list[Candidate], n: int) -> str | None:
    """The type of a typed neighbour joined to ``cands[n]`` by "and", "or", "plus", ","."""
    for other in (n - 1, n + 1):
        if not 0 <= other < len(cands) or cands[other].type in (None, "person"):
            continue
        left, right = sorted((cands[n], cands[other]), key=lambda c: c.start)
        gap = text_between(sentence, left.end, right.start)
        if gap.strip() and _COORDINATION.fullmatch(gap):
            return cands[other].type
    return None


def _type_by_context(state: _Message, sentence: Sentence) -> None:
    """Untyped names after "in", "near", "to" are places (a guess); a name listed with a
    typed one ("Procreate plus Figma") shares its type; the rest are dropped."""
    cands = sentence.candidates
    for n, cand in enumerate(cands):
        if cand.type is not None:
            continue
        peer = _list_peer(sentence, cands, n)
        if peer is not None:
            cand.type, cand.confidence, cand.weak = peer, GUESS, False
            continue
        head = state.text[max(sentence.start, cand.start - 12) : cand.start].split()
        if head and head[-1].lower() in _PREPOSITIONS_OF_PLACE:
            if cand.hint in (None, "location"):
                cand.type, cand.confidence = "location", GUESS
        elif cand.hint is not None and not cand.weak:
            cand.type = cand.hint
