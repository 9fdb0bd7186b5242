"""``ingest_http`` counts ingest until the vectors are searchable: its wait is real.

The app runs in process over a real SQLite engine with the model-free hashing embedder and
background extraction (what ``serve`` does), so messages are acknowledged before their
vectors are stored and the wait has something to wait for.
"""

from __future__ import annotations

import time
from pathlib import Path

from backends.sqlite import SQLiteBackend
from benchmarks.ingest_http import _wait_indexed
from nams_local import HashingEmbedder
from nams_local.server.app import create_app
from tests.asgi import in_process

TOKEN = "ingest-indexed-test-key"


async def test_wait_indexed_finds_every_newest_message_and_reports_a_missing_one(
    tmp_path: Path,
) -> None:
    root = SQLiteBackend(
        tmp_path / "ingest.db", embedder=HashingEmbedder(), extraction="background"
    )
    app = create_app(root, api_keys=[TOKEN], owns_backend=True)
    async with in_process(app) as http:
        http.headers["Authorization"] = f"Bearer {TOKEN}"
        newest: dict[str, tuple[str, str]] = {}
        for k in range(3):
            made = await http.post("/v1/conversations", json={"userId": f"user-{k}"})
            conv = str(made.json()["id"])
            body = {
                "messages": [
                    {"role": "user", "content": f"conversation {k} ships crate {i} to Oslo"}
                    for i in range(20)
                ]
            }
            answer = await http.post(f"/v1/conversations/{conv}/messages/bulk", json=body)
            assert answer.status_code == 201
            last = answer.json()["messages"][-1]
            newest[conv] = (last["id"], last["content"])
        assert await _wait_indexed(http, newest, timeout=30.0) == 0

        conv, (_, content) = next(iter(newest.items()))
        started = time.monotonic()
        missing = {conv: ("no-such-message-id", content)}
        assert await _wait_indexed(http, missing, timeout=0.3) == 1
        assert time.monotonic() - started < 20.0  # bounded by its timeout, not stuck
