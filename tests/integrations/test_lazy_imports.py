"""Importing nams-local never imports an agent framework: each adapter's framework is an
optional extra, loaded only by the adapter's own module."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FRAMEWORKS = ("langgraph", "langchain", "langchain_core", "agents", "pydantic_ai", "langmem")
ADAPTERS = ("langgraph", "langchain", "openai_agents", "pydantic_ai")


def _loaded(code: str) -> list[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(m for m in {FRAMEWORKS!r} if m in sys.modules))"
    run = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    return run.stdout.split()


def test_nams_local_and_its_integrations_import_no_framework() -> None:
    assert _loaded("import nams_local, nams_local.integrations, backends.sqlite.backend") == []


def test_each_adapter_imports_its_own_framework() -> None:
    wanted = {
        "langgraph": "langgraph",
        "langchain": "langchain",
        "openai_agents": "agents",
        "pydantic_ai": "pydantic_ai",
    }
    for adapter in ADAPTERS:
        assert wanted[adapter] in _loaded(f"import nams_local.integrations.{adapter}")
