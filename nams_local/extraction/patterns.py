"""The verb and noun patterns of the rule-based extractor, compiled once at import.

A *trigger* is the verb phrase of a fact ("work at", "moved to", "use"); the subject is
read from the words before it and the object from the entities after it (see
:mod:`nams_local.extraction.rules`). Each trigger routes by the object's entity type: "going
to" an event is ``ATTENDS``, "going to" a place is ``VISITS``; an object of an unexpected
type is not a fact of that kind, so nothing is emitted.

Relation nouns ("my sister Priya", "Rahul is my manager") are a second, smaller family:
the noun fixes the relationship type and its direction (:data:`RELATION_NOUNS`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from .lexicon import JOB_NOUNS, words

__all__ = [
    "APPOSITIVE_JOB",
    "CALLED",
    "CLAUSE_BREAK",
    "COMPARATOR",
    "IS_A",
    "KIND_NOUNS",
    "LIST_GAP",
    "RELATION_NOUN",
    "RELATION_NOUNS",
    "SELF_NAME",
    "SYMMETRIC",
    "TOKEN",
    "TRIGGERS",
    "TRIGGER_RE",
    "VOCATIVE",
    "WHERE_I",
    "YOUR_NAME",
    "RelationNoun",
    "Trigger",
    "gated_triggers",
    "trigger_regex",
]

#: A word: letters/digits with inner ``. ' + # - /`` ("C#", "C++", "Next.js", "I/O", "O'Brien").
TOKEN = re.compile(r"[^\W_](?:[\w'’.+#&/-]*[\w+#])?")

Mode = Literal["first", "list", "all"]
Route = tuple[str, str]  # (relationship type, the object's entity type)


@dataclass(frozen=True, slots=True)
class Trigger:
    """A verb phrase and how its object turns into a relationship.

    ``routes`` maps the object's entity type (``None``: not typed yet) to the relationship
    type and the entity type the object then gets. ``mode``: ``first`` takes the first
    routable entity after the verb, ``list`` also the ones joined to it by "and" / ","
    ("Python and Rust"), ``all`` every routable entity up to the end of the clause.
    """

    name: str
    pattern: str
    mode: Mode
    routes: MappingProxyType[str | None, Route]
    #: Words (lower case, as :data:`TOKEN` splits them) one of which every match contains:
    #: a sentence with none of them cannot match, so its regex is not even tried.
    gate: frozenset[str]
    #: The fact ends rather than starts ("left X", "quit X"); with ``to_next``, the object
    #: after "to" right behind the first one starts ("moved from X to Y").
    ends: bool = False
    to_next: bool = False
    #: The object named after "over" / "rather than" / "instead of" right behind the first
    #: one ends ("I prefer tea over coffee": tea is preferred, coffee no longer is).
    over_next: bool = False


def _routes(**by_type: str) -> MappingProxyType[str | None, Route]:
    """``organization="WORKS_AT"`` → ``{"organization": ("WORKS_AT", "organization")}``;
    the key ``untyped`` stands for ``None`` and its value is ``"REL:type"``."""
    out: dict[str | None, Route] = {}
    for key, value in by_type.items():
        rel, _, typ = value.partition(":")
        if key == "untyped":
            out[None] = (rel, typ)
        else:
            out[key] = (rel, typ or key)
    return MappingProxyType(out)


_JOBS = "|".join(sorted(JOB_NOUNS, key=len, reverse=True))
_ORG = _routes(organization="WORKS_AT", untyped="WORKS_AT:organization")
_TOOL = _routes(tool="USES", organization="USES", event="ATTENDS", untyped="USES:tool")
_TASTE = ("tool", "location", "organization", "event")

TRIGGERS: tuple[Trigger, ...] = (
    Trigger(
        "dislikes",
        r"\b(?:hate[sd]?|hating|dislike[sd]?|detest[sd]?|can'?t stand|cannot stand|"
        r"do(?:n'?t| not) (?:really )?like|not a (?:big )?fan of)\b",
        "list",
        _routes(**{t: "DISLIKES" for t in _TASTE}),
        words(
            "hate hates hated hating dislike dislikes disliked detest detests "
            "detested stand like fan"
        ),
    ),
    Trigger(
        "works_at",
        r"\b(?:work(?:s|ed|ing)?|employed)(?:\s+(?:remotely|full[- ]time|part[- ]time))?"
        r"(?:\s+as\s+an?\s+[\w-]+(?:\s+[\w-]+)?)?\s+(?:at|for)\b"
        r"|\b(?:join(?:s|ed|ing)?)\b"
        r"|\b(?:job|position|role|internship|gig|employer\s+is)(?:\s+(?:at|with))?\b"
        r"|\b(?:start(?:s|ed|ing)?|teach(?:es|ing)?|taught)(?:\s+[\w-]+){0,2}?\s+at\b"
        rf"|\b(?:an?\s+(?:[\w-]+\s+){{0,2}}?)?(?:{_JOBS})\s+(?:at|for|with)\b",
        "first",
        _ORG,
        words(
            "work works worked working employed join joins joined joining job "
            "position role internship gig employer start starts started starting "
            "teach teaches teaching taught"
        )
        | JOB_NOUNS,
    ),
    Trigger(
        "studies_at",
        r"\b(?:an?\s+(?:[\w-]+\s+)?)?(?:stud(?:y|ies|ied|ying)|enrolled|student|phd|ph\.d\.|"
        r"undergrad|postdoc)(?:\s+student)?\s+(?:at|in)\b|\bgraduated\s+from\b"
        r"|\bstud(?:y|ies|ied|ying)(?:\s+[\w-]+){1,2}?\s+at\b",
        "first",
        _routes(organization="STUDIES_AT", untyped="STUDIES_AT:organization"),
        words(
            "study studies studied studying enrolled student phd ph.d undergrad postdoc graduated"
        ),
    ),
    Trigger(
        "moved_from",
        r"\b(?:move[sd]?|moving|relocated?|relocating|transferr(?:ed|ing))"
        r"(?:\s+(?:over|away|back))?\s+(?:from|out\s+of)\b",
        "first",
        _routes(location="LIVES_IN", untyped="LIVES_IN:location"),
        words("move moves moved moving relocate relocated relocating transferred transferring"),
        ends=True,
        to_next=True,
    ),
    Trigger(
        "switched_jobs",
        r"\b(?:switch(?:ed|ing)?|chang(?:ed|ing))\s+jobs\s+from\b",
        "first",
        _routes(organization="WORKS_AT", untyped="WORKS_AT:organization"),
        words("switch switched switching changed changing"),
        ends=True,
        to_next=True,
    ),
    Trigger(
        "switched_from",
        r"\b(?:switch(?:ed|ing)?|migrat(?:ed|ing)|chang(?:ed|ing))(?:\s+over)?"
        r"\s+from\b",
        "first",
        _routes(tool="USES", organization="WORKS_AT", location="LIVES_IN", untyped="USES:tool"),
        words("switch switched switching migrated migrating changed changing"),
        ends=True,
        to_next=True,
    ),
    Trigger(
        "left",
        r"\b(?:left|leaving|quit|quitting|resigned\s+from|resigning\s+from|"
        r"stopped\s+using|gave\s+up(?:\s+on)?)"
        r"(?:\s+(?:my\s+|the\s+|a\s+)?(?:job|position|role|post|gig|internship)\s+(?:at|with))?\b",
        "first",
        _routes(
            organization="WORKS_AT",
            location="LIVES_IN",
            tool="USES",
            untyped="WORKS_AT:organization",
        ),
        words("left leaving quit quitting resigned resigning stopped gave"),
        ends=True,
    ),
    Trigger(
        "lives_in",
        r"\b(?:live[sd]?|living|reside[sd]?|residing|settled|staying)\s+in\b"
        r"|\b(?:move[sd]?|moving|relocated?|relocating)\s+(?:back\s+)?to\b"
        r"|\bbased\s+(?:in|out\s+of)\b",
        "first",
        _routes(location="LIVES_IN", untyped="LIVES_IN:location"),
        words(
            "live lives lived living reside resides resided residing settled "
            "staying move moves moved moving relocate relocated relocating based"
        ),
    ),
    Trigger(
        "from",
        r"\b(?:(?:am|'m|’m|is|are|'re|’re|was|were|come|comes|came|originally|hails?)\s+)+"
        rf"from\b|\b(?:an?\s+(?:[\w-]+\s+){{0,2}}?)?(?:{_JOBS}|guy|girl|person|family)\s+from\b"
        r"|(?<=,)\s*from\b"
        r"|\b(?:grew up|born|raised)\s+in\b",
        "first",
        _routes(location="FROM", untyped="FROM:location"),
        words("from born raised grew"),
    ),
    Trigger(
        "going",
        r"\b(?:go|goes|going|went|heading|headed|flying|fly|flew|travel(?:l)?ing|"
        r"travel(?:l)?ed|driving|drive|trip|vacation|holiday)\s+to\b",
        "first",
        _routes(event="ATTENDS", location="VISITS", untyped="VISITS:location"),
        words(
            "go goes going went heading headed flying fly flew traveling travelling "
            "traveled travelled driving drive trip vacation holiday"
        ),
    ),
    Trigger(
        "uses",
        r"\b(?:use[sd]?|using|utili[sz](?:e[sd]?|ing)|know|knows)\b"
        r"|\b(?:code|coding|program|programming|develop|developing|sketch|sketching|draw|"
        r"drawing|design|designing|edit|editing|prototype|prototyping)\s+"
        r"(?:mostly\s+|mainly\s+|primarily\s+)?(?:in|with)\b"
        r"|\b(?:write|writes|writing)\b"
        r"|\bstack\s+(?:is|includes)\b"
        r"|(?:'re|’re|\bare|'m|’m|\bam)\s+on\b"
        r"|\b(?:spend|spends|spent|run|runs|running|ran)\b[^.?!;]{0,40}?\b(?:in|on|with)\b"
        r"|\b(?:switched|switching|migrated|migrating)\s+to\b",
        "all",
        _TOOL,
        words(
            "use uses used using utilise utilises utilised utilising utilize "
            "utilizes utilized utilizing know knows code coding program programming "
            "develop developing sketch sketching draw drawing design designing edit "
            "editing prototype prototyping write writes writing stack on spend "
            "spends spent run runs running ran switched switching migrated "
            "migrating"
        ),
    ),
    Trigger(
        "attends",
        r"\battend(?:s|ed|ing)?\b|\b(?:running|ran|run|racing|speaking at|presenting at)"
        r"\s+(?:in\s+|at\s+)?the\b",
        "first",
        _routes(event="ATTENDS", untyped="ATTENDS:event"),
        words("attend attends attended attending running ran run racing speaking presenting"),
    ),
    Trigger(
        "met_at",
        r"\b(?:met|meet|meeting|was|were|been|see you|saw)\s+at\b",
        "first",
        _routes(event="ATTENDS"),
        words("at"),
    ),
    Trigger(
        "visits",
        r"\bvisit(?:s|ed|ing)?\b",
        "first",
        _routes(location="VISITS", untyped="VISITS:location"),
        words("visit visits visited visiting"),
    ),
    Trigger(
        "prefers",
        r"\b(?:prefer(?:s|red)?|preferring|like[sd]?|love[sd]?|loving|enjoy(?:s|ed)?|"
        r"adore[sd]?)\b|\bswears?\s+by\b|\b(?:big\s+|huge\s+)?fan\s+of\b"
        r"|\bfav(?:ou?rite)?(?:\s+[\w-]+){0,2}\s+(?:is|are)\b",
        "list",
        _routes(**{t: "PREFERS" for t in _TASTE}),
        words(
            "prefer prefers preferred preferring like likes liked love loves loved "
            "loving enjoy enjoys enjoyed adore adores adored swear swears fan fav "
            "favourite favorite"
        ),
        over_next=True,
    ),
    Trigger(
        "located_in",
        r"\b(?:located|headquartered|situated|held)\s+in\b",
        "first",
        _routes(location="LOCATED_IN", untyped="LOCATED_IN:location"),
        words("located headquartered situated held"),
    ),
)

#: One alternation of every trigger; the group name is the trigger's index.
TRIGGER_RE = re.compile(
    "|".join(f"(?P<t{i}>{t.pattern})" for i, t in enumerate(TRIGGERS)), re.IGNORECASE
)


@functools.lru_cache(maxsize=512)
def trigger_regex(indices: tuple[int, ...]) -> re.Pattern[str]:
    """The alternation of the triggers at ``indices`` (kept in :data:`TRIGGERS` order, so it
    matches exactly like :data:`TRIGGER_RE` where those triggers can match), for text
    already in lower case: one big case-insensitive alternation tried at every character
    is most of the extractor's cost; gated and case-folded it is a fraction."""
    return re.compile("|".join(f"(?P<t{i}>{TRIGGERS[i].pattern})" for i in indices))


