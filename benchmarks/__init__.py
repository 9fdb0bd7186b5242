"""Benchmarks for the local engine, run as ``python -m benchmarks <name> [options]``.

Each public module here (a name without a leading underscore) is one benchmark exposing
``main(argv: list[str] | None = None) -> int``; ``python -m benchmarks`` lists them.
Shared helpers live in private modules (``_workload``: the synthetic workload).
"""
