"""LangGraph: ``NamsStore``, a ``langgraph.store.base.BaseStore`` on the local engine.

``NamsStore(backend)`` gives a LangGraph graph (and ``langmem``'s memory tools) a durable
store: exact key/value items per namespace, ranked search over item values (the engine's
FTS5 text index fused with its embedder's vectors), LangGraph's JSON filters, ``limit`` /
``offset`` and TTLs. Any backend implementing ``SupportsItems`` works (the local engine,
one workspace per backend); hosted NAMS has no item routes, so it is refused at
construction with a clear ``TypeError`` rather than on the first call.

Namespaces are LangGraph's own: tuples of labels inside the backend's workspace (the
workspace is the tenant: a server's API key, or ``SQLiteBackend(workspace=...)``); they
do not map to NAMS users or conversations, so ``("memories", user_id)`` is a convention
of the app, exactly as with LangGraph's stores.

Differences from ``InMemoryStore``, each deliberate: items are always indexed for search
(the engine has its own embedder, so no ``index`` config with an embedding function is
needed; ``index=False`` on a put still keeps an item out of ranked search); a search
without a query lists newest update first (as LangGraph's Postgres store); ``created_at``
survives an update; ``list_namespaces`` lists only namespaces that hold a live item; and
a batch runs its ops in order in one transaction. Importing this module imports
``langgraph`` (the ``langgraph`` extra); importing ``nams_local`` never does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from ..backend import SupportsItems
from ..items import (
    ItemGet,
    ItemListNamespaces,
    ItemOp,
    ItemPut,
    ItemResult,
    ItemSearch,
    StoredItem,
)
from .sync import BackgroundLoop, shared_loop

__all__ = ["NamsStore", "index_text"]

#: The default indexed fields: every string in the value.
WHOLE_VALUE = "$"


def _strings(value: Any) -> list[str]:
    """Every string leaf of ``value`` (iterative, in document order)."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, Mapping):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list | tuple):
            stack.extend(reversed(item))
    return out


def index_text(value: Mapping[str, Any], fields: Sequence[str]) -> str | None:
    """What search indexes for ``value``: the texts at ``fields`` (LangGraph's path syntax,
    ``"$"`` = every string in the value), one per line; ``None`` when there is none."""
    texts: list[str] = []
    for path in fields:
        if path == WHOLE_VALUE:
            texts += _strings(value)
        else:
            texts += get_text_at_path(dict(value), tokenize_path(path))
    joined = "\n".join(t for t in texts if t.strip())
    return joined or None


class NamsStore(BaseStore):
    """A LangGraph store over a ``SupportsItems`` backend.

    Args:
        backend: the local engine (``SQLiteBackend``) or anything implementing
            ``nams_local.backend.SupportsItems``. The caller owns it (and closes it).
        fields: the value fields indexed for search by default (LangGraph's path syntax;
            default every string in the value); a put's ``index=[...]`` overrides them.
        ttl: LangGraph's ``TTLConfig`` (``default_ttl`` minutes, ``refresh_on_read``).
        loop: where the synchronous methods run the backend's coroutines (default the
            process-wide background loop of ``integrations.sync``).
    """

    supports_ttl = True

    def __init__(
        self,
        backend: object,
        *,
        fields: Sequence[str] | None = None,
        ttl: TTLConfig | None = None,
        loop: BackgroundLoop | None = None,
    ) -> None:
        if not isinstance(backend, SupportsItems):
            raise TypeError(
                f"{type(backend).__name__} cannot hold LangGraph items (it does not implement "
                "SupportsItems; hosted NAMS has no item routes): use the local engine"
            )
        self.backend = backend
        self.fields = list(fields) if fields is not None else [WHOLE_VALUE]
        self.ttl_config = ttl
        self._loop = loop

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """The synchronous twin of ``abatch`` (runs on a background loop)."""
        return (self._loop or shared_loop()).run(self.abatch(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        batch = list(ops)
        for op in batch:
            validate_op_namespace(op)
        results = await self.backend.item_batch([self._convert(op) for op in batch])
        return [_result(op, result) for op, result in zip(batch, results, strict=True)]

    def _convert(self, op: Op) -> ItemOp:
        if isinstance(op, GetOp):
            return ItemGet(tuple(op.namespace), op.key, refresh_ttl=op.refresh_ttl)
        if isinstance(op, PutOp):
            text = None
            if op.value is not None and op.index is not False:
                fields = self.fields if op.index is None else list(op.index)
                text = index_text(op.value, fields)
            return ItemPut(tuple(op.namespace), op.key, op.value, text=text, ttl=op.ttl)
        if isinstance(op, SearchOp):
            return ItemSearch(
                tuple(op.namespace_prefix),
                query=op.query,
                filter=op.filter,
                limit=op.limit,
                offset=op.offset,
                refresh_ttl=op.refresh_ttl,
            )
        if isinstance(op, ListNamespacesOp):
            conditions = tuple((c.match_type, tuple(c.path)) for c in op.match_conditions or ())
            return ItemListNamespaces(
                conditions=conditions, max_depth=op.max_depth, limit=op.limit, offset=op.offset
            )
        raise TypeError(f"unknown store operation {type(op).__name__}")


def _fields(stored: StoredItem) -> dict[str, Any]:
    return {
        "namespace": stored.namespace,
        "key": stored.key,
        "value": stored.value,
        "created_at": stored.created_at,
        "updated_at": stored.updated_at,
    }


def _result(op: Op, result: ItemResult) -> Result:
    if isinstance(op, GetOp):
        return Item(**_fields(result)) if isinstance(result, StoredItem) else None
    if isinstance(op, SearchOp):
        assert isinstance(result, list)
        return [
            SearchItem(**_fields(r), score=r.score) for r in result if isinstance(r, StoredItem)
        ]
    if isinstance(op, ListNamespacesOp):
        assert isinstance(result, list)
        return [r for r in result if isinstance(r, tuple)]
    return None
