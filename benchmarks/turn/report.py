"""What a run prints and charts: the table (also the README section) and the bar panels.

Only formatting: every figure is computed in ``series`` and ``measure``; the targets the
table checks the in-process and loopback figures against are stated here, beside the
verdicts that use them.
"""

from __future__ import annotations

from typing import Any

from .._common import mb
from .._report import BarGroup
from .interleaved import render_interleaved
from .kinds import HTTP_KINDS, METHOD_ORDER, NAME, SERIES_LABELS

__all__ = ["panels", "render"]

#: The whole turn (retrieval and the turn's writes), the earlier latency issue's target.
TARGET_P50_MS = 15.0
TARGET_P95_MS = 40.0
#: Retrieval alone, issue 13's target (stricter).
RETRIEVAL_P50_MS = 10.0
RETRIEVAL_P95_MS = 20.0
TARGET_MESSAGES = 100_000
TARGET_LOOPBACK_RATIO = 3.0


def _verdict(p50: float, p95: float, target50: float, target95: float) -> str:
    ok50 = "met" if p50 <= target50 else "MISSED"
    ok95 = "met" if p95 <= target95 else "MISSED"
    return (
        f"p50 {p50:.1f} ms (<= {target50:.0f}: {ok50}), "
        f"p95 {p95:.1f} ms (<= {target95:.0f}: {ok95})"
    )


def _loads(load: list[float] | None) -> str:
    return " ".join(f"{x:.2f}" for x in load) if load else "unknown"


def _render_size(size: dict[str, Any], settings: dict[str, Any]) -> list[str]:
    """One size's sections: the store, its build, the turns per backend, per method, per source."""
    spec, db, info, build = size["spec"], size["database"], size["info"], size["build"]
    counts = info["counts"]
    per_conv = spec["messages"] / max(counts["conversations"], 1)
    state = "reused" if db["reused"] else "built in this run"
    lines = [
        "",
        f"=== {spec['messages']} messages: {spec['users']} users x "
        f"{spec['conversations_per_user']} conversations ({per_conv:.0f} messages each), "
        f"{counts['entities']} entities, {counts['relationships']} relationships, "
        f"{counts['reasoning_steps']} reasoning steps",
        f"  database   {db['path']}, {mb(db['bytes'])}, {state} "
        f"(built {db['built_at']} in {build['total_seconds']:.0f} s)"
        + (
            f"; {counts.get('messages', '?')} messages; the turns ran on a copy of it"
            if db.get("measured_on_a_copy")
            else ""
        ),
        f"  load avg   {_loads(size['load_average_before_measuring'])} before measuring, "
        f"{_loads(size['load_average_after_measuring'])} after (1, 5, 15 min)",
        "",
        "Build (wall clock)                           count   seconds       rate",
    ]
    for key, label, unit in (
        ("conversations", "create_conversation", "conv/s"),
        ("messages", f"add_messages ({build['message_bulk_calls']} bulk calls)", "msg/s"),
        ("entities", "add_entity (one per call)", "ent/s"),
        ("relationships", "add_relationship (one per call)", "rel/s"),
        ("steps", "record_step (one per call)", "step/s"),
    ):
        r = build[key]
        lines.append(
            f"  {label:<40} {r['count']:>7} {r['seconds']:>9.2f} {r['per_second']:>10.1f} {unit}"
        )

    series: dict[str, Any] = size["series"]
    lines += _render_backends(size)
    lines += [
        "",
        f"Retrieval latency, ms: retrieve_memories(limit={settings['limit']}) alone, wall clock",
        f"  {'series':<47} {'n':>4} {'p50':>6} {'p95':>6} {'p99':>6} {'mean':>6} {'max':>6}"
        f" {'calls':>6} {'embeds':>6} {'model':>6} {'hits':>5}",
    ]
    for s in series.values():
        lines.append(
            f"  {s['label']:<47} {s['n']:>4} {s['retrieve_p50_ms']:>6.2f} "
            f"{s['retrieve_p95_ms']:>6.2f} {s['retrieve_p99_ms']:>6.2f} {s['mean_ms']:>6.2f} "
            f"{s['max_ms']:>6.2f} "
            f"{s['calls_per_turn']:>6.2f} {s['embed_query_calls_per_turn']:>6.2f} "
            f"{s['model_runs_per_turn']:>6.2f} {s['hits_per_turn']:>5.2f}"
        )
    lines.append(
        "  mean/max: whole turn; calls: backend calls per turn (with the 2 writes); embeds: "
        "embed_query calls; model: of those, query cache misses (model runs)"
    )

    keys = list(series)
    methods: list[str] = list(METHOD_ORDER)
    for s in series.values():
        methods += [m for m in s["calls_per_turn_by_method"] if m not in methods]
    header = "".join(f" {k:>17}" for k in keys)
    lines += ["", f"Backend calls per turn (mean)       {header}"]
    for m in methods:
        cells = "".join(
            f" {series[k]['calls_per_turn_by_method'].get(m, 0.0):>17.2f}"
            if m in series[k]["calls_per_turn_by_method"]
            else f" {'-':>17}"
            for k in keys
        )
        lines.append(f"  {m:<34}{cells}")
    lines.append(
        f"  {'total':<34}" + "".join(f" {series[k]['calls_per_turn']:>17.2f}" for k in keys)
    )
    failed = sum(series[k]["failed_calls"] for k in keys)
    warnings = sum(series[k]["warnings"] for k in keys)
    empty = ", ".join(f"{k} {series[k]['empty_turns']}" for k in keys)
    lines.append(
        f"  failed calls {failed}, retrieval warnings {warnings}, turns with no hit: {empty}"
    )

    for k in keys:
        s = series[k]
        lines += [
            "",
            f"Per source, {k} turns (calls overlap; ms are wall time of each backend call,",
            "including the wait for the store's threads (and the CPU) and the query embedding)",
            f"  {'source':<15} {'calls':>6} {'call ms':>8} {'done@p50':>9} {'done@p95':>9} "
            f"{'items':>6} {'hits':>5} {'turns w/ hits':>14}",
        ]
        for source, row in s["by_source"].items():
            lines.append(
                f"  {source:<15} {row['calls_per_turn']:>6.2f} {row['call_ms_per_turn']:>8.2f} "
                f"{row['done_at_p50_ms']:>9.2f} {row['done_at_p95_ms']:>9.2f} "
                f"{row['items_per_turn']:>6.1f} {row['hits_per_turn']:>5.2f} "
                f"{row['turns_with_hits']:>14.0%}"
            )
        lines.append(
            "  done@: ms from turn start until the source's last call returned; items: what "
            "the backend returned (pre-merge); hits: what made the final list"
        )

    solo: dict[str, Any] = size["solo"]
    if solo:
        first = next(iter(solo.values()))
        lines += [
            "",
            f"Each source alone, ms ({first['n']} turns; calls one after another, query vector "
            "cached except for the first row)",
            f"  {'step':<47} {'p50':>7} {'p95':>7} {'mean':>7}",
        ]
        for row in solo.values():
            lines.append(
                f"  {row['label']:<47} {row['p50_ms']:>7.2f} {row['p95_ms']:>7.2f} "
                f"{row['mean_ms']:>7.2f}"
            )
    cache = size["query_cache"]
    lines += [
        "",
        f"  {cache['distinct_queries']} distinct query strings (never repeated across turns or "
        f"sizes); query cache while measuring: {cache['hits']} hits (reuse within a turn), "
        f"{cache['misses']} misses",
    ]
    for example in size["warning_examples"]:
        lines.append(f"  warning: {example}")
    return lines


