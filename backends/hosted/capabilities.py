"""What the server behind the endpoint can do beyond the hosted contract.

Hosted NAMS has none of the extensions: its searches rank by embeddings, nothing more
(``HOSTED_CAPABILITIES``). The local server (``nams-local serve``) answers the extension
route ``GET /v1/capabilities`` with one boolean per capability; hosted NAMS has no such
route, so a 404 (or any answer that is not a JSON object) means "hosted defaults".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nams_local.backend import Capabilities

__all__ = ["HOSTED_CAPABILITIES", "ServerCapabilities", "read_capabilities"]

#: Hosted NAMS ranks by embeddings and answers read-only Cypher (``POST /v1/query``).
HOSTED_CAPABILITIES = Capabilities(vector_search=True, cypher_query=True)

#: Wire key (camelCase, as the route answers) -> ``Capabilities`` field.
_FIELDS = {
    "relationshipWrites": "relationship_writes",
    "entityByName": "entity_by_name",
    "userMessageSearch": "user_message_search",
    "graphNeighbourhood": "graph_neighbourhood",
    "vectorSearch": "vector_search",
    "cypherQuery": "cypher_query",
    "relationshipValidity": "relationship_validity",
    "userPurge": "user_purge",
    "messageDelete": "message_delete",
}


@dataclass(frozen=True, slots=True)
class ServerCapabilities:
    """The probe's answer: the ``Capabilities`` plus whether searches honour ``mode``."""

    capabilities: Capabilities
    #: The server runs the ``mode`` a search asks for (text / vector / hybrid).
    search_modes: bool = False
    #: False when the defaults were assumed (no capabilities route).
    probed: bool = True


def _flag(body: Mapping[str, Any], camel: str, snake: str) -> bool:
    value = body.get(camel, body.get(snake))
    return value if isinstance(value, bool) else False


def read_capabilities(body: object) -> ServerCapabilities | None:
    """The capabilities in a ``GET /capabilities`` answer, or None if it is not one."""
    if not isinstance(body, Mapping):
        return None
    flags = {field: _flag(body, camel, field) for camel, field in _FIELDS.items()}
    return ServerCapabilities(
        capabilities=Capabilities(**flags),
        search_modes=_flag(body, "searchModes", "search_modes"),
    )