def gated_triggers(words_in_sentence: frozenset[str] | set[str]) -> tuple[int, ...]:
    """Indices of the triggers whose gate words occur in the sentence."""
    return tuple(i for i, t in enumerate(TRIGGERS) if not t.gate.isdisjoint(words_in_sentence))


#: Where a fact's object phrase ends.
CLAUSE_BREAK = re.compile(
    r"[.;!?:()]|\s[—–-]\s|\b(?:but|because|although|though|while|so that|which|who)\b"
    r"|,?\s+and\s+(?=(?:i|you|we|he|she|they|my|your|our|his|her|their)\b)",
    re.IGNORECASE,
)

#: Words that end a preference list: "VS Code over PyCharm", "Postgres more than MySQL".
COMPARATOR = re.compile(
    r"\b(?:over|than|instead|rather|vs\.?|versus|sorry|except|not)\b", re.IGNORECASE
)

#: What may stand between two items of one list: "A, B and C", "A + B", "A or B".
LIST_GAP = re.compile(
    r"^(?:\s*(?:,|\+|/|&|\band\b|\bor\b|\bplus\b|\bwith\b|\balso\b|\bsometimes\b|"
    r"\bmostly\b|\bmainly\b|\bthe\b|\bsome\b))*\s*$",
    re.IGNORECASE,
)

