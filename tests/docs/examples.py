"""Running a documentation example as a user would: a script in a fresh folder, in its own
process, with only this checkout on the path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

__all__ = ["ROOT", "run_example"]

ROOT = Path(__file__).resolve().parents[2]


def run_example(
    code: str, folder: Path, *, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` as ``folder/example.py`` (cwd and HOME ``folder``); never raises on a
    failing script: the caller asserts on the result."""
    script = folder / "example.py"
    script.write_text(code, encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=folder,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(folder)},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
