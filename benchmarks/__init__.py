"""Benchmarks for the local engine, run as ``python -m benchmarks <name> [options]``.

Each public module or package here (a name without a leading underscore) is one benchmark
exposing ``main(argv: list[str] | None = None) -> int``; ``python -m benchmarks`` lists
them. A benchmark too big for one file is a package split by concern (``turn/``).
Shared helpers live in private modules: ``_common`` (the options every benchmark shares,
option types, progress, percentiles), ``_report`` (JSON, chart and README section),
``_workload`` (the synthetic workload), ``_http`` (a loopback server), ``_serve``
(``nams-local serve`` as a watched subprocess); ``load``'s client lives in ``_loadgen`` (one
generator process), ``_loadpool`` (its processes) and ``_loadstats`` (the figures).
"""
