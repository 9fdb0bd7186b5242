"""Who is calling and which workspace they may touch, decided from two headers.

``Authorization`` carries a bearer token (hosted keys are sent as ``Bearer nams_…``; the
formal scheme is a bare header value, so the prefix is optional here). A token resolves to
a ``Principal`` in one of three ways, first match wins:

1. a key minted through ``/v1/auth/api-keys`` — its owner and its creator's workspace
   (revoked or expired keys are refused even in open mode, so rotation really locks out);
2. a key given to ``nams-local serve --api-key`` — its own owner, and the workspace named
   in ``KEY=WORKSPACE`` or one derived from the key;
3. with no configured keys (local development, a CI fake) any token — its own owner and a
   workspace derived from a hash of the token, so every token is an isolated tenant.

``X-Workspace-Id`` then picks another workspace *of the same owner*: the engine name is
``<owner>/<header>``, so knowing someone's workspace id never opens their data.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from nams_local.errors import AuthenticationError, InvalidInputError

from .keystore import ApiKeyStore, key_digest

__all__ = [
    "MAX_TOKEN_LENGTH",
    "MAX_WORKSPACE_ID_LENGTH",
    "Authenticator",
    "Principal",
    "bearer_token",
    "derived_workspace",
    "parse_api_key_option",
]

MAX_TOKEN_LENGTH = 4096
MAX_WORKSPACE_ID_LENGTH = 200


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller.

    ``owner`` owns the API keys the caller mints; ``workspace`` is the engine's workspace
    name; ``workspace_id`` is what the client sees (``workspaceId``) and may send back.
    """

    owner: str
    workspace: str
    workspace_id: str

    @property
    def workspace_hash(self) -> str:
        """A short, stable tag for logs that names the workspace without revealing it."""
        return _workspace_tag(self.workspace)


@functools.lru_cache(maxsize=4096)
def _workspace_tag(workspace: str) -> str:
    """``Principal.workspace_hash``, remembered: the access log asks on every request, and
    a server sees few workspaces (bounded anyway, for open mode's any-token tenants)."""
    return hashlib.sha256(workspace.encode("utf-8")).hexdigest()[:12]


def _tagged(tag: str, token: str, prefix: str) -> str:
    digest = hashlib.sha256(f"nams-local/{tag}\0{token}".encode()).hexdigest()
    return f"{prefix}{digest[:24]}"


def derived_workspace(token: str) -> str:
    """The workspace a bare token (or a configured key without ``=WORKSPACE``) opens.

    The same in open mode and in keys mode, so turning ``--api-key`` on keeps the data.
    """
    return _tagged("workspace", token, "ws-")


def _owner(token: str) -> str:
    return _tagged("owner", token, "user-")


def bearer_token(authorization: str | None) -> str:
    """The token of an ``Authorization`` header, with or without the ``Bearer `` prefix."""
    if authorization is None or not authorization.strip():
        raise AuthenticationError("missing API key: send 'Authorization: Bearer <key>'")
    value = authorization.strip()
    scheme, _, rest = value.partition(" ")
    if scheme.lower() == "bearer":
        value = rest.strip()
    if not value:
        raise AuthenticationError("missing API key: send 'Authorization: Bearer <key>'")
    if len(value) > MAX_TOKEN_LENGTH or any(ch.isspace() for ch in value):
        raise AuthenticationError("malformed Authorization header")
    return value


def parse_api_key_option(option: str) -> tuple[str, str | None]:
    """``KEY`` or ``KEY=WORKSPACE`` (the ``--api-key`` syntax) as ``(key, workspace)``.

    Minted keys never contain ``=``; a key that ends in ``=`` (base64 padding) is a key.
    """
    key, sep, workspace = option.rpartition("=")
    if not sep or not key or not workspace.strip():
        key, workspace = option, ""
    key = key.strip()
    if not key or any(ch.isspace() for ch in key):
        raise ValueError(f"invalid API key option {option!r}")
    return key, (workspace.strip() or None)


def _check_workspace_id(value: str) -> str:
    value = value.strip()
    if len(value) > MAX_WORKSPACE_ID_LENGTH or not value.isprintable():
        raise InvalidInputError(
            f"invalid X-Workspace-Id: at most {MAX_WORKSPACE_ID_LENGTH} printable characters"
        )
    return value


class Authenticator:
    """Turns request headers into a ``Principal`` (or ``AuthenticationError``).

    Args:
        keys: the minted-key table.
        configured: ``--api-key`` values: keys, ``KEY=WORKSPACE`` strings, or a mapping
            of key to workspace (``None`` = derive one from the key). Empty = open mode.
    """

    def __init__(
        self,
        keys: ApiKeyStore,
        configured: Iterable[str] | Mapping[str, str | None] = (),
    ) -> None:
        self._keys = keys
        pairs: Iterable[tuple[str, str | None]]
        if isinstance(configured, Mapping):
            pairs = configured.items()
        else:
            pairs = [parse_api_key_option(option) for option in configured]
        # Indexed by digest, so a lookup never compares raw secrets character by character.
        self._configured: dict[str, Principal] = {}
        for key, workspace in pairs:
            name = workspace or derived_workspace(key)
            self._configured[key_digest(key)] = Principal(_owner(key), name, name)

    @property
    def open_mode(self) -> bool:
        """``True`` when no key is configured and any bearer token is accepted."""
        return not self._configured

    async def authenticate(
        self, authorization: str | None, workspace_header: str | None = None
    ) -> Principal:
        token = bearer_token(authorization)
        principal = await self._base(token)
        if workspace_header is None or not workspace_header.strip():
            return principal
        wanted = _check_workspace_id(workspace_header)
        if wanted == principal.workspace_id:
            return principal
        return Principal(principal.owner, f"{principal.owner}/{wanted}", wanted)

    async def _base(self, token: str) -> Principal:
        record = await self._keys.find_for_request(token)
        if record is not None:
            if record.revoked:
                raise AuthenticationError("API key revoked")
            if record.expired(self._keys.now()):
                raise AuthenticationError("API key expired: rotate it")
            return Principal(record.owner, record.workspace, record.workspace_id)
        if self._configured:
            configured = self._configured.get(key_digest(token))
            if configured is None:
                raise AuthenticationError("invalid API key")
            return configured
        name = derived_workspace(token)
        return Principal(_owner(token), name, name)
