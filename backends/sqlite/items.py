"""Namespaced key/value items on the local engine (what LangGraph's ``BaseStore`` needs).

A batch (``nams_local.items``) runs as one unit of work on the writer thread, in order:
one transaction, so a refused op leaves nothing of the batch behind, and reads that
refresh a TTL can write. Ranked search uses the engine's text index kind (an FTS5 table,
scoped by a workspace token like ``messages_fts``) and the engine's embedder (vectors of
the item's indexed text, computed off the writer thread by the facade), fused with the
same weighted hybrid as message search (``search.fuse``). The vectors of the candidates
are compared by brute force: a search is bounded to the ``MAX_QUERY_CANDIDATES`` newest
items under its namespace prefix, so one workspace's store cannot make a search unbounded.

Namespaces are stored twice: as JSON (to read back) and as ``ns_path``, each label
JSON-encoded and followed by ``,``, so "under this prefix" is one index range scan and no
label can forge another namespace's path.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
from sqlalchemy import ColumnElement, Row, and_, delete, insert, or_, select, text, true, update

from nams_local.embeddings import Vector
from nams_local.items import (
    ItemGet,
    ItemListNamespaces,
    ItemOp,
    ItemPut,
    ItemResult,
    ItemSearch,
    StoredItem,
    matches_filter,
    namespace_matches,
)

from . import schema as s
from .search import bm25, fuse
from .store import Ctx
from .text import match_query, scope_token, terms

__all__ = ["MAX_FILTER_SCAN", "MAX_QUERY_CANDIDATES", "drop_items", "ns_path", "run_batch"]

#: A ranked search compares at most this many (newest) items under its prefix.
MAX_QUERY_CANDIDATES = 10_000
#: A filtered search reads at most this many items under its prefix to fill its page.
MAX_FILTER_SCAN = 100_000
#: Expired items deleted per write batch (the rest go with the next ones).
SWEEP_LIMIT = 500

_t = s.store_items
_FTS = "store_items_fts"


def ns_path(namespace: Sequence[str]) -> str:
    return "".join(json.dumps(label) + "," for label in namespace)


def _under(prefix: Sequence[str]) -> ColumnElement[bool]:
    if not prefix:
        return true()
    path = ns_path(prefix)
    return and_(_t.c.ns_path >= path, _t.c.ns_path < path[:-1] + "-")


def _live(now: float) -> ColumnElement[bool]:
    return or_(_t.c.expires_at.is_(None), _t.c.expires_at > now)


def _time(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def _item(row: Row[Any], score: float | None = None) -> StoredItem:
    return StoredItem(
        namespace=tuple(json.loads(row.namespace)),
        key=row.key,
        value=json.loads(row.value),
        created_at=_time(row.created_at),
        updated_at=_time(row.updated_at),
        score=score,
    )


def _scope(ctx: Ctx) -> str:
    return scope_token("w", ctx.workspace)


def _index_text(ctx: Ctx, pk: int, body: str | None) -> None:
    ctx.conn.execute(text(f"DELETE FROM {_FTS} WHERE rowid = :pk"), {"pk": pk})
    if body:
        ctx.conn.execute(
            text(f"INSERT INTO {_FTS}(rowid, body, scope) VALUES (:pk, :body, :scope)"),
            {"pk": pk, "body": body, "scope": _scope(ctx)},
        )


def drop_items(ctx: Ctx, pks: Sequence[int]) -> None:
    """Delete the items and their full-text entries (also ``purge.py``'s user purge)."""
    if not pks:
        return
    ctx.conn.execute(delete(_t).where(_t.c.pk.in_(pks)))
    for pk in pks:
        ctx.conn.execute(text(f"DELETE FROM {_FTS} WHERE rowid = :pk"), {"pk": pk})


def _refresh(ctx: Ctx, rows: Iterable[Row[Any]], now: float) -> None:
    for row in rows:
        if row.ttl_minutes is not None:
            ctx.conn.execute(
                update(_t).where(_t.c.pk == row.pk).values(expires_at=now + row.ttl_minutes * 60.0)
            )


def _key_row(ctx: Ctx, namespace: Sequence[str], key: str) -> Row[Any] | None:
    return ctx.conn.execute(
        select(_t).where(
            _t.c.workspace == ctx.workspace,
            _t.c.ns_path == ns_path(namespace),
            _t.c.key == key,
        )
    ).first()


def _get(ctx: Ctx, op: ItemGet, now: float) -> StoredItem | None:
    row = _key_row(ctx, op.namespace, op.key)
    if row is None or (row.expires_at is not None and row.expires_at <= now):
        return None
    if op.refresh_ttl:
        _refresh(ctx, [row], now)
    return _item(row)


def _put(ctx: Ctx, op: ItemPut, vector: bytes | None, now: float) -> None:
    row = _key_row(ctx, op.namespace, op.key)
    if op.value is None:
        if row is not None:
            drop_items(ctx, [row.pk])
        return
    values: dict[str, Any] = {
        "value": json.dumps(op.value, allow_nan=False, separators=(",", ":")),
        "body": op.text or None,
        "embedding": vector,
        "updated_at": now,
        "ttl_minutes": op.ttl,
        "expires_at": None if op.ttl is None else now + op.ttl * 60.0,
    }
    if row is not None and (row.expires_at is None or row.expires_at > now):
        ctx.conn.execute(update(_t).where(_t.c.pk == row.pk).values(**values))
        pk = int(row.pk)
    else:
        if row is not None:  # expired: a new item, not an update of the old one
            drop_items(ctx, [row.pk])
        pk = int(
            ctx.conn.execute(
                insert(_t)
                .returning(_t.c.pk)
                .values(
                    workspace=ctx.workspace,
                    ns_path=ns_path(op.namespace),
                    namespace=json.dumps(list(op.namespace)),
                    key=op.key,
                    created_at=now,
                    **values,
                )
            ).scalar_one()
        )
    _index_text(ctx, pk, op.text)


def _candidates(ctx: Ctx, op: ItemSearch, now: float) -> list[Row[Any]]:
    """Live rows under the prefix passing the filter, newest update first: the page itself
    when nothing ranks or filters, else every candidate (bounded) for a query, or rows up
    to the end of the page for a filter. The cursor is closed before anything is written."""
    stmt = (
        select(_t)
        .where(_t.c.workspace == ctx.workspace, _under(op.prefix), _live(now))
        .order_by(_t.c.updated_at.desc(), _t.c.pk.desc())
    )
    if not op.filter and not op.query:
        return list(ctx.conn.execute(stmt.offset(op.offset).limit(op.limit)).all())
    bound = MAX_QUERY_CANDIDATES if op.query else MAX_FILTER_SCAN
    want = None if op.query else op.offset + op.limit
    kept: list[Row[Any]] = []
    result = ctx.conn.execute(stmt.limit(bound))
    try:
        for row in result:
            if op.filter and not matches_filter(json.loads(row.value), op.filter):
                continue
            kept.append(row)
            if want is not None and len(kept) >= want:
                break
    finally:
        result.close()
    return kept


def _text_hits(ctx: Ctx, query: str, k: int) -> list[tuple[int, float]]:
    """Text scores on message search's absolute scale (``search.bm25``), so they fuse with
    vector similarities the same way: a raw BM25 is near 0 in a small store."""
    match = match_query(query, _scope(ctx))
    rank = f"bm25({_FTS}, 1.0, 0.0)"
    return bm25(ctx.conn, _FTS, match, k, len(terms(query)), rank=rank)


def _ranked(
    ctx: Ctx, op: ItemSearch, rows: list[Row[Any]], query_vector: Vector | None, weight: float
) -> list[tuple[Row[Any], float | None]]:
    """Rows by fused score; rows with no score (not indexed, or matching neither index)
    after them, newest first, as ``InMemoryStore`` lists its unscored items."""
    assert op.query is not None
    by_pk = {int(r.pk): r for r in rows}
    indexed = {pk for pk, r in by_pk.items() if r.body}
    text_hits = [
        (pk, score)
        for pk, score in _text_hits(ctx, op.query, MAX_QUERY_CANDIDATES)
        if pk in indexed
    ]
    vector_hits: list[tuple[int, float]] = []
    if query_vector is not None:
        width = query_vector.shape[0] * 4  # float32; another embedder's vectors are skipped
        embedded = [pk for pk in indexed if len(by_pk[pk].embedding or b"") == width]
        if embedded:
            matrix = np.stack(
                [np.frombuffer(by_pk[pk].embedding, dtype=np.float32) for pk in embedded]
            )
            sims = matrix @ query_vector.astype(np.float32)
            vector_hits = [(pk, float(sim)) for pk, sim in zip(embedded, sims, strict=True)]
    # Scores compare across rows only if every row has a vector of this embedder: a row
    # without one would lose the vector share of its score to rows that have one (an
    # exact text match ranked below a near one). Mixed items rank by text alone.
    comparable = query_vector is not None and len(vector_hits) == len(indexed)
    effective = weight if comparable else 0.0
    fused = fuse(text_hits, vector_hits if comparable else [], effective)
    order = {int(r.pk): n for n, r in enumerate(rows)}
    fused.sort(key=lambda r: (-r.score, order[r.pk]))
    scored = {r.pk for r in fused}
    out: list[tuple[Row[Any], float | None]] = [(by_pk[r.pk], r.score) for r in fused]
    out += [(r, None) for r in rows if int(r.pk) not in scored]
    return out


def _search(
    ctx: Ctx, op: ItemSearch, now: float, query_vector: Vector | None, weight: float
) -> list[StoredItem]:
    rows = _candidates(ctx, op, now)
    page: list[tuple[Row[Any], float | None]]
    if op.query:
        ranked = _ranked(ctx, op, rows, query_vector, weight)
        page = ranked[op.offset : op.offset + op.limit]
    elif op.filter:
        page = [(row, None) for row in rows[op.offset : op.offset + op.limit]]
    else:
        page = [(row, None) for row in rows]
    if op.refresh_ttl:
        _refresh(ctx, (row for row, _ in page), now)
    return [_item(row, score) for row, score in page]


def _namespaces(ctx: Ctx, op: ItemListNamespaces, now: float) -> list[tuple[str, ...]]:
    narrowed: list[str] = []
    for kind, path in op.conditions:
        if kind == "prefix":
            for label in path:
                if label == "*":
                    break
                narrowed.append(label)
            break
    found = ctx.conn.execute(
        select(_t.c.namespace)
        .where(_t.c.workspace == ctx.workspace, _under(narrowed), _live(now))
        .distinct()
    ).scalars()
    spaces = {tuple(json.loads(raw)) for raw in found}
    kept = [
        ns
        for ns in spaces
        if all(namespace_matches(kind, path, ns) for kind, path in op.conditions)
    ]
    if op.max_depth is not None:
        kept = list({ns[: op.max_depth] for ns in kept})
    return sorted(kept)[op.offset : op.offset + op.limit]


def _sweep(ctx: Ctx, now: float) -> None:
    expired = ctx.conn.execute(
        select(_t.c.pk)
        .where(_t.c.workspace == ctx.workspace, _t.c.expires_at <= now)
        .limit(SWEEP_LIMIT)
    ).scalars()
    drop_items(ctx, [int(pk) for pk in expired])


def run_batch(
    ctx: Ctx,
    ops: Sequence[ItemOp],
    put_vectors: Mapping[int, bytes],
    query_vectors: Mapping[int, Vector],
    now: float,
    weight: float,
) -> list[ItemResult]:
    """Run ``ops`` in order (unit of work); ``put_vectors`` / ``query_vectors`` hold the
    embeddings of put texts and search queries by op index."""
    results: list[ItemResult] = []
    writes = False
    for index, op in enumerate(ops):
        if isinstance(op, ItemGet):
            results.append(_get(ctx, op, now))
        elif isinstance(op, ItemPut):
            writes = True
            _put(ctx, op, put_vectors.get(index), now)
            results.append(None)
        elif isinstance(op, ItemSearch):
            results.append(_search(ctx, op, now, query_vectors.get(index), weight))
        else:
            results.append(_namespaces(ctx, op, now))
    if writes:
        _sweep(ctx, now)
    return results
