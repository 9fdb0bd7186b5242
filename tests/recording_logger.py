"""A logger that keeps what it was told, for tests of the fail-safe paths: a memory failure
in a model call's request path must be a logged warning, never an error."""

from __future__ import annotations

__all__ = ["RecordingLogger"]


class RecordingLogger:
    def __init__(self) -> None:
        self.records: list[tuple[str, str, BaseException | None]] = []

    def warn(self, message: str, error: BaseException | None = None) -> None:
        self.records.append(("warn", message, error))

    def error(self, message: str, error: BaseException | None = None) -> None:
        self.records.append(("error", message, error))

    @property
    def warnings(self) -> list[str]:
        return [m for level, m, _ in self.records if level == "warn"]
