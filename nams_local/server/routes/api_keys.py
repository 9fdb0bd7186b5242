"""API-key management: ``/v1/auth/api-keys/...``, owned by the calling principal.

A key minted here authenticates afterwards and opens its creator's workspace. Other
owners' keys answer 404 exactly like unknown ones, as hosted does; a revoked key answers
410 on reveal and rotate.
"""

from __future__ import annotations

import re
from typing import Any

from nams_local.errors import InvalidInputError

from .. import responses as R
from ..bodies import LABEL_PATTERN, MAX_LABEL_LENGTH, CreateApiKeyBody
from ..deps import Caller, Keys
from ..wire import status
from .base import answers, api_router

__all__ = ["router"]

router = api_router(tags=["Auth"])


def _has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(char) <= 0xDFFF for char in text)


@router.get("/auth/api-keys", **answers(R.ApiKeyList))
async def list_api_keys(caller: Caller, keys: Keys) -> dict[str, Any]:
    return {"keys": [record.to_wire() for record in await keys.list_owned(caller.owner)]}


@router.post("/auth/api-keys", status_code=201, **answers(R.NewApiKey, status=201))
async def create_api_key(body: CreateApiKeyBody, caller: Caller, keys: Keys) -> dict[str, Any]:
    label = body.label.strip()
    if (
        len(body.label) > MAX_LABEL_LENGTH
        or not re.fullmatch(LABEL_PATTERN, body.label)
        or _has_surrogate(body.label)
    ):
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


@router.delete("/auth/api-keys/{id}", **answers(R.StatusResponse))
async def revoke_api_key(id: str, caller: Caller, keys: Keys) -> dict[str, Any]:
    await keys.revoke(caller.owner, id)
    return status("revoked")


@router.get("/auth/api-keys/{id}/reveal", **answers(R.RevealedKey, 410))
async def reveal_api_key(id: str, caller: Caller, keys: Keys) -> dict[str, Any]:
    record = await keys.reveal(caller.owner, id)
    return {"id": record.id, "key": record.key, "label": record.label}


@router.post("/auth/api-keys/{id}/rotate", **answers(R.RotatedKey, 410))
async def rotate_api_key(id: str, caller: Caller, keys: Keys) -> dict[str, Any]:
    record = await keys.rotate(caller.owner, id)
    return {**record.to_wire(), "key": record.key, "rotatedFrom": id}
