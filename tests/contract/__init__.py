"""Backend contract suite: every ``MemoryBackend`` must pass these tests.

The tests use only the protocol (``nams_local.backend.MemoryBackend``) and its capability
flags, so the same suite runs against the local SQLite engine and, later, against the
hosted REST client talking to a local server. Backends are added in ``conftest.py`` by
appending one ``HarnessFactory`` to ``HARNESS_FACTORIES``.
"""
