"""What ``purge_user`` did: the one type every backend, the route and the CLI share.

A purge is the answer to "forget me": the caller needs to know it finished, what went,
and — on a backend that cannot delete everything (hosted NAMS) — exactly what is left, so
the rest can be asked for another way. Hence a report, never a bare ``None``.
"""

from __future__ import annotations

from pydantic import Field, computed_field

from .errors import InvalidInputError
from .models import NamsModel

__all__ = ["MAX_USER_ID_CHARS", "PurgeReport", "check_user_id"]

#: A user id to purge is at most this many characters. Ids are free text elsewhere, but a
#: purge names one in a URL path: 1024 characters stay under every server's request-line
#: limit even percent-encoded (4-byte characters: 12 KiB), so an over-long id is a clear
#: 400 from us, never a proxy's or uvicorn's bare refusal.
MAX_USER_ID_CHARS = 1024


def check_user_id(user_id: str | None) -> str:
    """The user id a purge names: a non-blank string of at most ``MAX_USER_ID_CHARS``.
    Not stripped: ``" alice"`` and ``"alice"`` are different users, and a purge must
    delete exactly the user named."""
    if not isinstance(user_id, str) or not user_id.strip():
        raise InvalidInputError("user_id is required: name the user to purge")
    if len(user_id) > MAX_USER_ID_CHARS:
        raise InvalidInputError(
            f"user_id is too long: at most {MAX_USER_ID_CHARS} characters, got {len(user_id)}"
        )
    return user_id


class PurgeReport(NamsModel):
    """The outcome of purging one user of one workspace."""

    user_id: str
    #: Rows deleted, by kind (``conversations``, ``messages``, ``entities``, …); kinds
    #: with nothing to delete are listed with 0, so a report always names what was looked at.
    deleted: dict[str, int] = Field(default_factory=dict)
    #: Entities the user's messages mentioned that other data also holds (another user's
    #: mentions or relationships, or an explicit API write): kept, minus the user's
    #: mentions, relationships and provenance.
    kept_shared_entities: int = 0
    #: What could not be deleted, one sentence each (empty: nothing of the user is left).
    not_deleted: list[str] = Field(default_factory=list)
    #: The file was compacted (FTS merged, VACUUM, WAL truncated) so the deleted text is
    #: gone from the bytes on disk too; ``False`` for a store in memory or a remote one.
    compacted: bool = False
    #: Seconds the compaction held the writer (every workspace of the file waits for it).
    compaction_seconds: float | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def complete(self) -> bool:
        """Nothing of the user is left that this backend knows of."""
        return not self.not_deleted
