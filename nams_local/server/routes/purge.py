"""``POST /v1/users/{userId}/purge``: forget one user of the caller's workspace (extension).

Hosted NAMS has no route that deletes a user (its ``/v1/users/me/...`` routes are about
the caller's own account), so this one lives beside the other per-user extension,
``POST /v1/users/{userId}/messages/search``. It is a ``POST`` to a verb, not a ``DELETE`` of
``/v1/users/{userId}``: the user is not a resource this API creates, a purge is an action
with a report, and ``DELETE /v1/users/me`` must never read as "delete my account".

Authenticated like every ``/v1`` route; the key's workspace is the only one touched, so a
key of one workspace cannot purge a user of another (the same user id there is another
user). The user id is bounded (``purge_report.MAX_USER_ID_CHARS``): longer is a 400 with
nothing deleted. See docs/purge.md and wire decision P1.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path

from nams_local.purge_report import PurgeReport

from ..deps import Backend
from .base import EXTENSION, answers, api_router

__all__ = ["router"]

router = api_router(tags=["Extensions"])


#: ``:path``: a user id may hold ``/`` (sent as ``%2F``, which the server decodes before
#: routing); the route still ends in ``/purge``, so nothing else is matched.
@router.post("/users/{userId:path}/purge", openapi_extra=EXTENSION, **answers(PurgeReport, 501))
async def purge_user(
    user_id: Annotated[str, Path(alias="userId")], backend: Backend
) -> dict[str, Any]:
    """Delete every trace of the user in the caller's workspace and compact the file; the
    answer says what went and what (if anything) could not."""
    return (await backend.purge_user(user_id)).to_wire()
