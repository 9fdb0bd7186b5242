"""``HostedBackend``: the ``MemoryBackend`` protocol over the hosted NAMS REST API.

The same class talks to hosted NAMS and to ``nams-local serve`` (the local server speaks
the same wire contract), over the network or, with ``transport=httpx.ASGITransport(...)``,
in-process. Input is validated client-side by the same rules as the local engine
(``nams_local.validation``), so a refused call makes no request at all.
"""

from __future__ import annotations

from nams_local.backend import MemoryBackend

from .conversations import ConversationRoutes
from .entities import EntityRoutes
from .extensions import ExtensionRoutes
from .purge import PurgeRoutes
from .reasoning import ReasoningRoutes

__all__ = ["HostedBackend"]


class HostedBackend(
    ConversationRoutes, EntityRoutes, ReasoningRoutes, ExtensionRoutes, PurgeRoutes, MemoryBackend
):
    """Memory in hosted NAMS (or any server speaking its wire contract).

    See ``HostedBase`` for the constructor arguments. Call ``probe_capabilities()`` once to
    learn which extensions the server offers; until then ``capabilities`` reports hosted
    NAMS's (vector search only).
    """
