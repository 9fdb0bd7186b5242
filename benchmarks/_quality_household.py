"""A second retrieval-quality set, built independently of ``_quality_data``.

The first set's chatter, facts and questions all come from ``_workload``'s word lists
(offices, projects, tools), so ranking defaults tuned on it could be tuned to that
vocabulary. This one is a different generator with a different world — home, family,
garden, travel, money, health — its own sentence pools, and two question types the first
set lacks:

- ``multi-hop``: the answer needs two turns from different sessions ("My cousin is
  Teodor." … "Teodor is moving to Tromsø in the autumn." → "Where is my cousin moving?");
  both turns are evidence, so recall@k is 0.5 when only one is found;
- ``temporal``: the same thing changes month by month, each turn naming its month ("In
  February I was reading …", "This April it is …"); the question asks for one month's
  value ("What was I reading in February?"), so only that month's turn is evidence;
- ``single`` and ``buried`` (a fact said in passing in a long message) as in the first
  set, with other wording.

Unanswerable questions (``negatives``) are the questions of the fact kinds a user never
stated. Messages only (no entities): the set scores message search and the memory block.
Same seed and sizes, same set, byte for byte.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ._quality_data import QualityQuestion, QualitySet, QualityUser, SetMessage

__all__ = ["HOUSEHOLD_TYPES", "generate_household"]

HOUSEHOLD_TYPES = ("single", "multi-hop", "temporal", "buried")

KIN = ("cousin", "aunt", "godmother", "brother-in-law", "uncle", "niece")
KIN_NAMES = ("Teodor", "Marisol", "Anouk", "Bartek", "Ilse", "Kofi", "Leontine", "Radu", "Sunniva")
TOWNS = ("Tromsø", "Valparaíso", "Ghent", "Nagasaki", "Bergamo", "Halifax", "Tbilisi", "Cork")
JOBS = ("midwife", "ferry captain", "locksmith", "beekeeper", "court interpreter", "glassblower")
BOOKS = (
    "a biography of Ada Lovelace",
    "an old Le Guin paperback",
    "a thick history of the Silk Road",
    "a collection of Chekhov stories",
    "a field guide to mushrooms",
    "a memoir by a lighthouse keeper",
)
VEG = ("courgettes", "broad beans", "rhubarb", "chard", "pumpkins", "runner beans", "leeks")
MONTHS = ("February", "April", "June", "September", "November")
CLINICS = (
    "the physio on Elm Road",
    "a chiropractor near the station",
    "the sports clinic at the pool",
)
BANKS = ("a credit union", "the building society", "an online-only bank")
BIKES = ("a steel touring bike", "a folding Brompton", "a cargo bike", "an old racing bike")

CHATTER_USER = (
    "The washing machine is making that grinding noise again.",
    "We spent the whole afternoon clearing gutters before the rain.",
    "I tried a new bread recipe and the crust came out far too dark.",
    "The kids want to repaint their bedroom bright orange.",
    "Our street is digging up the water pipes, so parking is chaos.",
    "I finally sorted the shoebox of receipts for the tax return.",
    "The heat pump installer wants to come round next Wednesday.",
    "We are thinking about a long weekend by the sea if the weather holds.",
    "Fixing the squeaky stair turned into replacing half the banister.",
    "The compost heap is steaming in this cold, which seems like a good sign.",
    "I am trying to cut down on takeaway coffees to save a bit.",
    "The train strike messed up the school run all week.",
    "There is a leak under the kitchen sink I keep putting off.",
    "We found a lovely second-hand dresser at the flea market.",
    "The neighbours' cat keeps sleeping on our car roof.",
    "I need to renew the home insurance before the end of the month.",
)
CHATTER_ASSISTANT = (
    "That sounds like a busy few days at home.",
    "A small fix now usually saves a bigger repair later.",
    "Would a checklist help you get through the jobs one by one?",
    "Weather permitting, that could be a nice break.",
    "It might be worth getting two quotes before deciding.",
    "Saving on small daily costs does add up over a year.",
    "I can help you plan that if you tell me the dates.",
    "That must have been frustrating to deal with.",
)
ACKS = ("Lovely, thanks for sharing.", "Good to know!", "Okay, noted.", "Ah, I see.")


@dataclass(frozen=True, slots=True)
class Kind:
    """One fact kind: its sentences (``{v}``, ``{n}`` slots) and its question."""

    key: str
    type: str  # one of HOUSEHOLD_TYPES
    question: str


KINDS = (
    Kind("kin_town", "multi-hop", "Where is my {kin} moving to?"),
    Kind("kin_job", "multi-hop", "What does my {kin} do for a living?"),
    Kind("reading", "temporal", "What was I reading in {month}?"),
    Kind("veg", "temporal", "What did I plant in the garden in {month}?"),
    Kind("clinic", "single", "Where do I go for my bad back?"),
    Kind("bank", "single", "Who do we keep our savings with?"),
    Kind("bike", "buried", "What kind of bicycle do I ride?"),
    Kind("allotment", "buried", "What number is our allotment plot?"),
)


def _chatter(rng: random.Random, role: str, n: int) -> str:
    pool = CHATTER_USER if role == "user" else CHATTER_ASSISTANT
    return " ".join(rng.sample(pool, n))


def _user(
    rng: random.Random, index: int, sessions: int, turns: int
) -> tuple[QualityUser, list[QualityQuestion], list[QualityQuestion]]:
    user_id = f"huser-{index:03d}"
    text = [
        [
            _chatter(rng, "user" if t % 2 == 0 else "assistant", rng.randint(1, 2))
            for t in range(turns)
        ]
        for _ in range(sessions)
    ]
    free = [(s, t) for s in range(sessions) for t in range(0, turns, 2)]
    rng.shuffle(free)
    taken: set[tuple[int, int]] = set()

    def slot(session: int | None = None, after: int | None = None) -> tuple[int, int]:
        for s, t in free:
            if (s, t) in taken or (session is not None and s != session):
                continue
            if after is not None and s <= after:
                continue
            taken.add((s, t))
            return s, t
        raise ValueError("not enough user turns for the facts; add sessions or turns")

    def key(s: int, t: int) -> str:
        return f"h{index:03d}-s{s}-t{t:02d}"

    def place(s: int, t: int, sentence: str) -> str:
        text[s][t] = sentence
        if t + 1 < turns:
            text[s][t + 1] = f"{rng.choice(ACKS)} {_chatter(rng, 'assistant', 1)}"
        return key(s, t)

    kinds = rng.sample(KINDS, 5)
    questions: list[QualityQuestion] = []
    for kind in kinds:
        if kind.type == "multi-hop":
            kin, name = rng.choice(KIN), rng.choice(KIN_NAMES)
            s1, t1 = slot(after=None)
            first = place(s1, t1, f"My {kin} {name} came for dinner and we talked for hours.")
            s2, t2 = slot(after=s1) if s1 < sessions - 1 else slot()
            if kind.key == "kin_town":
                line = (
                    f"{name} is moving to {rng.choice(TOWNS)} in the autumn, big change for them."
                )
            else:
                line = f"{name} has worked as a {rng.choice(JOBS)} for almost ten years now."
            second = place(s2, t2, line)
            question = kind.question.format(kin=kin)
            evidence: tuple[str, ...] = (first, second)
        elif kind.type == "temporal":
            months = rng.sample(range(len(MONTHS)), 3)
            values = rng.sample(BOOKS if kind.key == "reading" else VEG, 3)
            placed = []
            for m, v in zip(sorted(months), values, strict=True):
                s, t = slot()
                month = MONTHS[m]
                if kind.key == "reading":
                    line = f"Back in {month} I was reading {v}, on the bus every morning."
                else:
                    line = f"In {month} we put {v} in the raised bed by the shed."
                placed.append((month, place(s, t, line)))
            month, asked = rng.choice(placed)
            question = kind.question.format(month=month)
            evidence = (asked,)
        elif kind.type == "single":
            s, t = slot()
            if kind.key == "clinic":
                line = (
                    f"My back is playing up, so I booked another session at {rng.choice(CLINICS)}."
                )
            else:
                line = f"We moved our savings to {rng.choice(BANKS)} because the rates were better."
            question, evidence = kind.question, (place(s, t, line),)
        else:
            s, t = slot()
            if kind.key == "bike":
                fact = f"I rode {rng.choice(BIKES)} to the market"
            else:
                fact = f"our allotment is plot {rng.randint(11, 98)} at the far end"
            around = rng.sample(CHATTER_USER, 4)
            line = " ".join([*around[:2], f"By the way, {fact}.", *around[2:]])
            question, evidence = kind.question, (place(s, t, line),)
        questions.append(QualityQuestion(user_id, kind.type, kind.key, question, evidence, None))
    stated = {k.key for k in kinds}
    negatives = [
        QualityQuestion(
            user_id,
            "absent",
            k.key,
            k.question.format(kin=KIN[index % len(KIN)], month=MONTHS[index % len(MONTHS)]),
            (),
            None,
        )
        for k in KINDS
        if k.key not in stated
    ]
    messages = tuple(
        SetMessage(key(s, t), "user" if t % 2 == 0 else "assistant", text[s][t], s)
        for s in range(sessions)
        for t in range(turns)
    )
    return QualityUser(user_id, messages, ()), questions, negatives


def generate_household(
    *, users: int, sessions: int, turns_per_session: int, seed: int
) -> QualitySet:
    """``users`` chats of ``sessions`` x ``turns_per_session`` turns, with their questions."""
    if sessions < 3 or turns_per_session < 4:
        raise ValueError("at least 3 sessions of 4 turns, for the temporal facts")
    rng = random.Random(seed)
    built = [_user(rng, i, sessions, turns_per_session) for i in range(users)]
    return QualitySet(
        users=tuple(u for u, _, _ in built),
        questions=tuple(q for _, qs, _ in built for q in qs),
        seed=seed,
        negatives=tuple(n for _, _, ns in built for n in ns),
    )
