"""The README's Python example runs as written (documentation that cannot drift)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_python_example_runs(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert blocks, "README has no python example"
    script = tmp_path / "example.py"
    script.write_text("\n".join(blocks), encoding="utf-8")
    run = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "I have lived in Delhi since May." in run.stdout
    assert "WORKS_AT" in run.stdout and "TechCorp" in run.stdout
    assert (tmp_path / "memory.db").exists()
    assert "[cross-session] I moved to Bangalore in May." in run.stdout
    assert "extracted (Alex)-[WORKS_AT]->(TechCorp)" in run.stdout
    assert "extracted (Alex)-[LIVES_IN]->(Bangalore)" in run.stdout
    assert "reused: True TechCorp" in run.stdout
    assert "[{'who': 'Alex', 'org': 'TechCorp'}]" in run.stdout
    # Facts that change: the Bangalore -> Berlin story.
    assert "Bangalore 2021-03 2026-10 False" in run.stdout
    assert "Berlin 2026-10 None True" in run.stdout
    assert "as of 2024: ['Bangalore']" in run.stdout
    assert "Where do I live now? ['(Alex)-[LIVES_IN]->(Berlin)']" in run.stdout
    assert (
        "Where did I live before Berlin? ['(Alex)-[LIVES_IN 2021-03..2026-10]->(Bangalore)'"
        in run.stdout
    )