#: "Osaka is where I grew up": the object stands before the verb.
WHERE_I = re.compile(
    r"\b(?:is|was)\s+where\s+(?:i|we)\s+(?:(?P<from>grew up|was born|was raised)|"
    r"(?P<lives>live|lived|now live))\b",
    re.IGNORECASE,
)

#: The user stating their own name; the name starts where the match ends.
SELF_NAME = re.compile(
    r"\bmy name(?:'s|’s|\s+is)\s+|\bcall me\s+|\b(?:i'm|i’m|im|i am)\s+"
    r"|\b(?:the\s+)?user(?:'s|’s)?\s+(?:name\s+is|is\s+named|is\s+called|named|called)\s+",
    re.IGNORECASE,
)

#: The assistant addressing the user: "your name is", "you're".
YOUR_NAME = re.compile(r"\byour name(?:'s|’s|\s+is)\s+|\byou(?:'re|’re|\s+are)\s+", re.IGNORECASE)

#: "Nice to meet you, Alex": the name after a greeting is a person.
VOCATIVE = re.compile(
    r"(?:^|[.!?]\s+)(?:hi|hey|hello|thanks|thank you|nice to meet you|welcome(?: back)?|"
    r"good (?:morning|evening|afternoon)|congrats|congratulations)[,!]?\s+",
    re.IGNORECASE,
)

