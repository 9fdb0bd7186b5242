"""The legacy memory concepts of the engine: sessions, preferences, facts, task traces,
tool stats and exact-identity entities (``SQLiteBackend.legacy``).

They are the ideas of the original agent-memory package (and of the TCK that tests it)
which the hosted API lacks, so they live apart from the modules that serve the hosted
contract: ``memory.py`` is the API (``LegacyMemory``), ``models.py`` its return types, and
one module per concept holds the unit-of-work functions on the shared store and tables.
The TCK bridge is one of their users; the core package does not depend on any of it.
"""

from __future__ import annotations

from .memory import MAX_LEGACY_LIMIT, LegacyMemory, strict_status

__all__ = ["MAX_LEGACY_LIMIT", "LegacyMemory", "strict_status"]
