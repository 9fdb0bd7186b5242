"""API keys the server mints: create, list, reveal, rotate, revoke — persisted for real.

Hosted NAMS keys are user-owned ``nams_…`` strings that a client sends as its bearer token.
The local server keeps them in a table of its own in the same SQLite file as the memory
(opened with the same SQLite library as the engine, see ``_connect``, but never through
the engine's internals), or in memory for ``":memory:"``. A key is found by the SHA-256 of
its raw value; the raw value is stored too, because the hosted contract lets the owner
reveal it again. That makes the file as sensitive as the keys, which it already is: it
holds the memories they guard.

Every request is authenticated, so lookups must never queue behind memory work: the store
runs on a thread of its own (not asyncio's default executor, which embedding or a slow
query could fill) and keeps the records it has read in memory. The cache is revalidated on
every lookup against a generation counter that triggers in the file bump on any change to
the key table, by this process or another one on the same file (an older nams-local
included, once the triggers exist), so a rotation or revocation takes effect on the next
request everywhere. Revalidating is one single-row read; on a cache hit it is done on the
event loop's thread over a connection that never waits for a lock (``find``), so a cached
key costs no thread hop at all, and anything else goes to the store's thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import importlib
import json
import secrets
import sqlite3
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ParamSpec, TypeVar, cast

from nams_local.errors import BackendUnavailableError, NamsError, NotFoundError

__all__ = [
    "CACHED_KEYS",
    "KEY_LIFETIME",
    "KEY_PREFIX",
    "ApiKeyRecord",
    "ApiKeyStore",
    "KeyRevokedError",
    "key_digest",
    "wire_time",
]

P = ParamSpec("P")
R = TypeVar("R")

#: Every minted key starts with this, like hosted keys.
KEY_PREFIX = "nams_"
#: The hosted 90-day rotation deadline (``expiresAt``); after it the key stops working.
KEY_LIFETIME = timedelta(days=90)
#: Lookups remembered (known keys and unknown tokens alike), least recently used dropped
#: first: a flood of distinct tokens in open mode cannot grow memory without bound.
CACHED_KEYS = 10_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS nams_local_api_keys (
    id           TEXT PRIMARY KEY,
    key_hash     TEXT NOT NULL UNIQUE,
    raw_key      TEXT NOT NULL,
    label        TEXT NOT NULL,
    scopes       TEXT NOT NULL,
    owner        TEXT NOT NULL,
    workspace    TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    revoked_at   TEXT
);
CREATE INDEX IF NOT EXISTS nams_local_api_keys_owner ON nams_local_api_keys(owner);
CREATE TABLE IF NOT EXISTS nams_local_api_keys_generation (
    id         INTEGER PRIMARY KEY CHECK (id = 0),
    generation INTEGER NOT NULL
);
INSERT OR IGNORE INTO nams_local_api_keys_generation(id, generation) VALUES (0, 0);
CREATE TRIGGER IF NOT EXISTS nams_local_api_keys_gen_insert
AFTER INSERT ON nams_local_api_keys BEGIN
    UPDATE nams_local_api_keys_generation SET generation = generation + 1 WHERE id = 0;
END;
CREATE TRIGGER IF NOT EXISTS nams_local_api_keys_gen_update
AFTER UPDATE ON nams_local_api_keys BEGIN
    UPDATE nams_local_api_keys_generation SET generation = generation + 1 WHERE id = 0;
END;
CREATE TRIGGER IF NOT EXISTS nams_local_api_keys_gen_delete
AFTER DELETE ON nams_local_api_keys BEGIN
    UPDATE nams_local_api_keys_generation SET generation = generation + 1 WHERE id = 0;
END;
"""
_GENERATION = "SELECT generation FROM nams_local_api_keys_generation WHERE id = 0"
#: ``ApiKeyStore._cached``'s "not answered here" (a cached ``None`` means: no such key).
_MISS: tuple[bool, ApiKeyRecord | None] = (False, None)


class KeyRevokedError(NamsError):
    """The key was revoked: it can be neither revealed nor rotated (hosted answers 410)."""

    status_code = 410


def key_digest(raw_key: str) -> str:
    """How a key is looked up: the hex SHA-256 of its raw value."""
    return hashlib.sha256(raw_key.encode("utf-8")).hexdigest()


