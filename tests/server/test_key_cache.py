"""Authentication never queues behind memory work, and its key cache is never stale.

Minted keys are cached in memory (``ApiKeyStore``); a rotation or revocation must still take
effect on the very next request, in the process that made it and in any other process
serving the same file. And a lookup runs on the key store's own thread, so a default
executor filled with other work cannot delay it.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from backends.sqlite import SQLiteBackend
from nams_local.server import ApiKeyStore, create_app

from .processes import serve_process
from .support import bearer

LIST = "/v1/conversations"
KEYS = "/v1/auth/api-keys"


def _mint(http: httpx.Client, token: str) -> dict[str, str]:
    created = http.post(KEYS, json={"label": "ci"}, headers=bearer(token))
    assert created.status_code == 201, created.text
    body: dict[str, str] = created.json()
    return body


async def test_revocation_and_rotation_reach_a_second_store_on_the_same_file(
    tmp_path: Path,
) -> None:
    """Two key stores on one file are what two processes are to SQLite: separate
    connections. Each has cached the key before the other changes it."""
    db = tmp_path / "keys.db"
    here, there = ApiKeyStore(db), ApiKeyStore(db)
    try:
        record = await here.create(
            label="k", scopes=["read"], owner="o", workspace="w", workspace_id="w"
        )
        seen = await there.find(record.key)
        assert seen is not None and not seen.revoked
        rotated = await here.rotate("o", record.id)
        old = await there.find(record.key)
        assert old is not None and old.revoked
        new = await there.find(rotated.key)
        assert new is not None and not new.revoked
        await there.revoke("o", rotated.id)
        revoked = await here.find(rotated.key)
        assert revoked is not None and revoked.revoked
    finally:
        here.close()
        there.close()


async def test_unknown_token_cached_as_unknown_is_found_once_minted_elsewhere(
    tmp_path: Path,
) -> None:
    db = tmp_path / "keys.db"
    here, there = ApiKeyStore(db), ApiKeyStore(db)
    try:
        assert await here.find("nams_not-yet") is None
        record = await there.create(
            label="k", scopes=[], owner="o", workspace="w", workspace_id="w"
        )
        assert await here.find(record.key) is not None
    finally:
        here.close()
        there.close()


async def test_auth_answers_while_the_default_executor_is_full() -> None:
    """Fill every thread of asyncio's default executor with work that waits on an event;
    authenticated requests (minted key, open-mode token) must still be answered."""
    root = SQLiteBackend(":memory:", embeddings=False, extraction="off")
    app = create_app(root)
    release = threading.Event()
    loop = asyncio.get_running_loop()
    blockers = [loop.run_in_executor(None, release.wait, 30.0) for _ in range(64)]
    try:
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://nams.test"
            ) as http,
        ):
            created = await asyncio.wait_for(
                http.post(KEYS, json={"label": "ci"}, headers=bearer("owner")), 10
            )
            assert created.status_code == 201, created.text
            key = created.json()["key"]
            for token in (key, "owner", "someone-else"):
                answer = await asyncio.wait_for(http.get(LIST, headers=bearer(token)), 10)
                assert answer.status_code == 200, answer.text
            assert not any(b.done() for b in blockers), "the executor was not full"
    finally:
        release.set()
        await asyncio.gather(*blockers)
        await root.aclose()


def test_rotate_and_revoke_reach_a_second_server_on_its_next_request(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    args = ["--port", "0", "--db", str(db), "--no-embeddings"]
    with (
        serve_process(args, tmp_path) as first,
        serve_process(args, tmp_path) as second,
        httpx.Client(base_url=first.base_url, timeout=20) as one,
        httpx.Client(base_url=second.base_url, timeout=20) as two,
    ):
        minted = _mint(one, "owner")
        key, key_id = minted["key"], minted["id"]
        # Both servers have the key cached before it changes.
        for http in (one, two):
            assert http.get(LIST, headers=bearer(key)).status_code == 200
        started = time.monotonic()
        rotated = one.post(f"{KEYS}/{key_id}/rotate", headers=bearer("owner"))
        assert rotated.status_code == 200, rotated.text
        new_key, new_id = rotated.json()["key"], rotated.json()["id"]
        # Immediately: the very next request in either process sees the rotation.
        for http in (one, two):
            assert http.get(LIST, headers=bearer(key)).status_code == 401
            assert http.get(LIST, headers=bearer(new_key)).status_code == 200
        revoked = two.delete(f"{KEYS}/{new_id}", headers=bearer("owner"))
        assert revoked.status_code == 200, revoked.text
        for http in (two, one):
            answer = http.get(LIST, headers=bearer(new_key))
            assert answer.status_code == 401, answer.text
            assert "revoked" in answer.json()["error"]
        assert time.monotonic() - started < 20


#: Holds an exclusive lock on the file given as argv[1] until its stdin closes (a real other
#: process: SQLite's locks do not conflict between connections of one process's copies).
_LOCK_HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""


async def test_a_cached_key_never_blocks_the_event_loop_on_a_locked_file(
    tmp_path: Path,
) -> None:
    """A cached key is checked on the event loop's thread; when another process holds the
    file locked, that check must give way to the store's thread (which waits for the lock)
    at once, never stall the loop, and answer again once the lock is gone."""
    path = tmp_path / "keys.sqlite3"
    store = ApiKeyStore(path)
    try:
        record = await store.create(
            label="ci", scopes=["memory:read"], owner="o", workspace="w", workspace_id="w"
        )
        assert await store.find(record.key) == record  # cached from here on
        holder = subprocess.Popen(
            [sys.executable, "-c", _LOCK_HOLDER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert holder.stdin is not None and holder.stdout is not None
        try:
            assert holder.stdout.readline().strip() == b"locked"
            ticks = 0

            async def tick() -> None:
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.01)
                    ticks += 1

            ticker = asyncio.create_task(tick())
            started = time.monotonic()
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(store.find(record.key), 0.5)
            ticker.cancel()
            await asyncio.gather(ticker, return_exceptions=True)
            assert time.monotonic() - started < 5
            # A stalled loop ticks at most once in the 0.5 s; a free one about 45 times, and
            # still 5 or more at load 20 (each 10 ms sleep then takes up to ~100 ms). Once
            # ">= 10": a loaded machine alone could fail it.
            assert ticks >= 3, f"the event loop stalled ({ticks} ticks in 0.5 s)"
        finally:
            holder.stdin.close()
            holder.wait(timeout=10)
            holder.stdout.close()
        assert await asyncio.wait_for(store.find(record.key), 15) == record
    finally:
        store.close()


def _revoke_elsewhere(db: Path, owner: str, key_id: str) -> None:
    """Another process revokes the key; the caller's event loop is blocked meanwhile."""
    script = (
        "import asyncio, sys\n"
        "from nams_local.server import ApiKeyStore\n"
        "store = ApiKeyStore(sys.argv[1])\n"
        "asyncio.run(store.revoke(sys.argv[2], sys.argv[3]))\n"
        "store.close()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(db), owner, key_id],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


async def test_a_request_lookup_shares_the_generation_read_of_its_loop_pass_only(
    tmp_path: Path,
) -> None:
    """``find_for_request`` reads the change signal once per pass of the event loop: a
    change committed in the middle of a pass (here: by another process while the loop is
    blocked, which no arriving request can do) shows from the next pass on, while plain
    ``find`` reads it every time."""
    db = tmp_path / "keys.db"
    store = ApiKeyStore(db)
    try:
        record = await store.create(
            label="k", scopes=["read"], owner="o", workspace="w", workspace_id="w"
        )
        assert await store.find(record.key) == record  # cached
        first = await store.find_for_request(record.key)
        assert first is not None and not first.revoked
        _revoke_elsewhere(db, "o", record.id)
        same_pass = await store.find_for_request(record.key)
        assert same_pass is not None and not same_pass.revoked
        await asyncio.sleep(0)  # the pass ends
        next_pass = await store.find_for_request(record.key)
        assert next_pass is not None and next_pass.revoked
        plain = await store.find(record.key)
        assert plain is not None and plain.revoked
    finally:
        store.close()
