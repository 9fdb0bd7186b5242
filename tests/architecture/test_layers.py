"""The layers hold: the import contracts pass, fail on an upward import, and the root is light.

The contracts live in ``pyproject.toml`` (``[tool.importlinter]``); CI runs ``lint-imports``.
These tests show that the check has teeth (a copy of the tree with one deliberately
upward import breaks it) and that the lazy package root keeps ``import nams_local`` and
``import backends.hosted`` down to the modules they need.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import nams_local

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
#: The types layer: all that the hosted client may load from ``nams_local``.
TYPES_LAYER = {
    "nams_local",
    "nams_local.__version__",
    "nams_local.backend",
    "nams_local.errors",
    "nams_local.items",
    "nams_local.json_depth",
    "nams_local.models",
    "nams_local.purge_report",
    "nams_local.settings",
    "nams_local.validation",
    "nams_local.turns",
}


def _lint_imports(pythonpath: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with the real contracts over the packages found on ``pythonpath``."""
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    return subprocess.run(
        [str(LINT_IMPORTS), str(PYPROJECT), "--no-cache", "--no-logo"],
        cwd=pythonpath,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _loaded_after(statement: str) -> set[str]:
    """The ``nams_local`` modules a fresh interpreter holds after ``statement``."""
    probe = f"import sys; {statement}; print('\\n'.join(sorted(sys.modules)))"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    return {name for name in out.split() if name.split(".")[0] == "nams_local"}


def test_the_real_tree_keeps_every_contract() -> None:
    run = _lint_imports(ROOT)

    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


@pytest.mark.parametrize(
    ("module", "upward"),
    [
        ("nams_local/models.py", "import nams_local.server"),
        ("nams_local/retrieval.py", "import backends.sqlite"),
        ("backends/hosted/rest.py", "import nams_local.integrations"),
    ],
)
def test_an_upward_import_breaks_the_contracts(tmp_path: Path, module: str, upward: str) -> None:
    for package in ("nams_local", "backends"):
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    target = tmp_path / module
    target.write_text(target.read_text() + f"\n{upward}  # deliberately upward\n")

    run = _lint_imports(tmp_path)

    assert run.returncode != 0, run.stdout
    importer = module.removesuffix(".py").replace("/", ".")
    imported = upward.removeprefix("import ")
    assert f"{importer} -> {imported}" in run.stdout


def test_every_nams_local_module_sits_in_a_layer() -> None:
    """An unlisted module would be unconstrained: a new one must be placed in a layer."""
    config = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in config["contracts"] if c["type"] == "layers"]
    named = {
        part.strip().strip("()") for layer in layers for part in layer.replace("|", ":").split(":")
    }
    package = ROOT / "nams_local"
    children = {
        f"nams_local.{path.stem if path.is_file() else path.name}"
        for path in package.iterdir()
        if (path.suffix == ".py" and path.name != "__init__.py")
        or (path.is_dir() and (path / "__init__.py").exists())
    }

    assert children - named == set()


def test_importing_the_package_root_loads_nothing_else() -> None:
    assert _loaded_after("import nams_local") == {"nams_local", "nams_local.__version__"}


def test_the_hosted_client_loads_only_the_types_layer() -> None:
    loaded = _loaded_after("import backends.hosted")

    assert "nams_local.models" in loaded
    assert loaded <= TYPES_LAYER, loaded - TYPES_LAYER


def test_every_public_name_resolves_lazily_to_its_module_object() -> None:
    for name in nams_local.__all__:
        assert getattr(nams_local, name) is not None, name
    assert set(nams_local.__all__) <= set(dir(nams_local))
    from nams_local.config import create_nams
    from nams_local.models import Entity

    assert nams_local.Entity is Entity
    assert nams_local.create_nams is create_nams
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = nams_local.no_such_name  # type: ignore[attr-defined]


def test_the_type_checking_block_lists_exactly_the_public_names() -> None:
    """mypy and IDEs read the ``TYPE_CHECKING`` imports; ``__getattr__`` reads
    ``_EXPORTS``: both must name ``__all__`` and the same module for each name."""
    tree = ast.parse((ROOT / "nams_local" / "__init__.py").read_text())
    (block,) = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    ]
    typed = {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    (exports,) = [
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.AnnAssign)
        and isinstance(node.target, ast.Name)
        and node.target.id == "_EXPORTS"
        and node.value is not None
    ]
    lazy = {name: module for module, names in exports.items() for name in names.split()}

    assert typed == lazy
    assert set(nams_local.__all__) == {*typed, "__version__"}