#: "a data engineer from Porto" after "I'm Maria," is about the speaker.
APPOSITIVE_JOB = re.compile(rf"^an?\s+(?:[\w-]+\s+){{0,2}}(?:{_JOBS})\b", re.IGNORECASE)


def _kinds(kind: str, words: str) -> dict[str, str]:
    return {w.replace("_", " "): kind for w in words.split()}


#: "Figma is my main tool", "a startup called Finch": the noun gives the name's type.
KIND_NOUNS: MappingProxyType[str, str] = MappingProxyType(
    {
        **_kinds(
            "tool",
            "tool app application editor ide language framework library database db "
            "platform service os distro browser plugin extension",
        ),
        **_kinds(
            "organization",
            "company startup employer firm bank university college school hospital "
            "agency nonprofit charity",
        ),
        **_kinds("location", "city town country village neighbourhood neighborhood suburb"),
        **_kinds("event", "conference festival meetup hackathon"),
        **_kinds(
            "person",
            "cousin aunt uncle niece nephew grandma grandpa grandmother grandfather "
            "neighbour neighbor landlord dentist therapist doctor client classmate "
            "student mentor",
        ),
    }
)

_KIND_ALT = "|".join(sorted((re.escape(k) for k in KIND_NOUNS), key=len, reverse=True))

