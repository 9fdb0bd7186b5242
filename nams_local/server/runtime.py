"""Which event loop and HTTP parser ``nams-local serve`` runs on, chosen explicitly.

uvicorn's ``"auto"`` picks uvloop and httptools when they import and silently falls back to
asyncio and h11 when they do not; the fallback costs several times the CPU per request
(issue 12's load benchmark) and nothing says it happened. Both packages are declared
dependencies (uvloop not on Windows, where it does not exist), so a plain install gets the
fast pair; this module names the choice so ``serve`` passes it to uvicorn on purpose and
``/healthz`` can report the loop that actually runs (``running_loop``).
"""

from __future__ import annotations

import asyncio
import importlib

__all__ = ["http_choice", "http_protocol", "loop_choice", "running_loop"]


def _importable(module: str) -> bool:
    """Whether ``module`` imports (uvicorn imports it next anyway, so this costs nothing)."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def loop_choice() -> str:
    """uvicorn's ``loop=`` setting: ``"uvloop"`` when it is installed, else ``"asyncio"``."""
    return "uvloop" if _importable("uvloop") else "asyncio"


def http_choice() -> str:
    """uvicorn's ``http=`` setting: ``"httptools"`` when it is installed, else ``"h11"``."""
    return "httptools" if _importable("httptools") else "h11"


def http_protocol() -> type[asyncio.Protocol] | str:
    """What ``serve`` passes as uvicorn's ``http=``: with httptools, its protocol writing
    each response in one call (``one_write.py``); else ``"h11"``."""
    if http_choice() != "httptools":
        return "h11"
    from .one_write import OneWriteHttpToolsProtocol

    return OneWriteHttpToolsProtocol


def running_loop() -> str:
    """The package of the running event loop's class: ``"uvloop"`` or ``"asyncio"``."""
    return type(asyncio.get_running_loop()).__module__.partition(".")[0]
