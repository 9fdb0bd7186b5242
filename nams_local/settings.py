"""The hosted service's environment names and default endpoint, defined once.

Both the wiring (``nams_local.config``, which picks a backend from the environment) and the
hosted client (``backends.hosted``, which falls back to ``$MEMORY_WORKSPACE_ID``) read
them. They live in the types layer, which both may import, so neither imports the other.
"""

from __future__ import annotations

__all__ = ["API_KEY_ENV", "DEFAULT_ENDPOINT", "ENDPOINT_ENV", "WORKSPACE_ENV"]

#: Where hosted NAMS answers (the TypeScript SDK's ``DEFAULT_ENDPOINT``).
DEFAULT_ENDPOINT = "https://memory.neo4jlabs.com/v1"
API_KEY_ENV = "MEMORY_API_KEY"
ENDPOINT_ENV = "MEMORY_ENDPOINT"
#: The environment variable the TypeScript SDK reads when no workspace is given.
WORKSPACE_ENV = "MEMORY_WORKSPACE_ID"