#: ``X is my main tool``: the name ends right before the match.
IS_A = re.compile(
    rf"\s+(?:is|was)\s+(?P<owner>my|our|a|an|the)\s+(?:[\w-]+\s+){{0,2}}?(?P<noun>{_KIND_ALT})\b",
    re.IGNORECASE,
)

#: ``a startup called Finch``, ``my cousin Yasmin``: the name starts where the match ends.
CALLED = re.compile(
    rf"\b(?:(?:an?|the|my|our|your)\s+(?:[\w-]+\s+){{0,2}}?(?P<noun>{_KIND_ALT})"
    r"\s+(?:called|named)\s+"
    rf"|(?:my|our|your)\s+(?P<kin>{_KIND_ALT})(?:,\s*|\s+))",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class RelationNoun:
    """``my <noun> X``: the relationship, and whether it points from X to the owner."""

    type: str
    from_named: bool


def _nouns(rel: str, from_named: bool, words: str) -> dict[str, RelationNoun]:
    return {w.replace("_", " "): RelationNoun(rel, from_named) for w in words.split()}


RELATION_NOUNS: MappingProxyType[str, RelationNoun] = MappingProxyType(
    {
        **_nouns("MARRIED_TO", True, "wife husband spouse"),
        **_nouns("PARTNER_OF", True, "partner girlfriend boyfriend fiance fiancé fiancee fiancée"),
        **_nouns("SIBLING_OF", True, "sister brother sibling twin"),
        **_nouns("FRIEND_OF", True, "friend buddy pal bestie roommate flatmate"),
        **_nouns("COLLEAGUE_OF", True, "colleague coworker co-worker teammate"),
        **_nouns(
            "MANAGES",
            True,
            "manager boss supervisor team_lead tech_lead lead advisor line_manager "
            "head_of_department department_head director",
        ),
        **_nouns("PARENT_OF", True, "mom mum mother dad father"),
        **_nouns("PARENT_OF", False, "son daughter"),
        **_nouns("MANAGES", False, "report direct_report intern"),
    }
)

_NOUN_ALT = "|".join(sorted((re.escape(k) for k in RELATION_NOUNS), key=len, reverse=True))

#: ``my|your|our|'s`` + optional adjective + relation noun.
RELATION_NOUN = re.compile(
    r"(?P<owner>\bmy|\byour|\bour|'s|’s)\s+(?:(?P<ex>ex|ex-|former)\s*)?"
    r"(?:(?:new|old|best|older|younger|little|big|current|favourite|favorite|dear)\s+)?"
    rf"(?P<noun>{_NOUN_ALT})s?\b",
    re.IGNORECASE,
)

#: Relationship types whose direction carries no meaning.
SYMMETRIC: frozenset[str] = frozenset(
    {"SIBLING_OF", "MARRIED_TO", "PARTNER_OF", "FRIEND_OF", "COLLEAGUE_OF"}
)
