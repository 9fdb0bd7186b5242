"""``--dist loadgroup`` must really keep an ``xdist_group`` on one worker.

The hosted-contract traffic tests (tests/wire/traffic.py) depend on it; a pytest release
that changes how node ids are stored has broken it silently before (pytest 9.2 with
pytest-xdist 3.8), so the suite checks the pair it is installed with.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

GROUPED = """
import os
import pytest


@pytest.mark.xdist_group("one")
@pytest.mark.parametrize("i", range(8))
def test_grouped(i: int) -> None:
    print("WORKER", os.environ["PYTEST_XDIST_WORKER"])
"""


def test_an_xdist_group_runs_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "xdist",
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "-p",
            "no:cacheprovider",
            "-v",
            "-rA",
            "test_grouped.py",
        ],
        cwd=tmp_path,
        # Only xdist: the installed plugins (schemathesis, hypothesis, playwright, ours) are
        # not what is tested, and importing them in three processes took minutes on a
        # loaded machine.
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    workers = {line.split()[0] for line in done.stdout.splitlines() if " PASSED " in line}
    assert len(workers) == 1, done.stdout
