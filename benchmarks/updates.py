"""Knowledge updates: facts that change, and what the memory block says about them.

Generated users (seeded, so every run tells the same stories) whose home and job change
one to three times, each change in one of several wordings ("I moved from X to Y in May
2024", "I used to live in X but since ... I live in Y", "I no longer work at X; I joined Y
in ...", "I switched from X to Y"), with unrelated chat between, and for some users the
statements told out of order. Then, in a new conversation, the questions a user asks:

- **current**: "Where do I live now?", "Where do I work now?" A block *presents the
  current value as current* when a [graph] line states it without an interval, and a
  *superseded value as current* when a [graph] line states an old value without one.
- **past**: "Where did I live before <current city>?", "Where did I work before
  <current job>?", "When did I move to <current city>?" Found when a [graph] line holds
  the previous value with its true interval (``from..until`` at month precision).

Graph lines are what the block presents as facts; quoted messages are what was said.
The share of blocks that quote a message naming a superseded value is reported too.

The **baseline** is today's engine without validity, in the same run: the same engine
with ``supersession=False`` (every fact stays current, nothing is closed), i.e. how the
engine behaved before relationships had validity in time.

Run ``python -m benchmarks updates --help`` for the options.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from backends.sqlite import SQLiteBackend
from nams_local.retrieval import MemoryHit, RetrievalOptions, retrieve_memories
from nams_local.scope import Scope

from ._common import positive, say
from ._report import BarGroup, add_report_options, publish

__all__ = ["main"]

NAME = "updates"
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
CITIES = [
    "Bangalore",
    "Berlin",
    "Lisbon",
    "Toronto",
    "Madrid",
    "Chennai",
    "Oslo",
    "Dublin",
    "Vienna",
    "Prague",
    "Seoul",
    "Nairobi",
    "Sydney",
    "Lyon",
    "Zurich",
    "Munich",
    "Boston",
    "Chicago",
    "Denver",
    "Austin",
    "Seattle",
    "Hamburg",
    "Warsaw",
    "Milan",
]
COMPANIES = [
    "TechCorp",
    "Acme",
    "Initech",
    "Globex",
    "Umbrella",
    "Hooli",
    "Vandelay",
    "Stark",
    "Wayne",
    "Tyrell",
    "Cyberdyne",
    "Soylent",
    "Aperture",
    "Oscorp",
    "Wonka",
    "Gringotts",
    "Massive",
    "Dynamic",
    "Pied",
    "Piper",
    "Nakatomi",
]
NAMES = [
    "Alex",
    "Priya",
    "Maria",
    "Chen",
    "Omar",
    "Lena",
    "Ravi",
    "Sofia",
    "Jonas",
    "Aisha",
    "Mateo",
    "Yuki",
    "Noah",
    "Ines",
]
FILLER = (
    "Can you recommend a good book for the weekend?",
    "What's a quick dinner I can make with rice and eggs?",
    "Remind me how to reverse a list in Python.",
    "The weather has been strange lately.",
    "Any tips for sleeping better?",
)
HOME_FIRST = (
    "Since {month} {year} I have lived in {new}.",
    "I have lived in {new} since {month} {year}.",
)
HOME_CHANGE = (
    "I moved from {old} to {new} in {month} {year}.",
    "In {month} {year} I relocated to {new}.",
    "I used to live in {old} but since {month} {year} I live in {new}.",
    "I moved to {new} in {month} {year}.",
)
JOB_FIRST = (
    "I have worked at {new} since {month} {year}.",
    "Since {month} {year} I work at {new}.",
)
JOB_CHANGE = (
    "I no longer work at {old}; I joined {new} in {month} {year}.",
    "In {month} {year} I joined {new}.",
    "I switched jobs from {old} to {new} in {month} {year}.",
    "I quit my job at {old} and in {month} {year} I started at {new}.",
)


@dataclass
class Story:
    """One generated user: their homes and jobs with true intervals, and what they said."""

    name: str
    homes: list[tuple[str, str]]  # (city, "YYYY-MM" moved in)
    jobs: list[tuple[str, str]]
    said: list[str] = field(default_factory=list)
    out_of_order: bool = False


def _chain(rng: random.Random, pool: list[str], changes: int, start: int) -> list[tuple[str, str]]:
    values = rng.sample(pool, changes + 1)
    year, month = start, rng.randint(1, 12)
    out = []
    for value in values:
        out.append((value, f"{year:04d}-{month:02d}"))
        year += rng.randint(1, 3)
        month = rng.randint(1, 12)
    return out


def _statements(
    rng: random.Random,
    chain: list[tuple[str, str]],
    first: tuple[str, ...],
    change: tuple[str, ...],
) -> list[str]:
    out = []
    for n, (value, when) in enumerate(chain):
        year, month = when.split("-")
        words = {
            "new": value,
            "old": chain[n - 1][0] if n else "",
            "year": year,
            "month": MONTHS[int(month) - 1],
        }
        out.append(rng.choice(first if n == 0 else change).format(**words))
    return out


def generate(users: int, seed: int) -> list[Story]:
    rng = random.Random(seed)
    stories = []
    for n in range(users):
        name = NAMES[n % len(NAMES)]
        homes = _chain(rng, CITIES, rng.randint(1, 3), rng.randint(2012, 2018))
        jobs = _chain(rng, COMPANIES, rng.randint(1, 3), rng.randint(2012, 2018))
        facts = _statements(rng, homes, HOME_FIRST, HOME_CHANGE)
        facts += _statements(rng, jobs, JOB_FIRST, JOB_CHANGE)
        story = Story(name, homes, jobs, out_of_order=rng.random() < 0.2)
        if story.out_of_order:
            rng.shuffle(facts)
        else:  # homes and jobs interleaved, each in its own order
            facts = _interleave(rng, facts[: len(homes)], facts[len(homes) :])
        story.said = [f"My name is {name}."]
        for fact in facts:
            story.said.append(fact)
            story.said.append(rng.choice(FILLER))
        stories.append(story)
    return stories


def _interleave(rng: random.Random, a: list[str], b: list[str]) -> list[str]:
    out: list[str] = []
    a, b = list(a), list(b)
    while a or b:
        source = a if (a and (not b or rng.random() < 0.5)) else b
        out.append(source.pop(0))
    return out


@dataclass
class Tally:
    current_asked: int = 0
    current_shown: int = 0
    superseded_as_current: int = 0
    past_asked: int = 0
    past_found: int = 0
    stale_message_blocks: int = 0
    blocks: int = 0
    examples: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "current_questions": self.current_asked,
            "current_presented_as_current": share(self.current_shown, self.current_asked),
            "superseded_presented_as_current": self.superseded_as_current,
            "past_questions": self.past_asked,
            "past_found_with_interval": share(self.past_found, self.past_asked),
            "blocks_quoting_a_superseded_message": share(self.stale_message_blocks, self.blocks),
        }


def share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _month(value: str) -> str:
    return value[:7]


async def _ask(
    backend: SQLiteBackend, story: Story, conversation: str, query: str
) -> list[MemoryHit]:
    options = RetrievalOptions()
    return await retrieve_memories(
        backend, Scope(user_id=story.name), conversation, query, 5, options
    )


def _graph(hits: list[MemoryHit]) -> list[str]:
    return [h.content for h in hits if h.source == "graph"]


async def _score_user(backend: SQLiteBackend, story: Story, tally: Tally) -> None:
    conversation = await backend.create_conversation(user_id=story.name)
    for text in story.said:
        await backend.add_message(conversation.id, "user", text)
    fresh = (await backend.create_conversation(user_id=story.name)).id
    for kind, chain, question, past_question, verb in (
        (
            "LIVES_IN",
            story.homes,
            "Where do I live now?",
            "Where did I live before {now}?",
            "When did I move to {now}?",
        ),
        ("WORKS_AT", story.jobs, "Where do I work now?", "Where did I work before {now}?", None),
    ):
        now_value = chain[-1][0]
        old_values = [value for value, _ in chain[:-1]]
        hits = await _ask(backend, story, fresh, question)
        lines = _graph(hits)
        tally.blocks += 1
        tally.current_asked += 1
        if f"({story.name})-[{kind}]->({now_value})" in lines:
            tally.current_shown += 1
        if any(f"({story.name})-[{kind}]->({old})" in lines for old in old_values):
            tally.superseded_as_current += 1
        if any(h.source != "graph" and any(o in h.content for o in old_values) for h in hits):
            tally.stale_message_blocks += 1
        previous, started = chain[-2], chain[-1][1]
        span = f"{_month(previous[1])}..{_month(started)}"
        wanted = f"({story.name})-[{kind} {span}]->({previous[0]})"
        for template in (past_question, verb):
            if template is None:
                continue
            hits = await _ask(backend, story, fresh, template.format(now=now_value))
            tally.blocks += 1
            tally.past_asked += 1
            if wanted in _graph(hits):
                tally.past_found += 1
            elif len(tally.examples) < 5:
                tally.examples.append(
                    f"{template.format(now=now_value)} wanted {wanted}; got {_graph(hits)}"
                )


async def run(stories: list[Story], supersession: bool) -> Tally:
    tally = Tally()
    async with SQLiteBackend(":memory:", embeddings=False, supersession=supersession) as root:
        for n, story in enumerate(stories):
            await _score_user(root.for_workspace(f"user-{n}"), story, tally)
    return tally


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"python -m benchmarks {NAME}",
        description="Facts that change: current and past questions against the memory block.",
    )
    parser.add_argument("--users", type=positive, default=60, help="default: %(default)s")
    parser.add_argument("--seed", type=int, default=14, help="default: %(default)s")
    add_report_options(parser)
    return parser


def render(results: dict[str, Any]) -> str:
    rows = [("", "validity (this engine)", "baseline (supersession off)")]
    engine, base = results["engine"], results["baseline"]
    for key, label in (
        ("current_presented_as_current", "current value presented as current"),
        ("superseded_presented_as_current", "superseded value presented as current"),
        ("past_found_with_interval", "past value found with its interval"),
        ("blocks_quoting_a_superseded_message", "blocks quoting a superseded message"),
    ):

        def cell(v: Any) -> str:
            return f"{v:.1%}" if isinstance(v, float) else str(v)

        rows.append((label, cell(engine[key]), cell(base[key])))
    width = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [
        f"{results['users']} users, {engine['current_questions']} current and "
        f"{engine['past_questions']} past questions (memory block of 5, text search, "
        f"{results['out_of_order_users']} users told out of order)",
    ]
    lines += ["  ".join(c.ljust(width[i]) for i, c in enumerate(row)) for row in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    stories = generate(args.users, args.seed)
    say(args, f"[{NAME}] {len(stories)} users, with validity")
    started = time.perf_counter()
    engine = asyncio.run(run(stories, supersession=True))
    say(args, f"[{NAME}] baseline: the same engine with supersession off")
    baseline = asyncio.run(run(stories, supersession=False))
    results: dict[str, Any] = {
        "argv": list(sys.argv[1:] if argv is None else argv),
        "users": len(stories),
        "seed": args.seed,
        "out_of_order_users": sum(s.out_of_order for s in stories),
        "seconds": round(time.perf_counter() - started, 2),
        "engine": engine.to_json(),
        "baseline": baseline.to_json(),
        "misses": engine.examples,
    }
    panels = [
        BarGroup(
            title="Questions about facts that changed",
            ylabel="share of questions",
            categories=["current as current", "past with interval"],
            values={
                "validity": [
                    results["engine"]["current_presented_as_current"] or 0.0,
                    results["engine"]["past_found_with_interval"] or 0.0,
                ],
                "baseline": [
                    results["baseline"]["current_presented_as_current"] or 0.0,
                    results["baseline"]["past_found_with_interval"] or 0.0,
                ],
            },
        )
    ]
    publish(args, NAME, results, render(results), argv=argv, panels=panels)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
