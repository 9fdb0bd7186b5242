"""The test packages named like real ones (``tests/backends``, ``tests/benchmarks``,
``tests/mcp``) are ``tests.*`` modules: they never shadow the packages they test."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["backends", "backends.sqlite", "backends.hosted", "benchmarks"])
def test_the_real_package_is_imported(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__file__ is not None
    assert Path(module.__file__).resolve().is_relative_to(ROOT / name.split(".")[0])


def test_the_mcp_sdk_is_not_the_test_package() -> None:
    import mcp

    assert mcp.__file__ is not None
    assert "site-packages" in Path(mcp.__file__).parts
    assert __name__ == "tests.backends.test_package_names"
