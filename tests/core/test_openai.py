"""The real ``openai`` client, with memory, against an OpenAI-compatible server on loopback."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import openai
import pytest

from backends.sqlite import SQLiteBackend
from nams_local.integrations import (
    OpenAIChatModel,
    ScriptedChatModel,
    create_nams,
    create_nams_provider,
    wrap_openai,
)
from nams_local.memory_block import HEADER
from nams_local.scope import Scope
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.recording_logger import RecordingLogger


@pytest.fixture
async def seeded() -> AsyncIterator[tuple[SQLiteBackend, str]]:
    async with SQLiteBackend(":memory:", embeddings=False) as engine:
        conv = await engine.create_conversation("alex")
        await engine.add_message(conv.id, "user", "I live in Bangalore with my cat Miso")
        yield engine, conv.id


def _last_user(request: dict[str, Any]) -> str:
    users = [m for m in request["messages"] if m["role"] == "user"]
    content = users[-1]["content"]
    return content if isinstance(content, str) else json.dumps(content)


async def _stored(engine: SQLiteBackend, conv: str) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in reversed(await engine.list_messages(conv))]


async def test_async_client_create_has_memory(
    seeded: tuple[SQLiteBackend, str], logger: RecordingLogger
) -> None:
    engine, conv = seeded
    with FakeOpenAI([Reply(text="Your cat is Miso.")]) as fake:
        client = openai.AsyncOpenAI(api_key="test", base_url=fake.base_url)
        wrapped = wrap_openai(client, scope={"user_id": "alex"}, backend=engine, logger=logger)
        completion = await wrapped.chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "What is my cat called?"}]
        )
        await client.close()
    assert isinstance(completion, openai.types.chat.ChatCompletion)
    assert completion.choices[0].message.content == "Your cat is Miso."
    sent = _last_user(fake.requests[0])
    assert sent.startswith(HEADER) and "cat Miso" in sent
    assert fake.requests[0]["model"] == "fake-model"
    assert (await _stored(engine, conv))[-2:] == [
        ("user", "What is my cat called?"),
        ("assistant", "Your cat is Miso."),
    ]
    assert logger.records == []


async def test_async_stream_persists_after_the_last_chunk(
    seeded: tuple[SQLiteBackend, str],
) -> None:
    engine, conv = seeded
    with FakeOpenAI([Reply(text="Bangalore, with Miso.")]) as fake:
        client = openai.AsyncOpenAI(api_key="test", base_url=fake.base_url)
        wrapped = wrap_openai(client, scope={"user_id": "alex"}, backend=engine)
        stream = await wrapped.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Where do I live?"}], stream=True
        )
        text = ""
        async for chunk in stream:
            assert isinstance(chunk, openai.types.chat.ChatCompletionChunk)
            if chunk.choices and chunk.choices[0].delta.content:
                text += chunk.choices[0].delta.content
        await client.close()
    assert text == "Bangalore, with Miso."
    assert (await _stored(engine, conv))[-1] == ("assistant", "Bangalore, with Miso.")


def test_sync_client_including_stream_and_tool_calls() -> None:
    engine = SQLiteBackend(":memory:", embeddings=False)
    replies = [
        Reply(tool_calls=[("call_9", "get_weather", '{"city": "Bangalore"}')]),
        Reply(text="It is sunny."),
        Reply(text="Streamed hello there."),
    ]
    with FakeOpenAI(replies) as fake:
        client = openai.OpenAI(api_key="test", base_url=fake.base_url)
        wrapped = wrap_openai(client, scope=Scope("sam"), backend=engine)
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Bangalore?"}]
        first = wrapped.chat.completions.create(model="m", messages=messages, tools=[_TOOL])
        call = first.choices[0].message.tool_calls[0]
        messages.append(first.choices[0].message.model_dump(exclude_none=True))
        messages.append({"role": "tool", "tool_call_id": call.id, "content": "sunny"})
        final = wrapped.chat.completions.create(model="m", messages=messages, tools=[_TOOL])
        streamed = wrapped.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Say hello"}], stream=True
        )
        text = "".join(c.choices[0].delta.content or "" for c in _iter(streamed) if c.choices)
        assert fake.requests[0]["tools"] == [_TOOL]
        client.close()

    async def stored() -> list[tuple[str, str]]:
        (conv,) = await engine.list_conversations(user_id="sam")
        return await _stored(engine, conv.id)

    rows = asyncio.run(stored())
    asyncio.run(engine.aclose())
    assert final.choices[0].message.content == "It is sunny."
    assert text == "Streamed hello there."
    assert rows == [
        ("user", "Weather in Bangalore?"),
        ("assistant", "It is sunny."),
        ("user", "Say hello"),
        ("assistant", "Streamed hello there."),
    ]


_TOOL = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}},
}


def _iter(stream: Any) -> Iterator[Any]:
    yield from stream


async def test_openai_chat_model_adapter_generate_and_stream_tool_calls() -> None:
    replies = [
        Reply(text="plain answer"),
        Reply(tool_calls=[("call_1", "lookup", '{"q": "tea"}'), ("call_2", "other", "{}")]),
    ]
    with FakeOpenAI(replies) as fake:
        client = openai.AsyncOpenAI(api_key="test", base_url=fake.base_url)
        model = OpenAIChatModel(client, "m", temperature=0)
        response = await model.generate([{"role": "user", "content": "hi"}])
        chunks = [c async for c in model.stream([{"role": "user", "content": "go"}])]
        await client.close()
    assert response.text == "plain answer"
    assert fake.requests[0]["temperature"] == 0
    calls = [c.tool_call for c in chunks if c.tool_call is not None]
    assert [(c.id, c.name, c.parsed_arguments()) for c in calls] == [
        ("call_1", "lookup", {"q": "tea"}),
        ("call_2", "other", {}),
    ]
    assert chunks[-1].finish_reason == "tool_calls"


async def test_provider_mode_is_one_changed_line(seeded: tuple[SQLiteBackend, str]) -> None:
    engine, conv = seeded
    scripted = ScriptedChatModel(["Miso is your cat."])
    models: dict[str, ScriptedChatModel] = {"gpt-test": scripted}
    provider = create_nams_provider(
        base_provider=models.__getitem__, scope={"user_id": "alex"}, backend=engine
    )
    model = provider.language_model("gpt-test")
    await model.generate([{"role": "user", "content": "my cat?"}])
    assert scripted.calls[0].last_user_text.startswith(HEADER)
    assert (await _stored(engine, conv))[-1] == ("assistant", "Miso is your cat.")
    assert provider.language_model("gpt-test") is not model  # own caches per call


async def test_create_nams_rejects_unknown_options(seeded: tuple[SQLiteBackend, str]) -> None:
    engine, _ = seeded
    with pytest.raises(TypeError, match="max_memorie"):
        create_nams(engine, max_memorie=3)
