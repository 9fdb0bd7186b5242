"""The README's Python example runs as written (documentation that cannot drift)."""

from __future__ import annotations

import re
from pathlib import Path

from .examples import ROOT, run_example


def test_readme_python_example_runs(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert blocks, "README has no python example"
    run = run_example("\n".join(blocks), tmp_path)
    assert run.returncode == 0, run.stderr
    assert "I have lived in Delhi since May." in run.stdout
    assert "WORKS_AT" in run.stdout and "TechCorp" in run.stdout
    assert (tmp_path / "memory.db").exists()
    assert "[cross-session] I moved to Bangalore in May." in run.stdout
    assert "extracted (Alex)-[WORKS_AT]->(TechCorp)" in run.stdout
    assert "extracted (Alex)-[LIVES_IN]->(Bangalore)" in run.stdout
    assert "reused: True TechCorp" in run.stdout
    assert "[{'who': 'Alex', 'org': 'TechCorp'}]" in run.stdout
