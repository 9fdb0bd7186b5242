"""API-key management: ``/v1/auth/api-keys/...``, owned by the calling principal.

A key minted here authenticates afterwards and opens its creator's workspace. Other
owners' keys answer 404 exactly like unknown ones, as hosted does; a revoked key answers
410 on reveal and rotate.
"""

from __future__ import annotations

from typing import Any

from nams_local.errors import InvalidInputError

from ..bodies import CreateApiKeyBody
from ..deps import Caller, Keys
from ..wire import status
from .base import api_router

__all__ = ["router"]

router = api_router(tags=["Auth"])

#: Labels are for people reading a list; longer ones are refused rather than truncated.
MAX_LABEL_LENGTH = 200


@router.get("/auth/api-keys")
async def list_api_keys(caller: Caller, keys: Keys) -> dict[str, Any]:
    return {"keys": [record.to_wire() for record in await keys.list_owned(caller.owner)]}


@router.post("/auth/api-keys", status_code=201)
async def create_api_key(body: CreateApiKeyBody, caller: Caller, keys: Keys) -> dict[str, Any]:
    label = body.label.strip()
    if not label or len(label) > MAX_LABEL_LENGTH or not label.isprintable():
        raise InvalidInputError(
            f"Missing required fields: label (1 to {MAX_LABEL_LENGTH} printable characters)"
        )
    record = await keys.create(
        label=label,
        scopes=body.scopes or [],
        owner=caller.owner,
        workspace=caller.workspace,
        workspace_id=caller.workspace_id,
    )
    return {**record.to_wire(), "key": record.key}


@router.delete("/auth/api-keys/{id}")
async def revoke_api_key(id: str, caller: Caller, keys: Keys) -> dict[str, Any]:
    await keys.revoke(caller.owner, id)
    return status("revoked")


@router.get("/auth/api-keys/{id}/reveal")
async def reveal_api_key(id: str, caller: Caller, keys: Keys) -> dict[str, Any]:
    record = await keys.reveal(caller.owner, id)
    return {"id": record.id, "key": record.key, "label": record.label}


@router.post("/auth/api-keys/{id}/rotate")
async def rotate_api_key(id: str, caller: Caller, keys: Keys) -> dict[str, Any]:
    record = await keys.rotate(caller.owner, id)
    return {**record.to_wire(), "key": record.key, "rotatedFrom": id}