def wire_time(value: datetime) -> str:
    """UTC ISO-8601 with a ``Z``, the form pydantic gives the memory models' timestamps."""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class ApiKeyRecord:
    """One minted key. ``workspace`` is the engine's name, ``workspace_id`` the client's."""

    id: str
    key: str
    label: str
    scopes: tuple[str, ...]
    owner: str
    workspace: str
    workspace_id: str
    created_at: datetime
    expires_at: datetime
    revoked_at: datetime | None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    def expired(self, now: datetime) -> bool:
        return now >= self.expires_at

    def to_wire(self) -> dict[str, Any]:
        """The hosted ``APIKey`` list item: metadata only, never the raw key."""
        wire: dict[str, Any] = {
            "id": self.id,
            "label": self.label,
            "createdAt": wire_time(self.created_at),
            "expiresAt": wire_time(self.expires_at),
            "scopes": list(self.scopes),
        }
        if self.revoked_at is not None:
            wire["revokedAt"] = wire_time(self.revoked_at)
        return wire


def _record(row: sqlite3.Row) -> ApiKeyRecord:
    revoked = row["revoked_at"]
    return ApiKeyRecord(
        id=row["id"],
        key=row["raw_key"],
        label=row["label"],
        scopes=tuple(json.loads(row["scopes"])),
        owner=row["owner"],
        workspace=row["workspace"],
        workspace_id=row["workspace_id"],
        created_at=datetime.fromisoformat(row["created_at"]),
        expires_at=datetime.fromisoformat(row["expires_at"]),
        revoked_at=datetime.fromisoformat(revoked) if revoked else None,
    )


def _connect(path: str, timeout: float = 10.0) -> sqlite3.Connection:
    """A connection made by the SQLite library the memory engine uses on the same file:
    ``sqlean`` when it is installed (the engine's ``auto`` driver), else the stdlib's.
    Two copies of SQLite in one process do not see each other's locks, so a stdlib
    connection closing would checkpoint and delete the WAL the engine is still writing
    (https://www.sqlite.org/howtocorrupt.html, "multiple copies of SQLite")."""
    module: Any = sqlite3
    with contextlib.suppress(ImportError):
        module = importlib.import_module("sqlean.dbapi2")
    conn = module.connect(path, timeout=timeout, check_same_thread=False, isolation_level=None)
    conn.row_factory = module.Row
    return cast(sqlite3.Connection, conn)


