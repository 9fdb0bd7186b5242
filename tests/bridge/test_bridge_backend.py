"""The SQLite engine meets the bridge's protocols (``nams_local/bridge/backend.py``).

Nothing implements them by name, so a renamed engine method or a changed parameter would
otherwise surface only as a 500 in one bridge method. mypy checks the assignments below
structurally; the signature walk checks the same at run time, so it fails without mypy too.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from backends.sqlite import SQLiteBackend
from backends.sqlite.legacy import LegacyMemory
from nams_local.bridge import BRIDGE_WORKSPACE, open_bridge_backend
from nams_local.bridge.backend import BridgeBackend, LegacyApi


def _protocol_methods(protocol: type) -> dict[str, Callable[..., Any]]:
    return {
        name: value
        for name, value in vars(protocol).items()
        if inspect.isfunction(value) and not name.startswith("_")
    }


def _accepts(impl: Callable[..., Any], wanted: Callable[..., Any]) -> list[str]:
    """What ``impl`` lacks to be called the way ``wanted`` declares (empty when nothing)."""
    have = inspect.signature(impl).parameters
    need = inspect.signature(wanted).parameters
    problems = [
        f"no parameter {name!r} ({param.kind.description})"
        for name, param in need.items()
        if name not in have or have[name].kind != param.kind
    ]
    problems += [
        f"{name!r} must have a default"
        for name, param in have.items()
        if name not in need
        and param.default is inspect.Parameter.empty
        and param.kind not in (param.VAR_POSITIONAL, param.VAR_KEYWORD)
    ]
    problems += [
        f"{name!r} needs a default"
        for name, param in need.items()
        if param.default is not inspect.Parameter.empty
        and name in have
        and have[name].default is inspect.Parameter.empty
    ]
    return problems


def test_every_legacy_call_the_bridge_makes_exists_on_the_engine() -> None:
    wanted = _protocol_methods(LegacyApi)
    assert len(wanted) >= 28  # the walk below really looks at the protocol's methods
    problems = {
        name: _accepts(getattr(LegacyMemory, name), fn)
        if inspect.iscoroutinefunction(getattr(LegacyMemory, name, None))
        else ["missing or not a coroutine function"]
        for name, fn in wanted.items()
    }
    assert {name: p for name, p in problems.items() if p} == {}


async def test_the_bridge_backend_is_the_engine_with_its_legacy_api() -> None:
    engine: BridgeBackend = SQLiteBackend(":memory:", embeddings=False)  # checked by mypy
    await engine.aclose()
    backend: BridgeBackend = open_bridge_backend(":memory:")
    try:
        assert isinstance(backend, SQLiteBackend)
        assert isinstance(backend.legacy, LegacyMemory)
        assert backend.workspace == BRIDGE_WORKSPACE
    finally:
        await backend.aclose()
