"""Where a benchmark's results go: a JSON file, a PNG chart and its section of the README.

Every benchmark built on this writes ``<results>/<name>.json`` and ``<results>/<name>.png``
and rewrites the ``<!-- bench:NAME -->`` ... ``<!-- /bench:NAME -->`` section of
``benchmarks/README.md`` with the table it printed, so the figures in the README are the
ones a run measured, never typed by hand. Smoke runs point both somewhere temporary.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._common import add_quiet_option, load_average, say

__all__ = [
    "BarGroup",
    "add_report_options",
    "bar_chart",
    "command_line",
    "git_revision",
    "machine",
    "machine_details",
    "publish",
    "replace_section",
]

HERE = Path(__file__).resolve().parent
DEFAULT_RESULTS = HERE / "results"
DEFAULT_README = HERE / "README.md"


def add_report_options(parser: argparse.ArgumentParser) -> None:
    """``--results DIR``, ``--readme PATH``, ``--no-readme``, ``--no-chart``, ``--quiet``."""
    out = parser.add_argument_group("output")
    out.add_argument(
        "--results",
        type=Path,
        default=DEFAULT_RESULTS,
        help="folder for NAME.json and NAME.png, default: benchmarks/results",
    )
    out.add_argument(
        "--readme",
        type=Path,
        default=DEFAULT_README,
        help="README whose <!-- bench:NAME --> section this run rewrites, "
        "default: benchmarks/README.md",
    )
    out.add_argument("--no-readme", action="store_true", help="leave the README alone")
    out.add_argument("--no-chart", action="store_true", help="no PNG (matplotlib not needed)")
    add_quiet_option(out)


def command_line(name: str, argv: Sequence[str] | None) -> str:
    """The command as run, for the README (output options dropped: they are not figures)."""
    given = list(sys.argv[1:] if argv is None else argv)
    if argv is None and given[:1] == [name]:  # python -m benchmarks NAME ...
        given = given[1:]
    kept: list[str] = []
    skip = False
    for arg in given:
        if skip:
            skip = False
            continue
        if arg in ("--results", "--readme"):
            skip = True
            continue
        if arg in ("--quiet", "--no-readme", "--no-chart"):
            continue
        kept.append(arg)
    return " ".join(["python -m benchmarks", name, *kept])


def machine() -> dict[str, Any]:
    """What the figures were measured on (the load average matters on a shared box)."""
    return {
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_average": load_average(),
    }


def machine_details() -> dict[str, Any]:
    """:func:`machine` with the CPU architecture, the Python build and the code's revision,
    for the benchmarks that print their own header (``ingest_search``, ``turn``)."""
    return {
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "python": f"{platform.python_version()} ({platform.python_implementation()})",
        "load_average_at_start": load_average(),
        "git_revision": git_revision(),
    }


def _git(*args: str) -> str:
    root = HERE.parent
    done = subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=True
    )
    return done.stdout.strip()


def git_revision() -> str | None:
    """``<short sha>`` of the checkout the engine runs from, ``+dirty`` with local changes."""
    try:
        sha = _git("rev-parse", "--short", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{sha}+dirty" if dirty else sha


def machine_line(info: dict[str, Any]) -> str:
    load = info.get("load_average")
    load_text = f", load avg {' '.join(f'{x:.2f}' for x in load)}" if load else ""
    return (
        f"machine: {info['cpu_count']} cores, {info['platform']}, "
        f"python {info['python']}{load_text}"
    )


def replace_section(readme: Path, name: str, body: str) -> None:
    """Rewrite the ``bench:name`` section (appended at the end when there is none yet)."""
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    block = f"{start}\n{body.rstrip()}\n{end}"
    text = readme.read_text() if readme.exists() else ""
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text, count=1)
    else:
        text = f"{text.rstrip()}\n\n{block}\n" if text else f"{block}\n"
    readme.write_text(text)


@dataclass(frozen=True)
class BarGroup:
    """One panel of a grouped bar chart: ``values[series][i]`` over ``categories[i]``."""

    title: str
    ylabel: str
    categories: Sequence[str]
    values: Mapping[str, Sequence[float]]
    target: float | None = None


def bar_chart(path: Path, title: str, panels: Sequence[BarGroup]) -> None:
    """Grouped bars, one panel each side by side; a dashed line marks a panel's target."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        n_series = max(len(panel.values), 1)
        width = 0.8 / n_series
        for i, (label, values) in enumerate(panel.values.items()):
            xs = [x + (i - (n_series - 1) / 2) * width for x in range(len(panel.categories))]
            ax.bar(xs, list(values), width, label=label)
        ax.set_xticks(range(len(panel.categories)))
        ax.set_xticklabels(panel.categories, rotation=20, ha="right", fontsize=8)
        ax.set_title(panel.title, fontsize=10)
        ax.set_ylabel(panel.ylabel)
        if panel.target is not None:
            ax.axhline(panel.target, linestyle="--", color="grey", linewidth=1, label="target")
        ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def publish(
    args: argparse.Namespace,
    name: str,
    results: dict[str, Any],
    table: str,
    *,
    argv: Sequence[str] | None,
    panels: Sequence[BarGroup],
    benchmark: str | None = None,
) -> None:
    """Print the table; write JSON, the chart and the README section as the options say.

    ``name`` names the files and the section; ``benchmark`` (default ``name``) is the
    command, for a benchmark whose variants keep separate results (``load`` writes
    ``load_no_embeddings``, ...).
    """
    print(table)
    how_to_run = command_line(benchmark or name, argv)
    results["command"] = how_to_run
    results.setdefault("machine", machine())
    results["benchmark"] = name
    results["finished_at"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    args.results.mkdir(parents=True, exist_ok=True)
    json_path = args.results / f"{name}.json"
    json_path.write_text(json.dumps(results, indent=2, default=str) + "\n")
    say(args, f"[{name}] results written to {json_path}")
    chart = args.results / f"{name}.png"
    if not args.no_chart and panels:
        bar_chart(chart, f"nams-local benchmark: {name}", panels)
        say(args, f"[{name}] chart written to {chart}")
    if args.no_readme:
        return
    body = [
        f"Command: `{how_to_run}`  ",
        f"Finished {results['finished_at']}; {machine_line(results['machine'])}.",
        "",
        "```",
        table,
        "```",
    ]
    if not args.no_chart and panels:
        try:
            rel = os.path.relpath(chart, args.readme.resolve().parent)
        except ValueError:  # another drive (Windows)
            rel = str(chart)
        body += ["", f"![{name}]({rel})"]
    replace_section(args.readme, name, "\n".join(body))
    say(args, f"[{name}] README section bench:{name} rewritten in {args.readme}")
