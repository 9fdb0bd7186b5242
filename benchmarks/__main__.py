"""``python -m benchmarks <name> [options]``: run one benchmark module's ``main(argv)``."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["available", "main"]


def available() -> list[str]:
    """Benchmark names: the package's public modules (helpers start with ``_``)."""
    here = str(Path(__file__).parent)
    return sorted(m.name for m in pkgutil.iter_modules([here]) if not m.name.startswith("_"))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    names = available()
    if not args or args[0] in ("-h", "--help"):
        print("usage: python -m benchmarks <name> [options]   (<name> --help for its options)")
        print("benchmarks: " + ", ".join(names))
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in names:
        print(f"unknown benchmark {name!r}; available: {', '.join(names)}", file=sys.stderr)
        return 2
    run: Callable[[list[str]], int] = importlib.import_module(f"{__package__}.{name}").main
    return run(rest)


if __name__ == "__main__":
    raise SystemExit(main())
