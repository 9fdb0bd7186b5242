"""Deterministic synthetic workload shared by the benchmarks: chat turns, entities, queries.

Everything comes from one seeded ``random.Random`` and the small word lists below, so two
runs with the same seed and sizes produce byte-identical workloads, and search has real
signal: messages, entities and queries all draw on the same names, places, tools and topics.
No external data is read.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

__all__ = [
    "ENTITY_TYPES",
    "ConversationSpec",
    "EntitySpec",
    "RelationshipSpec",
    "StepSpec",
    "Turn",
    "Workload",
    "chunks",
    "count_tokens",
    "distinct_queries",
    "draw_slots",
    "entity_specs",
    "fill_template",
    "generate",
    "reasoning_steps",
    "relationships",
]

FIRST_NAMES = (
    "Alice", "Bruno", "Chen", "Dana", "Elif", "Farid", "Grace", "Hiro", "Ines", "Jonas",
    "Kemi", "Lars", "Maya", "Nico", "Olga", "Priya", "Quinn", "Rosa", "Sven", "Tara",
    "Umar", "Vera", "Wen", "Ximena", "Yusuf", "Zoe", "Amara", "Boris", "Carla", "Dev",
)  # fmt: skip
LAST_NAMES = (
    "Okafor", "Lindqvist", "Tanaka", "Moreau", "Schmidt", "Kowalski", "Haddad", "Rossi",
    "Nakamura", "Fischer", "Silva", "Novak", "Ahmed", "Jensen", "Park", "Dubois",
    "Costa", "Ivanova", "Murphy", "Keller", "Sato", "Brennan", "Mendes", "Weber",
)  # fmt: skip
PLACES = (
    "Lisbon", "Berlin", "Kyoto", "Oslo", "Nairobi", "Montreal", "Barcelona", "Seoul",
    "Vienna", "Lima", "Reykjavik", "Hanoi", "Porto", "Dublin", "Marrakesh", "Tallinn",
    "Melbourne", "Copenhagen", "Istanbul", "Vancouver", "Prague", "Cape Town", "Osaka",
    "Edinburgh",
)  # fmt: skip
ORGS = (
    "Northwind", "Globex", "Initech", "Umbrella Labs", "Hooli", "Stark Analytics",
    "Acme Robotics", "Blue Harbor", "Vandelay Imports", "Cyberdyne", "Tyrell Systems",
    "Wayne Logistics", "Soylent Foods", "Pied Piper", "Monarch Health", "Oceanic Air",
)  # fmt: skip
TOOLS = (
    "PostgreSQL", "Kubernetes", "Terraform", "React", "Rust", "Python", "Kafka", "Redis",
    "Grafana", "Docker", "GraphQL", "Airflow", "Spark", "TypeScript", "Neo4j", "SQLite",
    "Jenkins", "Elasticsearch", "FastAPI", "Prometheus", "Svelte", "Django", "Ansible",
    "Snowflake",
)  # fmt: skip
FOODS = (
    "ramen", "paella", "sourdough", "tacos", "pho", "risotto", "dumplings", "falafel",
    "sushi", "curry", "pierogi", "shakshuka", "lasagna", "bibimbap", "ceviche", "croissants",
    "gnocchi", "empanadas",
)  # fmt: skip
HOBBIES = (
    "bouldering", "sailing", "chess", "pottery", "trail running", "birdwatching",
    "photography", "woodworking", "salsa dancing", "gardening", "cycling", "knitting",
    "surfing", "astronomy", "calligraphy", "kayaking",
)  # fmt: skip
ROLES = (
    "engineer", "designer", "product manager", "data scientist", "recruiter", "architect",
    "analyst", "team lead", "researcher", "consultant",
)  # fmt: skip
PROJECTS = (
    "the billing migration", "the mobile launch", "the search revamp", "the data platform",
    "the onboarding flow", "the pricing experiment", "the audit", "the Q3 roadmap",
    "the latency project", "the partner integration",
)  # fmt: skip
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "the weekend", "next week")
CONCEPTS = (
    "event sourcing", "zero trust", "vector search", "feature flags", "technical debt",
    "chaos engineering", "dark launches", "data mesh", "rate limiting", "blue green deploys",
    "consensus", "observability", "backpressure", "idempotency", "sharding", "caching",
)  # fmt: skip
AREAS = (
    "Old Town", "Harbour", "North", "Central", "Airport", "Station", "Riverside", "Market",
    "University", "Docks", "Hills", "West End",
)  # fmt: skip
TOOL_PARTS = (
    "Cloud", "Operator", "CLI", "Cluster", "Gateway", "Exporter", "Proxy", "SDK", "Agent",
    "Dashboard", "Plugin", "Runner",
)  # fmt: skip

ENTITY_TYPES = ("Person", "Organization", "Location", "Tool", "Concept")
TOPICS = ("work", "places", "food", "hobbies", "tools", "people")

# Sentences per topic and speaker. Slots: {person} {person2} {full} {place} {org} {tool}
# {tool2} {food} {hobby} {role} {project} {day} {concept}.
USER_SENTENCES: dict[str, tuple[str, ...]] = {
    "work": (
        "I have a review with {person} from {org} on {day} about {project}.",
        "Can you help me plan the next steps for {project} before {day}?",
        "My manager wants {project} finished early, and I think the estimate is too tight.",
        "{person} asked me whether we could move {project} to {tool} this quarter.",
        "We are hiring a {role} for the {place} office and I am on the panel.",
        "Remind me what {person2} said about the budget for {project}.",
    ),
    "places": (
        "I am flying to {place} on {day} for a conference hosted by {org}.",
        "What neighbourhoods in {place} are worth walking around in the evening?",
        "Last time I was in {place} it rained every day, so I want an indoor plan too.",
        "{person} recommended a small hotel near the old town in {place}.",
        "Is it easy to get from the airport in {place} to the city centre by train?",
    ),
    "food": (
        "I want to cook {food} for six people on {day}, and one of them is vegetarian.",
        "{person} keeps talking about a place in {place} that makes amazing {food}.",
        "My {food} always comes out too salty; what am I doing wrong?",
        "Can you suggest a side dish that goes well with {food}?",
        "I am trying to eat less sugar but I still crave {food} after work.",
    ),
    "hobbies": (
        "I started {hobby} last month with {person} and I am hooked.",
        "Is there a good spot for {hobby} near {place}?",
        "I want to get better at {hobby} without buying expensive gear.",
        "{person2} invited me to a {hobby} group that meets on {day}.",
        "How many hours a week should a beginner spend on {hobby}?",
    ),
    "tools": (
        "Our {tool} cluster keeps running out of memory during the nightly jobs.",
        "Should we use {tool} or {tool2} for the new service?",
        "I am getting a timeout when {tool} talks to {tool2} in staging.",
        "{person} wrote a migration script for {tool} but nobody reviewed it yet.",
        "How do I explain {concept} to a team that mostly uses {tool}?",
        "We upgraded {tool} yesterday and the dashboards in {tool2} look wrong.",
    ),
    "people": (
        "{full} is joining our team as a {role} from {org}.",
        "I need to give {person} some difficult feedback about {project}.",
        "{person} and {person2} disagree about {concept} and I am stuck in the middle.",
        "It is {person}'s birthday on {day}; any gift ideas for someone who loves {hobby}?",
        "{person} moved to {place} and I want to stay in touch.",
    ),
}
ASSISTANT_SENTENCES: dict[str, tuple[str, ...]] = {
    "work": (
        "Start by listing what {project} still needs and who owns each piece.",
        "Before the meeting with {person}, write down the two decisions you need from {org}.",
        "If the estimate feels tight, propose a smaller first milestone for {project}.",
        "A short written summary sent on {day} will make the review with {person} easier.",
        "Moving to {tool} is reasonable if the team already knows {tool2}.",
    ),
    "places": (
        "In {place}, the areas around the main market are lively in the evening.",
        "Public transport in {place} is reliable, and a day pass usually pays off.",
        "For a rainy day in {place}, museums and covered markets are a safe bet.",
        "Book the hotel in {place} early, because conferences fill the centre quickly.",
    ),
    "food": (
        "For {food}, taste as you go and add salt only at the end.",
        "A fresh green salad or roasted vegetables pair well with {food}.",
        "You can make a vegetarian version of {food} by swapping the stock and the protein.",
        "If you crave {food}, try a smaller portion after a proper dinner.",
    ),
    "hobbies": (
        "For {hobby}, consistency matters more than gear; two short sessions a week is fine.",
        "Local clubs near {place} often lend equipment for {hobby} to beginners.",
        "Going with {person} is a great way to stay motivated with {hobby}.",
        "Track one small goal for {hobby} each month so progress stays visible.",
    ),
    "tools": (
        "Check the memory limits of {tool} and look for a job that loads everything at once.",
        "{tool} is the simpler choice unless you need what {tool2} does best.",
        "A timeout between {tool} and {tool2} is often DNS or a connection pool limit.",
        "Explain {concept} with one concrete incident the team remembers.",
        "Ask {person} to pair on the {tool} review so the migration gets a second pair of eyes.",
    ),
    "people": (
        "Give {person} feedback about {project} in private and focus on specific examples.",
        "Welcome {full} with a short plan for their first two weeks.",
        "When {person} and {person2} disagree, ask each to write down the trade-off they see.",
        "A gift connected to {hobby} shows you listened; something small is enough.",
    ),
}
ENTITY_DESCRIPTIONS: dict[str, tuple[str, ...]] = {
    "Person": (
        "{role} at {org}, based in {place}, works mostly with {tool}.",
        "Colleague from {org} who leads {project} and enjoys {hobby}.",
        "Friend from {place} who loves {food} and {hobby}.",
    ),
    "Organization": (
        "Company headquartered in {place} that runs its platform on {tool}.",
        "Client working with us on {project}; main contact is {full}.",
        "Partner organisation with an office in {place}, known for {concept}.",
    ),
    "Location": (
        "City the user visited for a conference hosted by {org}.",
        "Place where {full} lives; known for {food} and {hobby}.",
        "Office location of {org}, close to the old town.",
    ),
    "Tool": (
        "Technology used by the team for {project}, often paired with {tool2}.",
        "Infrastructure component that {full} maintains at {org}.",
        "Tool the user is evaluating against {tool2} for a new service.",
    ),
    "Concept": (
        "Engineering practice discussed with {full} during {project}.",
        "Idea the team at {org} adopted after an incident in {tool}.",
        "Design principle the user wants to explain to colleagues who use {tool}.",
    ),
}
QUERY_TEMPLATES: tuple[str, ...] = (
    "what did {person} say about {project}",
    "{tool} memory problems in the nightly jobs",
    "{tool} or {tool2} for a new service",
    "timeout between {tool} and {tool2}",
    "trip to {place} for the {org} conference",
    "restaurants in {place} that serve {food}",
    "how to cook {food} for a vegetarian guest",
    "{hobby} spots near {place}",
    "getting better at {hobby} with {person}",
    "feedback for {person} on {project}",
    "{full} joining as a {role}",
    "{person} and {person2} disagree about {concept}",
    "explaining {concept} to a {tool} team",
    "meeting with {person} from {org} on {day}",
    "birthday gift for {person} who likes {hobby}",
    "{role} hiring in {place}",
    "{org} office in {place}",
    "who works with {tool} at {org}",
    "{concept} and {tool2} at {org}",
    "{food} and {hobby} in {place}",
)

_SLOT = re.compile(r"\{(\w+)\}")
_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)
MIN_TOKENS = 20
MAX_TOKENS = 60


def count_tokens(text: str) -> int:
    """Words and punctuation marks (the engine's own tokenizer-free estimate)."""
    return len(_TOKEN.findall(text))


@dataclass(frozen=True, slots=True)
class Turn:
    role: str
    content: str


@dataclass(frozen=True, slots=True)
class ConversationSpec:
    user_id: str
    topic: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class EntitySpec:
    name: str
    type: str
    description: str


@dataclass(frozen=True, slots=True)
class Workload:
    conversations: tuple[ConversationSpec, ...]
    entities: tuple[EntitySpec, ...]
    users: int
    seed: int

    @property
    def message_count(self) -> int:
        return sum(len(conv.turns) for conv in self.conversations)

    def messages(self) -> Iterator[Turn]:
        for conv in self.conversations:
            yield from conv.turns


def draw_slots(rng: random.Random) -> dict[str, str]:
    first, second = rng.sample(FIRST_NAMES, 2)
    tool, tool2 = rng.sample(TOOLS, 2)
    return {
        "person": first,
        "person2": second,
        "full": f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}",
        "place": rng.choice(PLACES),
        "org": rng.choice(ORGS),
        "tool": tool,
        "tool2": tool2,
        "food": rng.choice(FOODS),
        "hobby": rng.choice(HOBBIES),
        "role": rng.choice(ROLES),
        "project": rng.choice(PROJECTS),
        "day": rng.choice(DAYS),
        "concept": rng.choice(CONCEPTS),
    }