def _back_to_back(size: dict[str, Any]) -> bool:
    """Whether turns ran back to back (no settling between them) in this size's run."""
    return bool(size.get("back_to_back", False))


def _render_backends(size: dict[str, Any]) -> list[str]:
    """The headline: whole turns per backend, and each backend's ratio to in-process."""
    series: dict[str, Any] = size["series"]
    spec = size["spec"]
    base = series.get("native")
    lines = [
        "",
        "One chat turn = retrieve_memories + persist_step (user and assistant message), ms",
        f"  {'backend':<44} {'n':>4} {'p50':>7} {'p95':>7} {'p99':>7} {'retr.p50':>8} "
        f"{'write p50':>9} {'calls':>5} {'HTTP':>5} {'x p50/p95/p99':>16}",
    ]
    for kind in ("native", *HTTP_KINDS):
        s = series.get(kind)
        if s is None:
            continue
        ratio = "1.00/1.00/1.00"
        if base is not None and kind != "native":
            ratio = "/".join(
                f"{s[f] / base[f]:.2f}" if base[f] else "-" for f in ("p50_ms", "p95_ms", "p99_ms")
            )
        http = f"{s['http_requests_per_turn']:.1f}" if s["http_requests_per_turn"] else "-"
        lines.append(
            f"  {s['label']:<44} {s['n']:>4} {s['p50_ms']:>7.2f} {s['p95_ms']:>7.2f} "
            f"{s['p99_ms']:>7.2f} {s['retrieve_p50_ms']:>8.2f} {s['persist_p50_ms']:>9.2f} "
            f"{s['calls_per_turn']:>5.1f} {http:>5} {ratio:>16}"
        )
    for kind, reason in size.get("skipped_backends", {}).items():
        lines.append(f"  {SERIES_LABELS[kind]:<44} skipped: {reason}")
    lines.append(
        "  calls: backend calls per turn (the sources, or one recall_turn, + graph expansion "
        "+ the writes); HTTP: requests on the wire; x: ratio to in-process, same run"
    )
    if base is not None and not _back_to_back(size):
        lines.append(
            f"  between turns (untimed, as during the model call): the turn's extraction and "
            f"message vectors took p50 {base['settle_p50_ms']:.2f} ms, "
            f"p95 {base['settle_p95_ms']:.2f} ms"
        )
    if base is not None:
        at = "" if spec["messages"] == TARGET_MESSAGES else " (not the target size)"
        whole = _verdict(base["p50_ms"], base["p95_ms"], TARGET_P50_MS, TARGET_P95_MS)
        alone = _verdict(
            base["retrieve_p50_ms"], base["retrieve_p95_ms"], RETRIEVAL_P50_MS, RETRIEVAL_P95_MS
        )
        lines.append(
            f"  targets at {TARGET_MESSAGES} messages, in-process{at}: "
            f"whole turn {whole}; retrieval alone {alone}"
        )
        loop = series.get("loopback")
        if loop is not None and base["p50_ms"]:
            r50 = loop["p50_ms"] / base["p50_ms"]
            r95 = loop["p95_ms"] / base["p95_ms"] if base["p95_ms"] else 0.0
            ok = "met" if max(r50, r95) <= TARGET_LOOPBACK_RATIO else "MISSED"
            lines.append(
                f"  target: loopback HTTP <= {TARGET_LOOPBACK_RATIO:.0f}x in-process: "
                f"p50 {r50:.2f}x, p95 {r95:.2f}x ({ok})"
            )
    return lines


