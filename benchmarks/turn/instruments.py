"""The instruments a measured turn runs through: they count and time, and change nothing.

``TimedEmbedder`` times every query embedding; ``CountingBackend`` forwards every backend
call and records its method, the memory source it serves, its start and end within the
turn and what it returned; ``CountingLogger`` keeps what retrieval reports. Proxies rather
than hooks in the engine, so the engine measured is the one users run.
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, cast

from nams_local.backend import Capabilities, MemoryBackend
from nams_local.embeddings import (
    BaseEmbedder,
    Matrix,
    ModelCounts,
    QueryStart,
    SameVectorSpace,
    Vector,
)
from nams_local.models import ConversationSearchHits, EntityDetails, SearchResult

__all__ = ["Call", "CountingBackend", "CountingLogger", "TimedEmbedder"]


class TimedEmbedder(SameVectorSpace, BaseEmbedder):
    """Wraps the real embedder for the measured store: times every query it embeds.

    A ``BaseEmbedder`` itself (in the wrapped one's vector space, so the store sees the
    vectors it was built with), because the store treats one differently: its queries join the
    model thread's batches and a turn's reader job runs its text SQL while the query is
    still being embedded (``SQLiteBackend._turn_vectors``). A plain wrapper made the store
    embed first and read after, so the benchmark measured a path users of the default
    embedder never take. The query cache is this wrapper's (sized as the wrapped one's),
    so ``model_runs`` counts its misses.
    """

    inner: BaseEmbedder

    def __init__(self, inner: BaseEmbedder) -> None:
        super().__init__(query_cache_size=inner.query_cache_info().maxsize)
        self.inner = inner
        self._lock = threading.Lock()
        self.query_ms: list[float] = []

    def _embed(self, texts: list[str]) -> Matrix:
        return self.inner.embed(texts)

    def thread_counts(self) -> ModelCounts:
        return self.inner.thread_counts()

    def query_future(self, text: str, start: QueryStart | None = None) -> Future[Vector]:
        """Timed from the call until the vector is there (at once for a cached query)."""
        began = time.perf_counter()
        future = super().query_future(text, start)
        future.add_done_callback(lambda _: self._took(began))
        return future

    def _took(self, began: float) -> None:
        elapsed = (time.perf_counter() - began) * 1000.0
        with self._lock:
            self.query_ms.append(elapsed)

    def model_runs(self) -> int:
        return self.query_cache_info().misses

    def take(self) -> list[float]:
        with self._lock:
            out, self.query_ms = self.query_ms, []
        return out


@dataclass(frozen=True, slots=True)
class Call:
    """One backend call of a turn; times in ms from the start of the turn."""

    method: str
    source: str
    start_ms: float
    end_ms: float
    items: int
    failed: bool


def _items(result: object) -> int:
    """What a backend call handed back, counted: hits, relationships, steps, ..."""
    if isinstance(result, SearchResult):
        return len(result.items)
    if isinstance(result, EntityDetails):
        return len(result.relationships)
    if isinstance(result, list):
        if result and isinstance(result[0], ConversationSearchHits):
            groups = cast(list[ConversationSearchHits], result)
            return sum(len(g.messages) + len(g.steps) for g in groups)
        return len(result)
    return 0


class CountingBackend:
    """A backend proxy: forwards everything, counts and times every async call.

    ``capabilities`` may differ from the wrapped backend's (to hide ``user_message_search``),
    and ``hidden`` methods are not there at all (``recall_turn``, for the source-by-source
    series; a ``recall_turn`` call is labelled ``turn``: it serves every source at once).
    Calls are labelled with the memory source they serve, using the conversation of the
    current turn: a search or step list in it is ``conversation`` / ``reasoning``, in any
    other conversation ``cross-session``.
    """

    def __init__(
        self,
        inner: MemoryBackend,
        capabilities: Capabilities | None = None,
        hidden: frozenset[str] = frozenset(),
    ) -> None:
        self._inner = inner
        self._capabilities = capabilities if capabilities is not None else inner.capabilities
        self._hidden = hidden
        self.conversation_id = ""
        self.origin = 0.0
        self.calls: list[Call] = []

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    def start_turn(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        self.calls = []
        self.origin = time.perf_counter()

    def _source(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        if method == "search_entities":
            return "long-term"
        if method == "get_entity":
            return "graph"
        if method in ("search_messages", "list_steps"):
            conv = args[0] if args else kwargs.get("conversation_id")
            if conv == self.conversation_id:
                return "conversation" if method == "search_messages" else "reasoning"
            return "cross-session"
        if method in ("search_user_messages", "list_conversations"):
            return "cross-session"
        if method in ("add_message", "persist_turn"):
            return "persist"
        if method == "recall_turn":
            return "turn"
        return "other"

    def __getattr__(self, name: str) -> Any:
        if name in self.__dict__.get("_hidden", ()):
            raise AttributeError(name)  # so ``isinstance(proxy, SupportsTurns)`` is false
        attr = getattr(self._inner, name)
        if not inspect.iscoroutinefunction(attr):
            return attr
        method: Callable[..., Awaitable[Any]] = attr

        async def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            result: Any = None
            failed = True
            try:
                result = await method(*args, **kwargs)
                failed = False
                return result
            finally:
                end = time.perf_counter()
                self.calls.append(
                    Call(
                        method=name,
                        source=self._source(name, args, kwargs),
                        start_ms=(start - self.origin) * 1000.0,
                        end_ms=(end - self.origin) * 1000.0,
                        items=_items(result),
                        failed=failed,
                    )
                )

        return timed


class CountingLogger:
    """A ``MemoryLogger`` that keeps what retrieval reports (it should report nothing)."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def warn(self, message: str, error: BaseException | None = None) -> None:
        self.messages.append(f"{message}: {error}" if error is not None else message)

    def error(self, message: str, error: BaseException | None = None) -> None:
        self.warn(message, error)
