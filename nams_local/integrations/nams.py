"""``create_nams``: one entry point for the ways memory can wrap a model.

``create_nams(backend, **config).wrap(model, scope)`` gives a ``ChatModel`` with memory
(middleware mode); ``create_nams_provider(...).language_model(model_id)`` is the provider
mode of the TypeScript package (one changed line in app code). The backend is always handed
in, never opened here: ``nams_local.create_nams()`` (the wiring, ``nams_local.config``) is
the one that lets configuration pick it when none is given.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..backend import MemoryBackend
from ..log import MemoryLogger, default_logger
from ..scope import ScopeLike, as_scope
from .chat import ChatModel
from .graph_extraction import ExtractionOptions, extraction_ignored_message
from .hooks import DEFAULT_SESSION_LIMIT, NamsHooks
from .lifecycle import HooksConfig, SystemMessageHandler
from .mcp_tools import McpConfig, PendingTools, connect_mcp_tools
from .middleware import MemoryChatModel, MemoryConfig, MemoryMiddleware
from .tools import MemoryToolSet, build_memory_tools

__all__ = ["Nams", "NamsProvider", "create_nams", "create_nams_provider"]


def _config(options: dict[str, Any]) -> MemoryConfig:
    logger: MemoryLogger | None = options.pop("logger", None)
    known = set(MemoryConfig.__dataclass_fields__) - {"logger"}
    unknown = set(options) - known
    if unknown:
        raise TypeError(f"unknown memory option(s): {', '.join(sorted(unknown))}")
    return MemoryConfig(logger=logger or default_logger(), **options)


class Nams:
    """Memory modes over one backend. Each ``wrap`` gets its own caches (as in the TS SDK)."""

    def __init__(
        self,
        backend: MemoryBackend,
        config: MemoryConfig,
        *,
        extraction_model: ChatModel | None = None,
        extraction_options: ExtractionOptions | Mapping[str, Any] | None = None,
    ) -> None:
        self.backend = backend
        self.config = config
        self.extraction_model = extraction_model
        self.extraction_options = extraction_options
        self._extraction_warned = False

    def warn_extraction_ignored(self, mode: str) -> None:
        """Once per instance: an extraction model does nothing outside tools mode (§6)."""
        if self.extraction_model is not None and not self._extraction_warned:
            self._extraction_warned = True
            self.config.logger.warn(extraction_ignored_message(mode))

    def middleware(self, scope: ScopeLike) -> MemoryMiddleware:
        self.warn_extraction_ignored("middleware")
        return MemoryMiddleware(self.backend, as_scope(scope), self.config)

    def tools(self, scope: ScopeLike) -> MemoryToolSet:
        """``query_memory`` and ``store_memory`` for ``scope``, with their own memory client
        (conversation cache, log flags, graph extractor when ``extraction_model`` is set)."""
        return build_memory_tools(
            self.backend,
            self.config,
            scope,
            extraction_model=self.extraction_model,
            extraction_options=self.extraction_options,
        )

    def tools_with_mcp(self, scope: ScopeLike, mcp: McpConfig | None = None) -> PendingTools:
        """The memory tools of ``tools(scope)`` plus the tools of the MCP server ``mcp``
        (§5.6). Await the result, or use it as ``async with``; see ``mcp_tools``."""
        memory = self.tools(scope)
        return PendingTools(lambda: connect_mcp_tools(memory, mcp, self.config.logger))

    def hooks(
        self,
        scope: ScopeLike | None = None,
        *,
        hooks: HooksConfig | None = None,
        on_system_message: SystemMessageHandler | None = None,
        session_limit: int = DEFAULT_SESSION_LIMIT,
    ) -> NamsHooks:
        """Hooks mode (§7): ``load_session``, ``prepare``, ``with_hooks``, ``on_finish``,
        ``end`` and the lifecycle ``hooks``. ``scope`` gives default ``user_id`` /
        ``conversation_id`` (each method also takes them per call)."""
        self.warn_extraction_ignored("hooks")
        return NamsHooks(
            self.backend,
            self.config,
            scope,
            hooks=hooks,
            on_system_message=on_system_message,
            session_limit=session_limit,
        )

    def wrap(self, model: ChatModel, scope: ScopeLike) -> MemoryChatModel:
        """``model`` with memory for ``scope`` (a ``Scope`` or ``{"user_id": ...}``)."""
        return MemoryChatModel(model, self.middleware(scope))

    async def aclose(self) -> None:
        await self.backend.aclose()


def create_nams(backend: MemoryBackend, **config: Any) -> Nams:
    """Options: ``max_memories`` (6, capped at 12), ``persist_interactions`` (True),
    ``cross_session_limit`` (5), ``graph_expansion_limit`` (2), ``lookup_timeout`` (10 s),
    ``workspace_id``, ``logger`` (anything with ``warn``/``error``); for ``.tools()`` only:
    ``extraction_model`` (a ``ChatModel`` for graph extraction) and ``extraction_options``
    (``{"skip_entity": fn}`` or ``ExtractionOptions``)."""
    options = dict(config)
    extraction_model: ChatModel | None = options.pop("extraction_model", None)
    extraction_options = options.pop("extraction_options", None)
    return Nams(
        backend,
        _config(options),
        extraction_model=extraction_model,
        extraction_options=extraction_options,
    )


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
    backend: MemoryBackend,
    **config: Any,
) -> NamsProvider:
    return NamsProvider(base_provider, scope, create_nams(backend, **config))
