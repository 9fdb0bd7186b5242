"""A deterministic retrieval-quality set: multi-session chats with facts and questions.

Each synthetic user has one long conversation of several sessions with an assistant. Most
turns are distractor chatter drawn from the same vocabulary as ``benchmarks._workload``
(places, foods, hobbies, tools, people), so distractors look like real chat and share words
with the facts. A handful of personal facts are planted in the user's turns, one question
each, of four types:

- ``single``: stated once;
- ``restated``: stated, then restated in other words in a later session (both are evidence);
- ``updated``: stated, then contradicted in a later session; the question asks for the
  current value, so only the update is evidence;
- ``buried``: stated once in passing, in the middle of a long message about something else.

Each user is also asked the questions of the fact kinds *not* planted for them
(``negatives``, no evidence): the memory cannot answer those, so retrieval should say
"nothing relevant" (how the relevance floor is measured).

Every fact also exists as an entity with the current value (what extraction would leave
behind), so entity search and the merged memory block can be scored against the same
questions. The questions are phrased as a user would ask them, mostly with other words
than the evidence ("Where do I live now?" vs "we moved into a flat in Porto"), so neither
keyword nor vector search gets them for free. Same seed and sizes, same set, byte for byte.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ._workload import (
    ASSISTANT_SENTENCES,
    FIRST_NAMES,
    FOODS,
    HOBBIES,
    LAST_NAMES,
    ORGS,
    PLACES,
    PROJECTS,
    ROLES,
    TOPICS,
    USER_SENTENCES,
    draw_slots,
    entity_specs,
    fill_template,
)

__all__ = [
    "QUESTION_TYPES",
    "QualityQuestion",
    "QualitySet",
    "QualityUser",
    "SetMessage",
    "generate_quality",
]

QUESTION_TYPES = ("single", "restated", "updated", "buried")


@dataclass(frozen=True, slots=True)
class FactKind:
    """One kind of personal fact: how it is said, restated, changed, asked and stored."""

    key: str
    values: tuple[str, ...]
    states: tuple[str, ...]  # ``{v}`` is the value; two or more, so a restatement differs
    update: str | None  # ``{old}`` -> ``{v}``; ``None``: this fact does not change
    question: str
    entity_type: str
    description: str  # the entity's description; ``{v}`` is the current value


LANGUAGES = ("Japanese", "Portuguese", "Korean", "Italian", "Swahili", "Finnish", "Greek")
CARS = ("Volvo estate", "Toyota Prius", "Kia Niro", "Skoda Octavia", "Fiat Panda", "Mini Cooper")
ALLERGIES = ("peanuts", "shellfish", "penicillin", "sesame", "pollen", "kiwi fruit")
DIETS = ("vegetarian", "vegan", "pescatarian", "gluten-free", "low-carb")
INSTRUMENTS = ("cello", "piano", "drums", "ukulele", "violin", "saxophone", "banjo")
MONTHS = ("January", "March", "April", "June", "August", "October", "November")
PET_NAMES = ("Biscuit", "Pepper", "Mochi", "Juniper", "Waffles", "Ziggy", "Noodle", "Clover")
PEOPLE = tuple(f"{first} {last}" for first in FIRST_NAMES[:12] for last in LAST_NAMES[:6])

FACTS: tuple[FactKind, ...] = (
    FactKind(
        "employer",
        ORGS,
        (
            "I signed the offer today, I start at {v} next month.",
            "Things at {v} are hectic this week, everyone is behind on deadlines.",
            "My badge for the {v} office finally arrived.",
        ),
        "Big change: I left {old} and started at {v} on Monday.",
        "Which company do I work for now?",
        "Organization",
        "Company where the user is employed.",
    ),
    FactKind(
        "city",
        PLACES,
        (
            "We moved into a small flat in {v} in the spring.",
            "The trams in {v} are so much better than where I grew up.",
            "Our landlord in {v} finally fixed the heating.",
        ),
        "We are relocating from {old} to {v} at the end of the month.",
        "Which city am I living in at the moment?",
        "Location",
        "City the user lives in.",
    ),
    FactKind(
        "pet",
        PET_NAMES,
        (
            "We adopted a beagle puppy last weekend and called him {v}.",
            "Our dog {v} stole a sandwich off the kitchen table again.",
            "Taking {v} to the vet for his shots tomorrow morning.",
        ),
        None,
        "What is my dog's name?",
        "Animal",
        "The user's beagle.",
    ),
    FactKind(
        "allergy",
        ALLERGIES,
        (
            "Heads up for recipes: I react badly to {v}, so please leave them out.",
            "The doctor confirmed I am allergic to {v}; it is what gives me hives.",
        ),
        None,
        "What am I allergic to?",
        "Condition",
        "Allergy of the user: {v}.",
    ),
    FactKind(
        "car",
        CARS,
        (
            "I finally bought a second-hand {v} so the commute is easier.",
            "My car, the {v}, needs new tyres before winter.",
        ),
        "I sold the {old} and got a {v} instead.",
        "What car do I drive these days?",
        "Vehicle",
        "The user's car.",
    ),
    FactKind(
        "sister",
        FIRST_NAMES,
        (
            "My sister {v} is flying in from abroad to stay with us.",
            "{v}, my little sister, just got engaged!",
        ),
        None,
        "What is my sister called?",
        "Person",
        "The user's sister.",
    ),
    FactKind(
        "thursday",
        HOBBIES,
        (
            "I signed up for a {v} class every Thursday evening.",
            "Thursday {v} sessions are the highlight of my week.",
        ),
        "I quit {old} on Thursdays; I do {v} then now.",
        "What do I do on Thursday evenings?",
        "Activity",
        "The user's Thursday evening activity.",
    ),
    FactKind(
        "diet",
        DIETS,
        (
            "Since January I eat {v}, and it has been easier than I expected.",
            "My {v} diet means I read every menu twice.",
        ),
        "I stopped eating {old}; my diet is {v} from now on.",
        "What kind of diet am I following?",
        "Diet",
        "Diet the user follows.",
    ),
    FactKind(
        "language",
        LANGUAGES,
        (
            "I practise {v} vocabulary on the train every morning.",
            "My {v} tutor says my pronunciation is improving.",
        ),
        "I gave up on {old} and started learning {v} instead.",
        "Which language am I studying?",
        "Language",
        "Language the user is learning.",
    ),
    FactKind(
        "manager",
        PEOPLE,
        (
            "My new manager is {v}, she came over from the head office.",
            "{v} approved my holiday request without any questions.",
        ),
        "{old} left the company, so {v} is my manager now.",
        "Who is my boss?",
        "Person",
        "The user's manager at work.",
    ),
    FactKind(
        "birthday",
        MONTHS,
        (
            "My birthday is in {v} and I never know how to celebrate it.",
            "Turning another year older in {v}, please no surprise parties.",
        ),
        None,
        "When is my birthday?",
        "Date",
        "Month of the user's birthday: {v}.",
    ),
    FactKind(
        "project",
        PROJECTS,
        (
            "I was put in charge of {v} today.",
            "Leading {v} is more politics than engineering.",
        ),
        "They moved me off {old}; I am leading {v} now.",
        "Which project am I leading?",
        "Project",
        "Project the user leads at work.",
    ),
    FactKind(
        "instrument",
        INSTRUMENTS,
        (
            "I have been taking {v} lessons on Saturday mornings.",
            "My neighbours can hear me practising the {v} through the wall.",
        ),
        "I sold my {old} and switched to the {v}.",
        "Which instrument do I play?",
        "Instrument",
        "Musical instrument the user plays.",
    ),
    FactKind(
        "comfort_food",
        FOODS,
        (
            "Honestly {v} is my comfort food after a long week.",
            "Nothing cheers me up like a big plate of {v}.",
        ),
        None,
        "What food do I eat when I need cheering up?",
        "Food",
        "The user's comfort food.",
    ),
    FactKind(
        "role",
        ROLES,
        (
            "My job title is {v}, though the work is broader than that.",
            "Being the only {v} on the team is lonely sometimes.",
        ),
        "I got promoted from {old} to {v}.",
        "What is my job title?",
        "Role",
        "The user's job title.",
    ),
)

ACKS = (
    "Noted, thanks for telling me.",
    "Got it, I will keep that in mind.",
    "Thanks, that is good to know.",
    "Understood.",
)


@dataclass(frozen=True, slots=True)
class SetMessage:
    """One turn; ``key`` (``u03-s2-t07``) is how questions name their evidence."""

    key: str
    role: str
    content: str
    session: int


@dataclass(frozen=True, slots=True)
class SetEntity:
    key: str
    name: str
    type: str
    description: str


@dataclass(frozen=True, slots=True)
class QualityQuestion:
    user_id: str
    type: str
    fact: str
    question: str
    evidence: tuple[str, ...]  # message keys
    entity: str | None  # entity key whose current value answers it


@dataclass(frozen=True, slots=True)
class QualityUser:
    user_id: str
    messages: tuple[SetMessage, ...]
    entities: tuple[SetEntity, ...]


@dataclass(frozen=True, slots=True)
class QualitySet:
    users: tuple[QualityUser, ...]
    questions: tuple[QualityQuestion, ...]
    seed: int
    #: Questions whose answer is in no message of the asking user (evidence empty).
    negatives: tuple[QualityQuestion, ...] = ()

    @property
    def message_count(self) -> int:
        return sum(len(u.messages) for u in self.users)


def _chatter(rng: random.Random, role: str, topic: str, slots: dict[str, str], n: int) -> str:
    pool = USER_SENTENCES if role == "user" else ASSISTANT_SENTENCES
    picked = rng.sample(list(pool[topic]), min(n, len(pool[topic])))
    return " ".join(fill_template(t, slots) for t in picked)


def _types_for(kind: FactKind, index: int) -> str:
    """Question types cycle; facts that never change take ``restated`` for ``updated``."""
    wanted = QUESTION_TYPES[index % len(QUESTION_TYPES)]
    return "restated" if wanted == "updated" and kind.update is None else wanted


def _user(
    rng: random.Random, index: int, sessions: int, turns: int, facts: int, distractors: int
) -> tuple[QualityUser, list[QualityQuestion]]:
    user_id = f"quser-{index:03d}"
    # text[session][turn]; user turns are the even ones
    text: list[list[str]] = []
    for _ in range(sessions):
        topic = rng.choice(TOPICS)
        slots = draw_slots(rng)
        text.append(
            [
                _chatter(
                    rng, "user" if t % 2 == 0 else "assistant", topic, slots, rng.randint(1, 2)
                )
                for t in range(turns)
            ]
        )
    free = [(s, t) for s in range(sessions) for t in range(0, turns, 2)]
    rng.shuffle(free)
    taken: set[tuple[int, int]] = set()

    def slot(after: int | None = None, not_last: bool = False) -> tuple[int, int]:
        """A free user turn, in a session after ``after``; not in the last one if asked."""
        for s, t in free:
            if (s, t) in taken or (after is not None and s <= after):
                continue
            if not_last and s == sessions - 1:
                continue
            taken.add((s, t))
            return s, t
        raise ValueError("not enough user turns for the facts; add sessions or turns")

    def key(s: int, t: int) -> str:
        return f"u{index:03d}-s{s}-t{t:02d}"

    def place(s: int, t: int, sentence: str, buried: bool = False) -> None:
        if buried:
            topic = rng.choice(TOPICS)
            slots = draw_slots(rng)
            around = [fill_template(x, slots) for x in rng.sample(list(USER_SENTENCES[topic]), 4)]
            aside = f"Oh, and {sentence[0].lower()}{sentence[1:]}"
            text[s][t] = " ".join([*around[:2], aside, *around[2:]])
        else:
            text[s][t] = sentence
        if t + 1 < turns:  # the reply acknowledges without repeating the fact
            text[s][t + 1] = (
                f"{rng.choice(ACKS)} {_chatter(rng, 'assistant', 'work', draw_slots(rng), 1)}"
            )

    kinds = rng.sample(FACTS, min(facts, len(FACTS)))
    entities: list[SetEntity] = []
    questions: list[QualityQuestion] = []
    for i, kind in enumerate(kinds):
        qtype = _types_for(kind, index + i)
        value, old = rng.sample(kind.values, 2)
        states = rng.sample(kind.states, 2)
        s1, t1 = slot(not_last=qtype in ("restated", "updated"))  # room for a later one
        if qtype == "single":
            place(s1, t1, fill_template(states[0], {"v": value}))
            evidence: tuple[str, ...] = (key(s1, t1),)
        elif qtype == "buried":
            place(s1, t1, fill_template(states[0], {"v": value}), buried=True)
            evidence = (key(s1, t1),)
        elif qtype == "restated":
            s2, t2 = slot(after=s1)
            place(s1, t1, fill_template(states[0], {"v": value}))
            place(s2, t2, fill_template(states[1], {"v": value}))
            evidence = (key(s1, t1), key(s2, t2))
        else:
            assert kind.update is not None
            s2, t2 = slot(after=s1)
            place(s1, t1, fill_template(states[0], {"v": old}))
            place(s2, t2, fill_template(kind.update, {"v": value, "old": old}))
            evidence = (key(s2, t2),)
        entity_key = f"u{index:03d}-{kind.key}"
        entities.append(
            SetEntity(
                entity_key, value, kind.entity_type, fill_template(kind.description, {"v": value})
            )
        )
        questions.append(
            QualityQuestion(user_id, qtype, kind.key, kind.question, evidence, entity_key)
        )
    for j, spec in enumerate(entity_specs(rng, distractors)):  # what else extraction found
        entities.append(SetEntity(f"u{index:03d}-d{j:02d}", spec.name, spec.type, spec.description))
    messages = tuple(
        SetMessage(key(s, t), "user" if t % 2 == 0 else "assistant", text[s][t], s)
        for s in range(sessions)
        for t in range(turns)
    )
    return QualityUser(user_id, messages, tuple(entities)), questions


def _negatives(user: QualityUser, asked: list[QualityQuestion]) -> list[QualityQuestion]:
    """The questions of the fact kinds this user never stated (no randomness: the set
    stays the same byte for byte)."""
    stated = {q.fact for q in asked}
    return [
        QualityQuestion(user.user_id, "absent", kind.key, kind.question, (), None)
        for kind in FACTS
        if kind.key not in stated
    ]


def generate_quality(
    *,
    users: int,
    sessions: int,
    turns_per_session: int,
    facts_per_user: int,
    seed: int,
    distractor_entities: int = 20,
) -> QualitySet:
    """``users`` chats of ``sessions`` x ``turns_per_session`` turns, facts and questions.

    Each user's workspace also gets ``distractor_entities`` entities about the chatter.
    """
    if sessions < 2 or turns_per_session < 2:
        raise ValueError("at least 2 sessions of 2 turns, so facts can be restated later")
    rng = random.Random(seed)
    built = [
        _user(rng, i, sessions, turns_per_session, facts_per_user, distractor_entities)
        for i in range(users)
    ]
    return QualitySet(
        users=tuple(u for u, _ in built),
        questions=tuple(q for _, qs in built for q in qs),
        seed=seed,
        negatives=tuple(n for u, qs in built for n in _negatives(u, qs)),
    )
