"""The official ``neo4j-agent-memory`` SDK's own framework integrations (0.8.0), pointed at
a real ``nams-local serve`` exactly as at hosted NAMS, with the frameworks' offline models.

What works against our server is pinned here: LangChain's chat history, retriever and
``create_agent`` middleware; the Agents SDK helper's messages, context and entity search;
pydantic-ai's dependency (context, saved interactions) and its NAMS tools (here
``cypher_query``). What does not work is the SDK refusing on the client side, for any NAMS
server: preferences (``NotSupportedError``: NAMS has no preference routes) and the
``search_memory`` tools that search messages without a conversation (NAMS search is
conversation-scoped). On NAMS a session id is a conversation id, so each test creates its
conversation first, as an SDK user on hosted NAMS must.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from neo4j_agent_memory import MemoryClient
from neo4j_agent_memory.core.exceptions import NotSupportedError
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.server.processes import ServeProcess
from tests.server.sdk_servers import keyed_server, sdk_settings

from .test_langchain import _chat

KEY = "nams_sdk_integrations_key"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    with keyed_server(tmp_path_factory.mktemp("sdk-integrations"), KEY) as process:
        yield process


@pytest.fixture
async def client(served: ServeProcess) -> AsyncIterator[MemoryClient]:
    async with MemoryClient(sdk_settings(served, KEY)) as connected:
        yield connected


async def _conversation(client: MemoryClient, name: str) -> str:
    created = await client.short_term.create_conversation(name, user_identifier="alice")
    return str(created.id)


async def test_langchain_history_and_retriever(client: MemoryClient) -> None:
    from neo4j_agent_memory.integrations.langchain import (
        Neo4jAgentMemory,
        Neo4jMemoryRetriever,
    )

    session = await _conversation(client, "lc-history")
    history = Neo4jAgentMemory(memory_client=client, session_id=session)
    await history.aadd_messages([HumanMessage("I love oolong tea"), AIMessage("Noted")])
    read = await history.aget_messages()
    assert [(type(m).__name__, m.text) for m in read] == [
        ("HumanMessage", "I love oolong tea"),
        ("AIMessage", "Noted"),
    ]
    retriever = Neo4jMemoryRetriever(memory_client=client, session_id=session, threshold=0.0)
    documents = await retriever.ainvoke("oolong")
    assert [d.page_content for d in documents] == ["I love oolong tea"]
    await history.aclear()
    with pytest.raises(Exception, match="not found"):
        await history.aget_messages()


async def test_langchain_middleware_in_create_agent(client: MemoryClient, tmp_path: Path) -> None:
    from neo4j_agent_memory.integrations.langchain import Neo4jMemoryMiddleware

    session = await _conversation(client, "lc-agent")
    for prompt, answer in (("I like green tea", "Noted."), ("What do I like?", "Green tea.")):
        model = _chat(answer)
        middleware = Neo4jMemoryMiddleware(client, session, extract_entities=False)
        agent = create_agent(model, middleware=[middleware])
        result = await agent.ainvoke({"messages": [{"role": "user", "content": prompt}]})
        assert result["messages"][-1].text == answer
    system = [m.text for m in model.seen[0] if isinstance(m, SystemMessage)]
    assert any("I like green tea" in text for text in system)  # memory came back from us
    stored = await client.short_term.get_conversation(session)
    assert [(m.role.value, m.content) for m in stored.messages] == [
        ("user", "I like green tea"),
        ("assistant", "Noted."),
        ("user", "What do I like?"),
        ("assistant", "Green tea."),
    ]


async def test_openai_agents_helper(client: MemoryClient) -> None:
    from neo4j_agent_memory.integrations.openai_agents.memory import (
        Neo4jOpenAIMemory,
        execute_memory_tool,
    )

    session = await _conversation(client, "oa")
    memory = Neo4jOpenAIMemory(memory_client=client, session_id=session, user_id="alice")
    await memory.save_message("user", "My dog is called Rex")
    assert await memory.get_conversation(limit=10) == [
        {"role": "user", "content": "My dog is called Rex"}
    ]
    assert "[user] My dog is called Rex" in await memory.get_context("dog")
    assert await execute_memory_tool(memory, "search_entities", {"query": "Rex"}) == (
        '{"entities": []}'
    )
    with pytest.raises(NotSupportedError, match="preferences"):  # the SDK refuses, not us
        await memory.search("Rex")
    await memory.clear_session()


async def test_pydantic_ai_dependency_and_nams_tools(client: MemoryClient) -> None:
    from neo4j_agent_memory.integrations.pydantic_ai import MemoryDependency, nams_memory_tools

    session = await _conversation(client, "pa")
    dependency = MemoryDependency(client=client, session_id=session)
    await dependency.save_interaction("I play jazz piano", "Lovely.")
    assert "I play jazz piano" in await dependency.get_context("jazz")
    tools: list[Any] = nams_memory_tools(client)

    def ask(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            cypher = "MATCH (e:Entity) RETURN count(e) AS entities"
            return ModelResponse(parts=[ToolCallPart("cypher_query", {"query": cypher})])
        return ModelResponse(parts=[TextPart(str(getattr(messages[-1].parts[0], "content", "")))])

    result = await Agent(FunctionModel(ask), tools=tools).run("how many entities?")
    assert "entities" in result.output and "0" in result.output
