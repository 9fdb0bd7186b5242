"""The pytest plugin, used exactly as a user would: installed, then requested by fixture name.

A child pytest runs ``user_suite/`` (which imports nothing of ours) in a directory of its
own. The plugin is "installed" for it the way pip installs it: a ``*.dist-info`` on the
path whose ``entry_points.txt`` holds this project's ``pytest11`` entry points, read from
``pyproject.toml``, so the test fails if the entry point is missing or wrong.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SUITE = Path(__file__).resolve().parent / "user_suite"


def _entry_points() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found: dict[str, str] = project["entry-points"]["pytest11"]
    return found


def _install_metadata(site: Path) -> None:
    """What pip writes for the entry points (the code itself is on ``PYTHONPATH``)."""
    dist = site / "nams_local_plugin_check-0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: nams-local-plugin-check\nVersion: 0\n", encoding="utf-8"
    )
    lines = [f"{name} = {target}" for name, target in _entry_points().items()]
    (dist / "entry_points.txt").write_text(
        "[pytest11]\n" + "\n".join(lines) + "\n", encoding="utf-8"
    )


def test_pyproject_declares_the_plugin() -> None:
    assert _entry_points() == {"nams_local": "nams_local.pytest_plugin"}


def test_a_users_suite_runs_against_the_fake(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(SUITE, project / "tests")
    site = tmp_path / "site"
    _install_metadata(site)
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTEST_", "NAMS_", "MEMORY_"))
    }
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT)])
    env["HOME"] = str(tmp_path)

    child = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "error", "tests"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )

    output = child.stdout[-4000:] + child.stderr[-2000:]
    assert child.returncode == 0, output
    assert "3 passed" in child.stdout, output
