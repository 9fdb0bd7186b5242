"""How a ``nams-local`` command fails: one line on stderr and a non-zero exit.

A person who gives a bad path, a foreign file, a wrong environment variable or a port out
of range needs to read what is wrong, not a 123-line traceback (issue 15, item 6). Every
command runs under ``guarded``: an error that a person can cause becomes
``nams-local <command>: <what is wrong>`` with exit status 1 (2 for bad usage);
``--debug`` re-raises it so the traceback shows. Argument errors are one line too
(``OneLineParser``), not argparse's usage block.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import NoReturn

from ..errors import NamsError

__all__ = ["OneLineParser", "guarded", "port_number"]

#: What an extra's missing module means, by top-level module name.
_EXTRAS = {"mcp": "mcp", "openai": "openai", "sentence_transformers": "sentence-transformers"}


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on stderr (exit status 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def port_number(text: str) -> int:
    """A TCP port, 0 (any free one) to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} is out of range (0 to 65535)")
    return port


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _describe(exc: BaseException) -> str:
    if isinstance(exc, NamsError):
        return exc.message
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        top = exc.name.split(".")[0]
        extra = _EXTRAS.get(top)
        if extra is not None:
            return f"needs the {extra} extra: pip install 'nams-local[{extra}]'"
        return f"a module is missing: {exc.name}"
    if isinstance(exc, ImportError):
        return str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror}{where}"
    text = str(exc) or type(exc).__name__
    if isinstance(exc, ValueError):
        return text
    return f"unexpected {type(exc).__name__}: {text} (--debug shows the traceback)"


def guarded(command: str, func: Callable[[], int], *, debug: bool) -> int:
    """``func()``'s exit status; a failure becomes one line on stderr and status 1."""
    try:
        return func()
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if debug:
            raise
        print(f"nams-local {command}: {_one_line(_describe(exc))}", file=sys.stderr)
        return 1
