"""``HostedBase``: what every group of hosted routes shares (HTTP client, capabilities).

The route groups (``conversations``, ``entities``, ``reasoning``, ``extensions``) are
mixins over this class and ``HostedBackend`` puts them together, so each module stays
about one part of the API.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Mapping
from typing import Any, Literal

import httpx

from nams_local.backend import Capabilities
from nams_local.errors import AuthenticationError, NotFoundError, NotSupportedError
from nams_local.models import MetadataValue, SearchMode
from nams_local.settings import DEFAULT_ENDPOINT, WORKSPACE_ENV
from nams_local.validation import check_scalar_map, check_string_map

from .capabilities import HOSTED_CAPABILITIES, ServerCapabilities, read_capabilities
from .errors import error_for_response
from .rest import RestClient
from .retry import RetryPolicy

logger = logging.getLogger("nams_local.hosted")

__all__ = ["DEFAULT_ENDPOINT", "WORKSPACE_ENV", "CapabilityName", "HostedBase"]

CapabilityName = Literal[
    "relationship_writes",
    "entity_by_name",
    "user_message_search",
    "graph_neighbourhood",
    "vector_search",
    "cypher_query",
    "relationship_validity",
    "message_delete",
]
#: Statuses of ``GET /capabilities`` that mean "this server has no such route".
_NO_PROBE_ROUTE = frozenset({404, 405, 501})


class HostedBase:
    """Connection, retry policy and the cached capability probe.

    Args:
        api_key: sent as ``Authorization: Bearer <api_key>``.
        endpoint: the REST root, ``/v1`` included.
        workspace_id: sent as ``X-Workspace-Id``; default ``$MEMORY_WORKSPACE_ID``.
        timeout: seconds per attempt (connect, read, write and pool each).
        max_retries: retries after the first attempt (see ``retry.RetryPolicy``).
        transport: any httpx transport, e.g. ``httpx.ASGITransport(app=...)``.
        retry_budget: seconds from the first attempt after which no retry starts.
        backoff_base, backoff_max: the exponential backoff's first and largest wait.
        capabilities: the server's capabilities when already known (e.g. from another
            client's ``server_capabilities``): no probe is made.
    """

    def __init__(
        self,
        api_key: str,
        *,
        endpoint: str = DEFAULT_ENDPOINT,
        workspace_id: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        transport: httpx.AsyncBaseTransport | None = None,
        retry_budget: float = 60.0,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
        capabilities: ServerCapabilities | Capabilities | None = None,
    ) -> None:
        if not isinstance(api_key, str) or not api_key.strip():
            raise AuthenticationError("an API key is required (MEMORY_API_KEY)")
        if workspace_id is None:
            workspace_id = os.environ.get(WORKSPACE_ENV) or None
        self.endpoint = endpoint.rstrip("/")
        self.workspace_id = workspace_id
        self._rest = RestClient(
            api_key.strip(),
            endpoint=self.endpoint,
            workspace_id=workspace_id,
            timeout=timeout,
            policy=RetryPolicy(
                max_retries=max_retries,
                budget=retry_budget,
                backoff_base=backoff_base,
                backoff_max=backoff_max,
            ),
            transport=transport,
        )
        if isinstance(capabilities, Capabilities):
            capabilities = ServerCapabilities(capabilities)
        self._server: ServerCapabilities | None = capabilities
        self._probe_lock = asyncio.Lock()
        self._metadata_warned = False
        self._validity_warned = False

    # -- capabilities ----------------------------------------------------------------
    @property
    def capabilities(self) -> Capabilities:
        """The probed capabilities, or hosted NAMS's until ``probe_capabilities`` ran."""
        return self._server.capabilities if self._server else HOSTED_CAPABILITIES

    @property
    def server_capabilities(self) -> ServerCapabilities | None:
        """The probe's full answer (None before probing), to hand to another client."""
        return self._server

    @property
    def search_modes(self) -> bool:
        """Whether the server honours a search's ``mode`` (known after probing)."""
        return self._server.search_modes if self._server else False

    @property
    def keeps_message_metadata(self) -> bool:
        """Whether the server stores message ``metadata`` (known after probing): only one
        that advertises the extension fields; toward hosted NAMS it is dropped."""
        return self.search_modes

    async def probe_capabilities(self) -> Capabilities:
        """Ask the server once (``GET /capabilities``); later calls use the cached answer."""
        if self._server is None:
            async with self._probe_lock:
                if self._server is None:
                    self._server = await self._probe()
        return self._server.capabilities

    async def _probe(self) -> ServerCapabilities:
        response = await self._rest.send("GET", "/capabilities")
        if response.status_code in _NO_PROBE_ROUTE:
            return ServerCapabilities(HOSTED_CAPABILITIES, probed=False)
        if not response.is_success:
            raise error_for_response(response)
        try:
            body = json.loads(response.content)
        except ValueError:
            body = None
        found = read_capabilities(body)
        return found or ServerCapabilities(HOSTED_CAPABILITIES, probed=False)

    async def _require(self, capability: CapabilityName, what: str) -> None:
        """Raise ``NotSupportedError`` (no request beyond the one-time probe) if missing."""
        if not getattr(await self.probe_capabilities(), capability):
            raise NotSupportedError(
                f"{what} is not supported by the server at {self.endpoint} "
                f"(capability {capability} is off)"
            )

    async def _extension_fields(self) -> bool:
        """Whether request bodies may carry fields the hosted spec lacks (message
        ``metadata``, search ``mode``): only a server that advertises them. Hosted NAMS
        rejects unknown fields (since October 2026), so they are never sent there."""
        await self.probe_capabilities()
        return self.search_modes

    async def _delete(self, path: str) -> None:
        """Deletes are idempotent (docs/wire-decisions.md, W2): hosted NAMS and nams-local
        answer 200 for an id that is already gone; a server that answers 404 instead
        (an older nams-local) means the same thing, so it is not an error either."""
        try:
            await self._rest.call("DELETE", path)
        except NotFoundError:
            return

    async def _conversation_metadata(
        self, metadata: Mapping[str, MetadataValue] | None
    ) -> dict[str, MetadataValue] | None:
        """Conversation metadata as sent. Non-string values (numbers, booleans, null) go
        only to a server that advertises the extension fields; toward any other server
        (hosted NAMS, whose spec declares string values) the client refuses them as it
        always has, so its behaviour there is unchanged (W1)."""
        if metadata is None:
            return None
        check_scalar_map(metadata, "conversation metadata")
        scalars = not all(isinstance(v, str) for v in metadata.values())
        if scalars and not await self._extension_fields():
            check_string_map(metadata, "conversation metadata")
        return dict(metadata)

    async def _validity(self, asked: bool) -> bool:
        """Whether validity arguments (``valid_from``, ``valid_until``, ``supersede``,
        ``as_of``) may be sent: only to a server that stores them. Hosted NAMS cannot, so
        they are dropped there, with one warning per client when a call asked for them."""
        if (await self.probe_capabilities()).relationship_validity:
            return True
        if asked and not self._validity_warned:
            self._validity_warned = True
            logger.warning(
                "[nams] the server at %s cannot store relationship validity (validFrom, "
                "validUntil, supersede, asOf); it is ignored. Further occurrences are "
                "suppressed.",
                self.endpoint,
            )
        return False

    async def _message_metadata(self, metadata: dict[str, Any] | None) -> dict[str, Any] | None:
        """``metadata`` if the server keeps it; else ``None`` and one warning per client."""
        if metadata is None or await self._extension_fields():
            return metadata
        if not self._metadata_warned:
            self._metadata_warned = True
            logger.warning(
                "[nams] the server at %s does not store message metadata; it is dropped",
                self.endpoint,
            )
        return None

    async def _search_mode(self, mode: SearchMode | None) -> SearchMode | None:
        """``mode`` if the server runs it; asking hosted NAMS for one is NotSupported."""
        if mode is None or await self._extension_fields():
            return mode
        raise NotSupportedError(
            f"the server at {self.endpoint} does not take a search mode (it picks its own)"
        )

    # -- lifecycle -------------------------------------------------------------------
    async def aclose(self) -> None:
        await self._rest.aclose()