def fill_template(template: str, slots: dict[str, str]) -> str:
    return _SLOT.sub(lambda m: slots[m.group(1)], template)


def _turn_text(rng: random.Random, sentences: Sequence[str], slots: dict[str, str]) -> str:
    """Sentences of one topic until the turn has 20 to 60 tokens (when the templates allow)."""
    target = rng.randint(MIN_TOKENS, MAX_TOKENS)
    parts: list[str] = []
    tokens = 0
    for template in rng.sample(list(sentences), len(sentences)):
        sentence = fill_template(template, slots)
        n = count_tokens(sentence)
        if tokens >= MIN_TOKENS and tokens + n > MAX_TOKENS:
            break
        parts.append(sentence)
        tokens += n
        if tokens >= target:
            break
    return " ".join(parts)


def _conversation(rng: random.Random, user_id: str, n_turns: int) -> ConversationSpec:
    topic = rng.choice(TOPICS)
    slots = draw_slots(rng)  # a conversation keeps its cast, so its turns are about one thing
    turns: list[Turn] = []
    for i in range(n_turns):
        if i and rng.random() < 0.15:  # drift now and then: a new person, place or tool
            slots = {**slots, **{k: v for k, v in draw_slots(rng).items() if rng.random() < 0.3}}
        if i % 2 == 0:
            turns.append(Turn("user", _turn_text(rng, USER_SENTENCES[topic], slots)))
        else:
            turns.append(Turn("assistant", _turn_text(rng, ASSISTANT_SENTENCES[topic], slots)))
    return ConversationSpec(user_id=user_id, topic=topic, turns=tuple(turns))


