"""``wrap_openai``: an OpenAI client whose chat completions have memory.

``wrap_openai(client, scope={"user_id": "alex"}).chat.completions.create(...)`` behaves
like the real call — same arguments, same ``ChatCompletion`` or stream of chunks, sync or
async — with the memory block injected into the prompt and the turn stored afterwards.
Everything else on the client passes through untouched.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any

from ..backend import MemoryBackend
from ..scope import ScopeLike
from .middleware import MemoryMiddleware, Turn, step_text
from .nams import create_nams
from .openai_model import is_async_callable, response_from_completion
from .sync import BackgroundLoop, shared_loop

__all__ = ["wrap_openai"]


class _Delegate:
    """Everything not overridden comes from the wrapped object."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Accumulator:
    """Text and tool-call presence across streamed ``ChatCompletionChunk`` objects."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.handed_off = False

    def add(self, chunk: Any) -> None:
        for choice in getattr(chunk, "choices", None) or []:
            delta = getattr(choice, "delta", None)
            if delta is None:
                continue
            if delta.content:
                self.texts.append(delta.content)
            if delta.tool_calls:
                self.handed_off = True

    @property
    def text(self) -> str:
        return "" if self.handed_off else "".join(self.texts)


def _messages(messages: Sequence[Any]) -> list[dict[str, Any]]:
    return [dict(m) if isinstance(m, Mapping) else m for m in messages]


class _SyncStream:
    """Iterates the upstream stream; stores the turn only when it is read to the end."""

    def __init__(
        self, upstream: Any, middleware: MemoryMiddleware, turn: Turn, loop: BackgroundLoop
    ) -> None:
        self._upstream = upstream
        self._iter: Iterator[Any] = iter(upstream)
        self._middleware = middleware
        self._turn = turn
        self._loop = loop
        self._acc = _Accumulator()
        self._done = False

    def __iter__(self) -> _SyncStream:
        return self

    def __next__(self) -> Any:
        try:
            chunk = next(self._iter)
        except StopIteration:
            if not self._done:
                self._done = True
                self._loop.run(self._middleware.finish(self._turn, self._acc.text))
            raise
        self._acc.add(chunk)
        return chunk

    def close(self) -> None:
        self._done = True
        close = getattr(self._upstream, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> _SyncStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._upstream, name)


class _AsyncStream:
    def __init__(self, upstream: Any, middleware: MemoryMiddleware, turn: Turn) -> None:
        self._upstream = upstream
        self._iter: AsyncIterator[Any] = upstream.__aiter__()
        self._middleware = middleware
        self._turn = turn
        self._acc = _Accumulator()
        self._done = False

    def __aiter__(self) -> _AsyncStream:
        return self

    async def __anext__(self) -> Any:
        try:
            chunk = await self._iter.__anext__()
        except StopAsyncIteration:
            if not self._done:
                self._done = True
                await self._middleware.finish(self._turn, self._acc.text)
            raise
        self._acc.add(chunk)
        return chunk

    async def close(self) -> None:
        self._done = True
        close = getattr(self._upstream, "close", None)
        if close is not None:
            result = close()
            if inspect.isawaitable(result):
                await result

    async def __aenter__(self) -> _AsyncStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._upstream, name)


class _SyncCompletions(_Delegate):
    def __init__(self, inner: Any, middleware: MemoryMiddleware, loop: BackgroundLoop) -> None:
        super().__init__(inner)
        self._middleware = middleware
        self._loop = loop

    def create(self, *, messages: Sequence[Any], stream: bool = False, **kwargs: Any) -> Any:
        turn = self._loop.run(self._middleware.prepare(_messages(messages)))
        if stream:
            upstream = self._inner.create(messages=turn.prompt, stream=True, **kwargs)
            return _SyncStream(upstream, self._middleware, turn, self._loop)
        completion = self._inner.create(messages=turn.prompt, **kwargs)
        text = step_text(response_from_completion(completion))
        self._loop.run(self._middleware.finish(turn, text))
        return completion


class _AsyncCompletions(_Delegate):
    def __init__(self, inner: Any, middleware: MemoryMiddleware) -> None:
        super().__init__(inner)
        self._middleware = middleware

    async def create(self, *, messages: Sequence[Any], stream: bool = False, **kwargs: Any) -> Any:
        turn = await self._middleware.prepare(_messages(messages))
        if stream:
            upstream = await self._inner.create(messages=turn.prompt, stream=True, **kwargs)
            return _AsyncStream(upstream, self._middleware, turn)
        completion = await self._inner.create(messages=turn.prompt, **kwargs)
        await self._middleware.finish(turn, step_text(response_from_completion(completion)))
        return completion


class _Chat(_Delegate):
    def __init__(self, inner: Any, completions: Any) -> None:
        super().__init__(inner)
        self.completions = completions


class _Client(_Delegate):
    def __init__(self, inner: Any, completions: Any) -> None:
        super().__init__(inner)
        self.chat = _Chat(inner.chat, completions)


def wrap_openai(
    client: Any,
    *,
    scope: ScopeLike,
    backend: MemoryBackend,
    **config: Any,
) -> Any:
    """``client`` (``OpenAI`` or ``AsyncOpenAI``) with memory for ``scope``.

    Options as for ``create_nams``. A sync client runs the memory work on a background
    event loop, so it works from threads that already run a loop too.
    """
    middleware = create_nams(backend, **config).middleware(scope)
    completions = client.chat.completions
    if is_async_callable(completions.create):
        return _Client(client, _AsyncCompletions(completions, middleware))
    return _Client(client, _SyncCompletions(completions, middleware, shared_loop()))
