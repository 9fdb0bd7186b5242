"""The one place the version is set: ``pyproject.toml`` reads it from here (setuptools
``dynamic``), and the package root, the CLI, the server and the hosted client's
``User-Agent`` import it from here, so importing the version never loads anything else."""

__version__ = "0.1.0"
