"""Import into a backend without ``SupportsImport``: hosted NAMS, played by a real
``nams-local serve`` subprocess reached through ``HostedBackend`` over HTTP.

Records are replayed through the protocol's methods, the target's ids recorded in an id
map; what the protocol cannot write is reported with the reason; a second import with the
same id map changes nothing.
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

from backends.hosted import HostedBackend
from nams_local.transfer import import_stream, write_export
from tests.backends.sqlite.seeded import ALICE_SECRET, open_store, seed
from tests.server.processes import serve_process


def _export(tmp_path: Path) -> tuple[bytes, dict[str, list[str]]]:
    """The seeded store's export, and its messages' contents by user."""

    async def build() -> tuple[bytes, dict[str, list[str]]]:
        source = open_store(tmp_path / "source.db", embeddings=False)
        try:
            await seed(source)
            out = io.BytesIO()
            write_export(source, out)
            by_user: dict[str, list[str]] = {}
            for conv in await source.list_conversations():
                messages = await source.list_messages(conv.id, limit=200)
                by_user[conv.user_id or ""] = [m.content for m in reversed(messages)]
            return out.getvalue(), by_user
        finally:
            await source.aclose()

    return asyncio.run(build())


async def _contents(target: HostedBackend) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for conv in await target.list_conversations():
        messages = await target.list_messages(conv.id, limit=200)
        found[conv.user_id or ""] = [m.content for m in reversed(messages)]
    return found


def test_replay_into_a_hosted_endpoint_is_idempotent_with_its_id_map(tmp_path: Path) -> None:
    data, by_user = _export(tmp_path)
    args = ["--port", "0", "--db", str(tmp_path / "target.db"), "--no-embeddings"]
    with serve_process(args, tmp_path, stderr=tmp_path / "serve.log") as served:

        async def run() -> None:
            id_map: dict[str, str] = {}
            target = HostedBackend("replay-key", endpoint=f"{served.base_url}/v1")
            try:
                first = await import_stream(target, io.BytesIO(data), id_map=id_map)
                assert first.path == "replay"
                assert await _contents(target) == by_user
                assert first.added["conversation"] == 3  # alice, bob, the legacy session
                assert first.added["reasoning_step"] == 1
                assert first.added["tool_call"] == 2
                reasons = {s.kind: s.reason for s in first.skipped}
                assert "derives" in reasons["observation"]
                assert "legacy" in reasons["fact"]
                assert any(ALICE_SECRET in c for c in by_user["alice"])
                again = await import_stream(target, io.BytesIO(data), id_map=dict(id_map))
                assert again.added == {}
                assert again.present == sum(first.added.values())
                assert await _contents(target) == by_user  # nothing added the second time
            finally:
                await target.aclose()

        asyncio.run(run())
