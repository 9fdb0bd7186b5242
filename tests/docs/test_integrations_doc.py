"""The agent-framework examples of docs/integrations.md run as written, each in its own
process, offline (documentation that cannot drift)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .examples import ROOT, run_example

DOC = (ROOT / "docs" / "integrations.md").read_text(encoding="utf-8")
SECTION = DOC.split("\n## Agent frameworks\n", 1)[1]
BLOCKS = re.findall(r"```python\n(.*?)```", SECTION, flags=re.S)

STORED = (
    "stored: [('user', 'I drink oolong every morning'), ('assistant', 'Noted.'), "
    "('user', 'What do I drink?'), ('assistant', 'Oolong.')]"
)
EXPECTED = [
    [
        "graph: Alex drinks oolong every morning",
        "namespaces: [('memories', 'alex')]",
        "filtered: ['dog']",
    ],
    [STORED, "[conversation] I drink oolong every morning"],
    [
        "items: [{",
        "'content': 'I drink oolong every morning'",
        "Be brief.\n\nRelevant long-term memory",
        "1. [cross-session] I drink oolong every morning",
    ],
    ["Be brief.", "Relevant long-term memory", "I drink oolong every morning"],
]


def test_there_is_one_example_per_framework() -> None:
    assert len(BLOCKS) == len(EXPECTED)


@pytest.mark.parametrize("index", range(len(EXPECTED)))
def test_example_runs(index: int, tmp_path: Path) -> None:
    run = run_example(BLOCKS[index], tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    for expected in EXPECTED[index]:
        assert expected in run.stdout, run.stdout
