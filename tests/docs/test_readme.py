"""The README's code blocks run as written (documentation that cannot drift).

Issue 15, item 10: on main at 295f78a the extraction example failed on its own
(``NameError: asyncio``: the blocks only ran concatenated, borrowing the first one's
imports) and the Quickstart installed ``[dev]`` just to run the demo. Each Python block now
runs alone, in order, in one directory (a user copying them one by one); the Cypher
``curl`` runs against a real ``nams-local serve``; the Quickstart commands are checked
against the extras they name (installing from PyPI is not something a test can do
offline: the sizes are measured by hand and recorded in CHANGELOG.md).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tomllib
from pathlib import Path

from tests.server.processes import serve_process

from .examples import ROOT, run_example

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def test_every_python_block_runs_on_its_own(tmp_path: Path) -> None:
    blocks = _blocks("python")
    assert len(blocks) >= 3, "README lost its Python examples"
    out = []
    for number, block in enumerate(blocks, 1):
        run = run_example(block, tmp_path, timeout=180)
        assert run.returncode == 0, f"README python block {number} fails:\n{run.stderr}"
        out.append(run.stdout)
    stdout = "\n".join(out)
    assert "I have lived in Delhi since May." in stdout
    assert "WORKS_AT" in stdout and "TechCorp" in stdout
    assert (tmp_path / "memory.db").exists()
    assert "[cross-session] I moved to Bangalore in May." in stdout
    assert "extracted (Alex)-[WORKS_AT]->(TechCorp)" in stdout
    assert "extracted (Alex)-[LIVES_IN]->(Bangalore)" in stdout
    assert "reused: True TechCorp" in stdout
    assert "[{'who': 'Alex', 'org': 'TechCorp'}]" in stdout
    # Facts that change: the Bangalore -> Berlin story.
    assert "Bangalore 2021-03 2026-10 False" in stdout
    assert "Berlin 2026-10 None True" in stdout
    assert "as of 2024: ['Bangalore']" in stdout
    assert "Where do I live now? ['(Alex)-[LIVES_IN]->(Berlin)']" in stdout
    assert (
        "Where did I live before Berlin? ['(Alex)-[LIVES_IN 2021-03..2026-10]->(Bangalore)'"
        in stdout
    )


def test_the_first_example_run_twice_keeps_one_works_at_edge(tmp_path: Path) -> None:
    """Item 11 as a user meets it: the first example again on the same ``memory.db``."""
    for _ in range(2):
        run = run_example(_blocks("python")[0], tmp_path, timeout=180)
        assert run.returncode == 0, run.stderr
    last_line = [line for line in run.stdout.splitlines() if "WORKS_AT" in line][-1]
    assert last_line.count("WORKS_AT") == 1, last_line


def test_the_cypher_curl_example_answers(tmp_path: Path) -> None:
    [curl] = [b for b in _blocks("bash") if b.lstrip().startswith("curl")]
    args = ["--port", "0", "--no-embeddings", "--db", str(tmp_path / "s.db")]
    with serve_process(args, tmp_path) as server:
        command = curl.replace("localhost:8765", server.base_url).replace("\\\n", " ")
        run = subprocess.run(
            shlex.split(command),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        )
    assert run.returncode == 0, run.stderr
    assert '"columns":["name"]' in run.stdout.replace(" ", ""), run.stdout


def test_the_quickstart_installs_no_extra_for_the_demo_and_test_for_the_tests() -> None:
    first, second = _blocks("bash")[:2]
    assert re.search(r"pip install -e \.(\s|&)", first) and "nams-local demo" in first
    assert "pip install -e '.[test]'" in second and "pytest -n auto" in second
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    tools = " ".join(extras["test"])
    for needed in ("pytest", "pytest-xdist", "pytest-asyncio", "import-linter"):
        assert needed in tools, needed
    ci = (ROOT / ".ci" / "run").read_text()
    assert "-e '.[dev]'" in ci and "nams-local[test]" in " ".join(extras["dev"])
