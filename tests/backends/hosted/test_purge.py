"""The hosted client's ``purge_user`` against a real ``nams-local serve`` (the wire
contract): through the server's purge route when it advertises ``userPurge``, and through
the contract's conversation routes — reporting what those cannot delete — when it does
not (a client configured with hosted NAMS's capabilities, as toward the real service)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from backends.hosted import HostedBackend
from backends.hosted.capabilities import HOSTED_CAPABILITIES
from backends.hosted.purge import CONTRACT_LEFTOVERS
from tests.server.processes import serve_process

ALICE, BOB = "alice-zebrafish7731", "bob-otter5512"


async def _seed(backend: HostedBackend, user: str, text: str) -> str:
    conv = await backend.create_conversation(user)
    await backend.add_message(conv.id, "user", text)
    await backend.record_step(conv.id, f"{user} reasoning", f"{user} action")
    return conv.id


async def _scenario(endpoint: str) -> None:
    one = HostedBackend("k1", endpoint=endpoint)
    two = HostedBackend("k2", endpoint=endpoint)
    as_hosted = HostedBackend("k1", endpoint=endpoint, capabilities=HOSTED_CAPABILITIES)
    try:
        await _seed(one, ALICE, "I work at Zebrafish7731corp.")
        bobs = await _seed(one, BOB, "I work at Otter5512works.")
        theirs = await _seed(two, ALICE, "Another workspace's Alice.")

        report = await one.purge_user(ALICE)  # the server's route: everything, compacted
        assert report.complete and report.compacted
        assert report.deleted["conversations"] == 1 and report.deleted["messages"] == 1
        assert report.deleted["entities"] >= 1
        assert await one.list_conversations(ALICE) == []
        assert [c.id for c in await one.list_conversations(BOB)] == [bobs]
        assert [c.id for c in await two.list_conversations(ALICE)] == [theirs]
        names = {e.name for e in await one.list_entities()}
        assert "Zebrafish7731corp" not in names and "Otter5512works" in names

        await _seed(one, ALICE, "I work at Heron4410corp.")
        await _seed(one, ALICE, "Second conversation of the same user.")
        partial = await as_hosted.purge_user(ALICE)  # the contract's routes only
        assert partial.deleted == {"conversations": 2, "messages": 2}
        assert partial.not_deleted == list(CONTRACT_LEFTOVERS) and not partial.complete
        assert not partial.compacted
        assert await one.list_conversations(ALICE) == []
        # What the report says was left is left: the entity extraction made.
        assert "Heron4410corp" in {e.name for e in await one.list_entities()}
        assert [c.id for c in await one.list_conversations(BOB)] == [bobs]
    finally:
        for backend in (one, two, as_hosted):
            await backend.aclose()


def test_hosted_purge_against_a_real_server(tmp_path: Path) -> None:
    args = ["--port", "0", "--no-embeddings", "--db", str(tmp_path / "served.db")]
    args += ["--api-key", "k1=ws-one", "--api-key", "k2=ws-two"]
    with serve_process(args, tmp_path) as server:
        asyncio.run(_scenario(f"{server.base_url}/v1"))
