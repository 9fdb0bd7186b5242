"""``create_nams``: one entry point for the ways memory can wrap a model.

``create_nams(backend=None, **config).wrap(model, scope)`` gives a ``ChatModel`` with
memory (middleware mode); ``create_nams_provider(...).language_model(model_id)`` is the
provider mode of the TypeScript package (one changed line in app code). With
``backend=None`` configuration decides which backend: ``open_backend()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..backend import MemoryBackend
from ..log import MemoryLogger, default_logger
from ..scope import ScopeLike, as_scope
from .chat import ChatModel
from .middleware import MemoryChatModel, MemoryConfig, MemoryMiddleware

__all__ = ["Nams", "NamsProvider", "create_nams", "create_nams_provider"]


def _config(options: dict[str, Any]) -> MemoryConfig:
    logger: MemoryLogger | None = options.pop("logger", None)
    known = set(MemoryConfig.__dataclass_fields__) - {"logger"}
    unknown = set(options) - known
    if unknown:
        raise TypeError(f"unknown memory option(s): {', '.join(sorted(unknown))}")
    return MemoryConfig(logger=logger or default_logger(), **options)


def _open_default() -> MemoryBackend:
    from .. import config

    backend: MemoryBackend = config.open_backend()
    return backend


class Nams:
    """Memory modes over one backend. Each ``wrap`` gets its own caches (as in the TS SDK)."""

    def __init__(self, backend: MemoryBackend, config: MemoryConfig) -> None:
        self.backend = backend
        self.config = config

    def middleware(self, scope: ScopeLike) -> MemoryMiddleware:
        return MemoryMiddleware(self.backend, as_scope(scope), self.config)

    def wrap(self, model: ChatModel, scope: ScopeLike) -> MemoryChatModel:
        """``model`` with memory for ``scope`` (a ``Scope`` or ``{"user_id": ...}``)."""
        return MemoryChatModel(model, self.middleware(scope))

    async def aclose(self) -> None:
        await self.backend.aclose()


def create_nams(backend: MemoryBackend | None = None, **config: Any) -> Nams:
    """Options: ``max_memories`` (6, capped at 12), ``persist_interactions`` (True),
    ``cross_session_limit`` (5), ``graph_expansion_limit`` (2), ``lookup_timeout`` (10 s),
    ``workspace_id``, ``logger`` (anything with ``warn``/``error``)."""
    return Nams(backend if backend is not None else _open_default(), _config(dict(config)))


class NamsProvider:
    """Provider mode: ``language_model(model_id)`` wraps ``base_provider(model_id)``."""

    def __init__(
        self,
        base_provider: Callable[[str], ChatModel],
        scope: ScopeLike,
        nams: Nams,
    ) -> None:
        self.base_provider = base_provider
        self.scope = as_scope(scope)
        self.nams = nams

    def language_model(self, model_id: str) -> MemoryChatModel:
        """A new memory-wrapped model (own caches) per call, as in the TS provider."""
        return self.nams.wrap(self.base_provider(model_id), self.scope)

    __call__ = language_model


def create_nams_provider(
    *,
    base_provider: Callable[[str], ChatModel],
    scope: ScopeLike,
    backend: MemoryBackend | None = None,
    **config: Any,
) -> NamsProvider:
    return NamsProvider(base_provider, scope, create_nams(backend, **config))
