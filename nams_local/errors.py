"""Typed errors every backend raises, each carrying the HTTP status it maps to.

One base, ``NamsError`` (deliberately not Python's built-in ``MemoryError``), so callers
can catch everything a backend may raise in one clause, and the server can turn any of
them into the hosted ``{"error": "..."}`` body with the right status.
"""

from __future__ import annotations

__all__ = [
    "AuthenticationError",
    "BackendUnavailableError",
    "DatabaseFileError",
    "InvalidInputError",
    "LimitExceededError",
    "NamsError",
    "NotFoundError",
    "NotSupportedError",
    "TooManyRequestsError",
]


class NamsError(Exception):
    """Base of every nams-local error."""

    status_code: int = 500

    def __init__(
        self, message: str, *, request_id: str | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.request_id = request_id
        #: Seconds after which trying again may succeed (the server's ``Retry-After``).
        self.retry_after = retry_after


class NotFoundError(NamsError):
    """The id does not exist (in this workspace)."""

    status_code = 404


class InvalidInputError(NamsError):
    """The request was refused as invalid; nothing was written."""

    status_code = 400


class LimitExceededError(InvalidInputError):
    """The request went past a bound (time, memory, rows); the message names the bound.

    A ``400`` like any refused input: asking again the same way meets the same bound."""


class TooManyRequestsError(NamsError):
    """One workspace has too many requests of one kind in flight; retry later (``429``)."""

    status_code = 429


class AuthenticationError(NamsError):
    """The credentials were missing or refused."""

    status_code = 401


class NotSupportedError(NamsError):
    """The operation is not available on this backend (see ``Capabilities``)."""

    status_code = 501


class BackendUnavailableError(NamsError):
    """The backend could not be reached or is overloaded; retrying later may work."""

    status_code = 503


class DatabaseFileError(BackendUnavailableError):
    """The database file cannot be used: missing directory, not a database, truncated or
    damaged. Raised on open (one line naming the path and the problem) and when damage is
    found later (the server answers 503 with the message, never a 500)."""