class ApiKeyStore:
    """The key table. Calls are tiny and run on the store's own thread, under one lock.

    Args:
        path: the SQLite file (shared with the memory engine) or ``":memory:"``.
        clock: the current time; tests pass their own to cross the 90-day deadline.
    """

    def __init__(
        self, path: str | Path = ":memory:", *, clock: Callable[[], datetime] | None = None
    ) -> None:
        self.path = str(path)
        self._clock = clock or (lambda: datetime.now(UTC))
        self._lock = threading.Lock()
        self._conn = _connect(self.path)
        self._closed = False
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nams-keys")
        #: digest → record (``None``: no key has that value), valid at ``_generation``.
        self._cache: OrderedDict[str, ApiKeyRecord | None] = OrderedDict()
        self._generation = -1
        with self._lock:
            self._conn.executescript(_SCHEMA)
        #: The event loop's own connection for the cache-hit check (``find``): it never
        #: waits for a lock (timeout 0), so the loop never blocks on the file. A memory
        #: database exists on one connection only, and nothing else can lock it.
        self._probe = self._conn if self.path == ":memory:" else _connect(self.path, 0.0)
        #: ``find_for_request``'s generation read in this pass of this event loop.
        self._pass: tuple[asyncio.AbstractEventLoop, int] | None = None

    @property
    def _db(self) -> sqlite3.Connection:
        """The connection (call with the lock held); 503 once the store is closed."""
        if self._closed:
            raise BackendUnavailableError("the API-key store is closed")
        return self._conn

    def now(self) -> datetime:
        return self._clock()

    async def _run(self, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        if self._closed:
            raise BackendUnavailableError("the API-key store is closed")
        loop = asyncio.get_running_loop()
        try:
            job = loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))
        except RuntimeError:  # shut down between the check and the submit
            raise BackendUnavailableError("the API-key store is closed") from None
        return await job

    def _one(self, sql: str, params: Sequence[Any]) -> ApiKeyRecord | None:
        with self._lock:
            row = self._db.execute(sql, params).fetchone()
        return _record(row) if row is not None else None

    # -- lookups -------------------------------------------------------------------
    def _find(self, raw_key: str) -> ApiKeyRecord | None:
        digest = key_digest(raw_key)
        with self._lock:
            generation = self._db.execute(_GENERATION).fetchone()[0]
            if generation != self._generation:
                self._cache.clear()  # some key changed, here or in another process
                self._generation = generation
            elif digest in self._cache:
                self._cache.move_to_end(digest)
                return self._cache[digest]
            row = self._db.execute(
                "SELECT * FROM nams_local_api_keys WHERE key_hash = ?", (digest,)
            ).fetchone()
            found = _record(row) if row is not None else None
            self._cache[digest] = found
            while len(self._cache) > CACHED_KEYS:
                self._cache.popitem(last=False)
        return found

    def _cached(self, digest: str, *, per_pass: bool = False) -> tuple[bool, ApiKeyRecord | None]:
        """``(True, answer)`` from the cache, checked on the caller's thread, or ``_MISS``.

        Every request is authenticated, and a cached key was most of the time one hop to
        the store's thread and one back for a single-row read. This does that read here,
        on a connection that never waits: if the lock is held, the file is busy or
        anything else is amiss, it answers ``_MISS`` and ``find`` takes the thread path,
        which waits properly (and raises what there is to raise). ``per_pass``: reuse the
        generation read earlier in this pass of the event loop (``find_for_request``)."""
        if self._closed or not self._lock.acquire(blocking=False):
            return _MISS
        try:
            generation = self._pass_generation() if per_pass else None
            if generation is None:
                try:
                    generation = self._probe.execute(_GENERATION).fetchone()[0]
                except Exception:  # busy, locked, closed: the thread path decides
                    return _MISS
                if per_pass:
                    self._remember_pass(generation)
            if generation != self._generation or digest not in self._cache:
                return _MISS
            self._cache.move_to_end(digest)
            return True, self._cache[digest]
        finally:
            self._lock.release()

    def _pass_generation(self) -> int | None:
        remembered = self._pass
        if remembered is None or remembered[0] is not asyncio.get_running_loop():
            return None
        return remembered[1]

    def _remember_pass(self, generation: int) -> None:
        loop = asyncio.get_running_loop()
        self._pass = (loop, generation)
        loop.call_soon(self._forget_pass)

    def _forget_pass(self) -> None:
        self._pass = None

    async def find(self, raw_key: str) -> ApiKeyRecord | None:
        """The record of a raw key, revoked or not; ``None`` if no key has that value."""
        hit, record = self._cached(key_digest(raw_key))
        if hit:
            return record
        return await self._run(self._find, raw_key)

    async def find_for_request(self, raw_key: str) -> ApiKeyRecord | None:
        """``find`` for the request that just arrived: one generation read answers for
        every lookup in the same pass of the event loop.

        The server authenticates each request on the event loop, and the read of the
        generation row (the cross-process change signal) was, besides its own CPU, a
        release of the GIL on the loop per request: getting it back waits for whichever
        thread holds it. Sharing the read is as fresh as reading again: a step that runs
        in this pass, or in the next one before ``_forget_pass`` (queued by ``call_soon``
        when the read was made), was scheduled before the read; its request had arrived
        before its task existed, so before the read. A rotation or revocation committed
        before a request arrived is therefore committed before the read that request
        uses, and it is seen. (Plain ``find`` reads every time: a caller may make two
        lookups in one pass around a change it made elsewhere.)"""
        hit, record = self._cached(key_digest(raw_key), per_pass=True)
        if hit:
            return record
        return await self._run(self._find, raw_key)

    def _owned(self, owner: str, key_id: str) -> ApiKeyRecord:
        found = self._one(
            "SELECT * FROM nams_local_api_keys WHERE id = ? AND owner = ?", (key_id, owner)
        )
        if found is None:
            # Hosted answers the same 404 for unknown keys and other owners' keys.
            raise NotFoundError("Key not found or not owned by caller")
        return found

    def _list(self, owner: str) -> list[ApiKeyRecord]:
        with self._lock:
            rows = self._db.execute(
                "SELECT * FROM nams_local_api_keys WHERE owner = ? ORDER BY created_at, rowid",
                (owner,),
            ).fetchall()
        return [_record(row) for row in rows]

    async def list_owned(self, owner: str) -> list[ApiKeyRecord]:
        """The owner's keys, oldest first, revoked ones included (with ``revoked_at``)."""
        return await self._run(self._list, owner)

    # -- lifecycle -----------------------------------------------------------------
    def _insert(
        self,
        label: str,
        scopes: Sequence[str],
        owner: str,
        workspace: str,
        workspace_id: str,
    ) -> tuple[str, list[Any]]:
        created = self.now()
        raw = KEY_PREFIX + secrets.token_urlsafe(32)
        values: list[Any] = [
            str(uuid.uuid4()),
            key_digest(raw),
            raw,
            label,
            json.dumps(list(scopes)),
            owner,
            workspace,
            workspace_id,
            created.isoformat(),
            (created + KEY_LIFETIME).isoformat(),
        ]
        return (
            "INSERT INTO nams_local_api_keys(id, key_hash, raw_key, label, scopes, owner, "
            "workspace, workspace_id, created_at, expires_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
            values,
        )

    def _create(
        self, label: str, scopes: Sequence[str], owner: str, workspace: str, workspace_id: str
    ) -> ApiKeyRecord:
        sql, values = self._insert(label, scopes, owner, workspace, workspace_id)
        with self._lock:
            self._db.execute(sql, values)
        return self._owned(owner, values[0])

    async def create(
        self,
        *,
        label: str,
        scopes: Sequence[str],
        owner: str,
        workspace: str,
        workspace_id: str,
    ) -> ApiKeyRecord:
        """Mint a key for ``owner`` that opens ``workspace`` (the creator's)."""
        return await self._run(self._create, label, scopes, owner, workspace, workspace_id)

    def _reveal(self, owner: str, key_id: str) -> ApiKeyRecord:
        record = self._owned(owner, key_id)
        if record.revoked:
            raise KeyRevokedError("Key revoked or not revealable")
        return record

    async def reveal(self, owner: str, key_id: str) -> ApiKeyRecord:
        return await self._run(self._reveal, owner, key_id)

    def _revoke(self, owner: str, key_id: str) -> ApiKeyRecord:
        record = self._owned(owner, key_id)
        if not record.revoked:
            with self._lock:
                self._db.execute(
                    "UPDATE nams_local_api_keys SET revoked_at = ? WHERE id = ?",
                    (self.now().isoformat(), key_id),
                )
        return self._owned(owner, key_id)

    async def revoke(self, owner: str, key_id: str) -> ApiKeyRecord:
        """Revoke (idempotent: revoking a revoked key changes nothing)."""
        return await self._run(self._revoke, owner, key_id)

    def _rotate(self, owner: str, key_id: str) -> ApiKeyRecord:
        old = self._owned(owner, key_id)
        if old.revoked:
            raise KeyRevokedError("Key is already revoked")
        sql, values = self._insert(old.label, old.scopes, owner, old.workspace, old.workspace_id)
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                changed = self._db.execute(
                    "UPDATE nams_local_api_keys SET revoked_at = ? "
                    "WHERE id = ? AND revoked_at IS NULL",
                    (self.now().isoformat(), key_id),
                ).rowcount
                if changed == 1:
                    self._db.execute(sql, values)
                    self._db.execute("COMMIT")
                else:
                    self._db.execute("ROLLBACK")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        if changed != 1:  # revoked by a concurrent call between the read and the write
            raise KeyRevokedError("Key is already revoked")
        return self._owned(owner, values[0])

    async def rotate(self, owner: str, key_id: str) -> ApiKeyRecord:
        """Mint a replacement (same label, scopes and workspace) and revoke the old key."""
        return await self._run(self._rotate, owner, key_id)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._executor.shutdown(wait=True)
        with self._lock:
            if self._probe is not self._conn:
                self._probe.close()
            self._conn.close()
