"""``python -m benchmarks.turn [options]``, the same as ``python -m benchmarks turn``."""

from __future__ import annotations

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
