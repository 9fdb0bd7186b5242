"""Response bodies of the ``/v1`` routes, as declarative pydantic models.

They exist for the published OpenAPI document (``openapi.py``): each route names its model
in ``responses=``, so the document types every answer, and schemathesis checks in the suite
(``tests/server/test_schemathesis.py``) that real answers fit them. Routes still build their
JSON with ``to_wire()`` and ``wire.py`` (no validation on the hot path). Models reuse the
domain models of ``nams_local.models`` (camelCase aliases); extra fields are allowed, as the
hosted spec's are (B1).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = ["StatusResponse"]


class WireModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")


class StatusResponse(WireModel):
    """The hosted ``StatusResponse``: ``deleted``, ``updated``, ``revoked``, ``reset``."""

    status: str
