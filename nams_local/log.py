"""Where non-fatal memory errors go.

Memory must never be the reason a model call fails, so every retrieval and persistence
failure in the request path becomes one call on a ``MemoryLogger``. The default writes to
the stdlib logger ``nams_local`` (message prefixed ``[nams]`` as in the TypeScript
provider); pass any object with ``warn`` and ``error`` to send them elsewhere.
"""

from __future__ import annotations

import logging
from typing import Protocol, runtime_checkable

__all__ = ["LOGGER_NAME", "MemoryLogger", "StdlibMemoryLogger", "default_logger"]

LOGGER_NAME = "nams_local"


@runtime_checkable
class MemoryLogger(Protocol):
    def warn(self, message: str, error: BaseException | None = None) -> None: ...

    def error(self, message: str, error: BaseException | None = None) -> None: ...


class StdlibMemoryLogger:
    """``[nams] <message>: <error>`` at WARNING / ERROR on a stdlib logger."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self.logger = logger or logging.getLogger(LOGGER_NAME)

    @staticmethod
    def _text(message: str, error: BaseException | None) -> str:
        if error is None:
            return f"[nams] {message}"
        detail = str(error) or type(error).__name__
        return f"[nams] {message}: {detail}"

    def warn(self, message: str, error: BaseException | None = None) -> None:
        self.logger.warning(self._text(message, error))

    def error(self, message: str, error: BaseException | None = None) -> None:
        self.logger.error(self._text(message, error))


def default_logger() -> MemoryLogger:
    return StdlibMemoryLogger()
