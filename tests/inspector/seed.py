"""A workspace worth inspecting, written through ``/v1`` with the real hosted client.

Messages go through the engine's extraction (the server runs it synchronously in these
tests), so the entities, relationships and provenance are the engine's own; two
near-duplicate organisations ("Acme Corp" and "Acme Corporation") are there to merge, and
stored text carries script tags to prove the pages show it as text.
"""

from __future__ import annotations

from dataclasses import dataclass

from backends.hosted import HostedBackend
from nams_local.models import Entity

__all__ = ["XSS_ENTITY", "XSS_MESSAGE", "Seeded", "entity_named", "seed"]

#: Would set ``window.__xssMessage`` and the title if a page ever ran it.
XSS_MESSAGE = "<script>window.__xssMessage = 1; document.title = 'pwned'</script> hello"
#: An entity name that would do the same from every page that names it.
XSS_ENTITY = '<img src=x onerror="window.__xssEntity = 1"><script>window.__xssEntity = 1</script>'


@dataclass(frozen=True)
class Seeded:
    conversation_id: str
    first_message_id: str
    xss_entity_id: str


async def entity_named(client: HostedBackend, name: str) -> Entity:
    for entity in await client.list_entities():
        if entity.name == name:
            return entity
    raise AssertionError(f"no entity named {name!r}")


async def seed(client: HostedBackend) -> Seeded:
    conversation = await client.create_conversation(user_id="alice", metadata={"app": "demo"})
    first = await client.add_message(
        conversation.id,
        "user",
        "Hi, I'm Alice Smith. I work at Acme Corp and I live in Berlin.",
    )
    await client.add_message(
        conversation.id, "user", "My colleague Bob Jones works at Acme Corporation too."
    )
    # A fact that changes: LIVES_IN Berlin ends (kept for the past), LIVES_IN Potsdam holds.
    await client.add_message(
        conversation.id, "user", "I moved to Potsdam last month. I now live in Potsdam."
    )
    await client.add_message(conversation.id, "assistant", XSS_MESSAGE)
    step = await client.record_step(
        conversation.id,
        "The user said where she works; look up the company.",
        "search_company",
        "Acme Corp is in Berlin",
    )
    await client.record_tool_call(
        "company_lookup", '{"name": "Acme Corp"}', '{"city": "Berlin"}', "success", step.id, 12
    )
    xss = await client.add_entity(XSS_ENTITY, "person", "says <b>hi</b>")
    return Seeded(conversation.id, first.id, xss.id)