def _entity_name(rng: random.Random, type_: str) -> str:
    if type_ == "Person":
        return f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
    if type_ == "Organization":
        suffix = rng.choice(("", " Group", " Labs", " Partners", " Studio", " Foundation"))
        return f"{rng.choice(ORGS)}{suffix} {rng.choice(PLACES)}"
    if type_ == "Location":
        return f"{rng.choice(PLACES)} {rng.choice(AREAS)}"
    if type_ == "Tool":
        return f"{rng.choice(TOOLS)} {rng.choice(TOOL_PARTS)}"
    return f"{rng.choice(CONCEPTS).capitalize()} for {rng.choice(TOOLS)}"


def entity_specs(rng: random.Random, n: int) -> tuple[EntitySpec, ...]:
    """``n`` entities cycling through the types; names are unique."""
    out: list[EntitySpec] = []
    names: set[str] = set()
    for i in range(n):
        type_ = ENTITY_TYPES[i % len(ENTITY_TYPES)]
        name = _entity_name(rng, type_)
        for _ in range(20):
            if name not in names:
                break
            name = _entity_name(rng, type_)
        if name in names:  # the vocabulary ran out for this type
            name = f"{name} {i}"
        names.add(name)
        description = fill_template(rng.choice(ENTITY_DESCRIPTIONS[type_]), draw_slots(rng))
        out.append(EntitySpec(name, type_, description))
    return tuple(out)