def render(results: dict[str, Any]) -> str:
    """The whole table: the run's header, then every size's sections."""
    machine, settings = results["machine"], results["settings"]
    load = machine["load_average_at_start"]
    load_text = f", load avg at start {' '.join(f'{x:.2f}' for x in load)}" if load else ""
    info = results["sizes"][0]["info"] if results["sizes"] else None
    lines = [
        f"nams-local benchmark: {NAME}  ({results['finished_at']})",
        f"  machine    {machine['cpu_count']} cores (os.cpu_count), {machine['platform']}"
        f"{load_text}",
        f"  python     {machine['python']}, code at git {machine['git_revision'] or 'unknown'}",
    ]
    if info is not None:
        lines += [
            f"  sqlite     {info['sqlite_version']} via {info['driver']}, fts5={info['fts5']}, "
            f"sqlite-vec {info['sqlite_vec']}",
            f"  vectors    index {info['vector_index']}, embedder {info['embedder']} "
            f"({info['dimension']} dims), loaded in {results['embedder_load_seconds']:.2f} s",
        ]
    lines += [
        f"  measured   one chat turn = retrieve_memories(backend, scope, conversation, query, "
        f"limit={settings['limit']}) with all five sources",
        "             (long-term entities, graph expansion, current conversation, cross-session, "
        "reasoning), then persist_step",
        "             (the user and the assistant message), against a random user's random "
        "conversation, a distinct query per turn;",
        f"             after {settings['warmup']} warm-up turns, {settings['turns']} in-process + "
        f"{settings.get('per_source_turns', 0)} source-by-source + "
        f"{settings['per_conversation_turns']} per-conversation + "
        f"{settings['pre_embedded_turns']} pre-embedded + {settings['solo_turns']} solo",
        f"             + {settings['http_turns']} per HTTP backend turns, interleaved in a "
        "seeded random order;",
        f"             entity extraction while writing: {settings['extraction']} "
        "(the stores are built without it)",
    ]
    for size in results["sizes"]:
        lines += _render_size(size, settings)
    if results.get("interleaved"):
        lines += render_interleaved(results["interleaved"])
    return "\n".join(lines)


def panels(results: dict[str, Any]) -> list[BarGroup]:
    """Per size: whole-turn p50/p95/p99 of each backend."""
    out = []
    for size in results["sizes"]:
        series = size["series"]
        kinds = [k for k in ("native", *HTTP_KINDS) if k in series]
        labels = ["in-process" if k == "native" else k for k in kinds]
        values = {pct: [series[k][f"{pct}_ms"] for k in kinds] for pct in ("p50", "p95", "p99")}
        at_target = size["spec"]["messages"] == TARGET_MESSAGES
        out.append(
            BarGroup(
                f"one turn at {size['spec']['messages']:,} messages",
                "ms",
                labels,
                values,
                TARGET_P95_MS if at_target else None,
            )
        )
    return out
