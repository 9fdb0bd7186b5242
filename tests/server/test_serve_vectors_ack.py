"""``nams-local serve`` with embeddings acknowledges a message write once its vector is
stored, with one process as with several (wire decision L20): no row of an acknowledged
write is left in ``vector_queue``, so a vector search right after the ack waits for none.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from backends.sqlite import SQLiteBackend
from tests.backends.sqlite.files import queued_vectors

from .processes import serve_process


async def test_one_serve_process_acks_a_message_once_its_vector_is_stored(tmp_path: Path) -> None:
    db = tmp_path / "acked.db"
    async with SQLiteBackend(db, embeddings=False) as opened:  # the schema, and its driver
        driver = opened.store.driver.module
    args = ["--port", "0", "--db", str(db), "--extraction", "off"]
    with serve_process(args, tmp_path, stderr=tmp_path / "serve.log") as served:
        auth = {"Authorization": "Bearer vectors-ack"}
        async with httpx.AsyncClient(base_url=served.base_url, headers=auth, timeout=60) as http:
            created = await http.post("/v1/conversations", json={"userId": "u"})
            cid = created.json()["id"]
            for n, topic in enumerate(["harbour cranes", "violin lessons", "tax forms", "kiwi"]):
                text = f"{topic} number {n}, said on the record"
                added = await http.post(
                    f"/v1/conversations/{cid}/messages", json={"role": "user", "content": text}
                )
                assert added.status_code == 201
                assert queued_vectors(db, driver) == 0, "acknowledged with its vector still queued"
            found = await http.post(
                f"/v1/conversations/{cid}/search", json={"query": "violin", "mode": "vector"}
            )
            assert found.json()["searchType"] == "vector"
            assert "violin lessons number 1, said on the record" in [
                m["content"] for m in found.json()["messages"]
            ]