def generate(
    *,
    users: int,
    conversations_per_user: int,
    messages: int,
    entities: int,
    seed: int,
) -> Workload:
    """``messages`` turns spread evenly over ``users * conversations_per_user`` conversations.

    Each conversation alternates user / assistant turns starting with the user; the first
    ``messages % conversations`` conversations get one turn more than the rest.
    """
    if users < 1 or conversations_per_user < 1:
        raise ValueError("users and conversations_per_user must be at least 1")
    if messages < 0 or entities < 0:
        raise ValueError("messages and entities must not be negative")
    rng = random.Random(seed)
    n_convs = users * conversations_per_user
    base, extra = divmod(messages, n_convs)
    convs: list[ConversationSpec] = []
    for index in range(n_convs):
        user_id = f"user-{index // conversations_per_user:04d}"
        n_turns = base + (1 if index < extra else 0)
        convs.append(_conversation(rng, user_id, n_turns))
    return Workload(
        conversations=tuple(convs),
        entities=entity_specs(rng, entities),
        users=users,
        seed=seed,
    )


def distinct_queries(rng: random.Random, n: int, seen: set[str]) -> list[str]:
    """``n`` query strings from the workload vocabulary, none of them in ``seen``.

    Every string returned is added to ``seen``, so repeated calls never repeat a query (an
    embedder's query cache would otherwise make the repeats look cheaper than they are).
    """
    out: list[str] = []
    attempts = 0
    while len(out) < n:
        attempts += 1
        query = fill_template(rng.choice(QUERY_TEMPLATES), draw_slots(rng))
        if query in seen and attempts > 50 * (n + 1):  # vocabulary exhausted: disambiguate
            query = f"{query} ({len(seen)})"
        if query in seen:
            continue
        seen.add(query)
        out.append(query)
    return out


