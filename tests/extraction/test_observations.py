"""Every N messages an observation; every M observations a reflection that supersedes the
previous one; ``get_context`` returns the three tiers."""

from __future__ import annotations

import re
from collections.abc import Sequence

from backends.sqlite import SQLiteBackend
from nams_local.backend import MemoryBackend
from nams_local.extraction import ExtractiveSummariser, RuleExtractor
from nams_local.integrations import LLMSummariser, ScriptedChatModel
from nams_local.models import NewMessage

CHAT = [
    ("user", "Hi, my name is Alex."),
    ("assistant", "Nice to meet you, Alex!"),
    ("user", "I work at TechCorp as a data engineer."),
    ("assistant", "Data engineering at TechCorp sounds fun."),
    ("user", "I live in Bangalore with my sister Priya."),
    ("assistant", "Bangalore is lovely this time of year."),
    ("user", "lol yes"),
    ("assistant", "Anything else I can help with?"),
    ("user", "I use Neovim and Python every day."),
    ("assistant", "Great tools."),
]


async def _chat(backend: MemoryBackend, rounds: int) -> tuple[str, list[str]]:
    conv = await backend.create_conversation(user_id="alex")
    ids: list[str] = []
    for _ in range(rounds):
        stored = await backend.add_messages(
            conv.id, [NewMessage(role=r, content=c) for r, c in CHAT]
        )
        ids += [m.id for m in stored]
    return conv.id, ids


async def test_an_observation_every_ten_messages(backend: MemoryBackend) -> None:
    conv = await backend.create_conversation(user_id="alex")
    for role, content in CHAT[:9]:
        await backend.add_message(conv.id, role, content)
    assert await backend.list_observations(conv.id) == []
    last = await backend.add_message(conv.id, *CHAT[9])
    [observation] = await backend.list_observations(conv.id)
    messages = await backend.list_messages(conv.id)
    assert observation.source_msg_ids == [m.id for m in reversed(messages)]
    assert observation.source_msg_ids[-1] == last.id
    text = observation.content
    assert "TechCorp" in text and "Bangalore" in text  # salient sentences kept verbatim
    assert "lol yes" not in text  # filler is not
    assert "Facts:" in text and "Alex WORKS_AT TechCorp" in text


async def test_reflections_supersede_each_other(backend: MemoryBackend) -> None:
    conv_id, _ = await _chat(backend, 6)  # 60 messages: 6 observations, 2 reflections
    observations = await backend.list_observations(conv_id)
    assert len(observations) == 6
    reflections = await backend.list_reflections(conv_id)
    assert len(reflections) == 2
    newest, oldest = reflections
    assert oldest.superseded_by_id == newest.id and newest.superseded_by_id is None
    oldest_first = list(reversed(observations))
    assert oldest.source_obs_ids == [o.id for o in oldest_first[:3]]
    assert newest.source_obs_ids == [o.id for o in oldest_first[3:]]
    context = await backend.get_context(conv_id)
    assert [r.id for r in context.reflections] == [newest.id]
    assert len(context.observations) == 6 and len(context.recent_messages) == 20


async def test_summary_cadence_is_configurable() -> None:
    async with SQLiteBackend(
        ":memory:", embeddings=False, observation_every=2, reflection_every=2
    ) as engine:
        conv_id, ids = await _chat(engine, 1)
        observations = await engine.list_observations(conv_id)
        assert len(observations) == 5
        assert observations[-1].source_msg_ids == ids[:2]
        assert len(await engine.list_reflections(conv_id)) == 2


class Recorder:
    """Captures what the engine asks a summariser for."""

    def __init__(self) -> None:
        self.observed: list[list[tuple[str, str]]] = []
        self.reflected: list[tuple[list[str], str | None]] = []

    async def observe(self, messages: Sequence[tuple[str, str]]) -> str:
        self.observed.append(list(messages))
        return f"obs{len(self.observed)}"

    async def reflect(self, observations: Sequence[str], previous: str | None) -> str:
        self.reflected.append((list(observations), previous))
        return f"refl{len(self.reflected)}"


async def test_the_summariser_gets_the_messages_and_the_previous_reflection() -> None:
    recorder = Recorder()
    async with SQLiteBackend(":memory:", embeddings=False, summariser=recorder) as engine:
        conv = await engine.create_conversation()
        await engine.add_message(conv.id, "system", "Be brief.")  # not summarised
        await engine.add_messages(
            conv.id,
            [NewMessage(role=r, content=c) for r, c in CHAT * 6],
        )
    assert recorder.observed[0] == CHAT
    assert recorder.reflected == [
        (["obs1", "obs2", "obs3"], None),
        (["obs4", "obs5", "obs6"], "refl1"),
    ]


async def test_a_model_summariser_writes_the_observation() -> None:
    model = ScriptedChatModel(["Alex, a data engineer at TechCorp, lives in Bangalore."])
    async with SQLiteBackend(
        ":memory:", embeddings=False, summariser=LLMSummariser(model)
    ) as engine:
        conv_id, _ = await _chat(engine, 1)
        [observation] = await engine.list_observations(conv_id)
    assert observation.content == "Alex, a data engineer at TechCorp, lives in Bangalore."
    prompt = str(model.calls[0].messages)
    assert "I work at TechCorp as a data engineer." in prompt


async def test_the_extractive_summariser_never_invents() -> None:
    summary = await ExtractiveSummariser(extractor=RuleExtractor()).observe(CHAT)
    kept, facts = summary.split(" Facts: ")
    sentences = [s.strip() for s in re.split(r"(?:User|Assistant): ", kept) if s.strip()]
    assert len(sentences) == 4
    assert all(any(s in content for _, content in CHAT) for s in sentences), sentences
    assert "Alex LIVES_IN Bangalore" in facts