def chunks(items: Sequence[Turn], size: int) -> Iterator[Sequence[Turn]]:
    """Consecutive slices of at most ``size`` items."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


# -- graph edges and reasoning steps (used by the ``turn`` benchmark) ----------------------
@dataclass(frozen=True, slots=True)
class RelationshipSpec:
    """An edge between two entities, by their index in ``Workload.entities``."""

    source: int
    target: int
    type: str


@dataclass(frozen=True, slots=True)
class StepSpec:
    reasoning: str
    action_taken: str
    result: str | None


#: Relationship type by (source type, target type); other pairs are ``RELATED_TO``.
RELATIONSHIP_TYPES: dict[tuple[str, str], str] = {
    ("Person", "Person"): "KNOWS",
    ("Person", "Organization"): "WORKS_AT",
    ("Person", "Location"): "LIVES_IN",
    ("Person", "Tool"): "USES",
    ("Person", "Concept"): "ADVOCATES",
    ("Organization", "Location"): "LOCATED_IN",
    ("Organization", "Tool"): "RUNS_ON",
    ("Organization", "Organization"): "PARTNERS_WITH",
    ("Tool", "Tool"): "INTEGRATES_WITH",
    ("Tool", "Concept"): "SUPPORTS",
    ("Concept", "Tool"): "APPLIES_TO",
}
REASONING_SENTENCES: tuple[str, ...] = (
    "The user asked about {project}; answered from what {person} said earlier about {org}.",
    "Recommended {tool} over {tool2} because the team already runs {tool} in production.",
    "Suggested spots in {place} for {hobby}, since {person} goes there on {day}.",
    "Explained how to cook {food} for a vegetarian guest with what is already at home.",
    "Framed {concept} around the last {tool} incident so the team sees why it matters.",
    "Proposed a smaller first milestone for {project} because the estimate looked too tight.",
    "Reminded the user that {full} joins as a {role} from {org} and needs an onboarding plan.",
    "Answered that the timeout between {tool} and {tool2} is most likely a pool limit.",
)
#: Every third step is a tool call (retrieval keeps only ``direct response`` steps).
STEP_ACTIONS = ("direct response", "direct response", "search_memory tool call")


def relationships(
    rng: random.Random, entities: Sequence[EntitySpec], per_entity: int
) -> tuple[RelationshipSpec, ...]:
    """``per_entity`` outgoing edges from every entity to distinct other entities."""
    n = len(entities)
    if n < 2 or per_entity < 1:
        return ()
    out: list[RelationshipSpec] = []
    for source, spec in enumerate(entities):
        targets: list[int] = []
        while len(targets) < min(per_entity, n - 1):  # rejection sampling: O(per_entity)
            target = rng.randrange(n)
            if target != source and target not in targets:
                targets.append(target)
        for target in targets:
            kind = RELATIONSHIP_TYPES.get((spec.type, entities[target].type), "RELATED_TO")
            out.append(RelationshipSpec(source, target, kind))
    return tuple(out)


def reasoning_steps(rng: random.Random, n: int) -> tuple[StepSpec, ...]:
    """``n`` reasoning steps of one conversation, actions cycling through ``STEP_ACTIONS``."""
    slots = draw_slots(rng)
    out: list[StepSpec] = []
    for i in range(n):
        action = STEP_ACTIONS[i % len(STEP_ACTIONS)]
        reasoning = fill_template(rng.choice(REASONING_SENTENCES), slots)
        result = None if action == "direct response" else "3 memories found"
        out.append(StepSpec(reasoning, action, result))
    return tuple(out)
