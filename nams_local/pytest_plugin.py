"""A pytest plugin: ``nams-local serve`` as a drop-in CI fake of hosted NAMS.

Installed with nams-local (entry point ``pytest11``), it only defines fixtures, so it does
nothing until a test asks for one:

- ``nams_server`` (session): starts ``nams-local serve`` on a free loopback port with its
  own database in a temporary directory, one API key and ``--allow-reset``; waits until it
  answers; yields a ``NamsServer`` (``endpoint``, ``api_key``, ``env``, ``reset()``); stops
  it at the end of the session.
- ``nams_workspace`` (function): the same server, its workspace emptied before the test,
  so every test starts from nothing.

A suite for any NAMS client needs one line, e.g.
``client = MemoryClient(endpoint=nams_workspace.endpoint, api_key=nams_workspace.api_key)``.
Options (ini or command line): ``nams_serve_args`` (extra ``serve`` arguments, e.g.
``--extraction sync``; the default adds ``--no-embeddings``, which starts in about a second),
``nams_startup_timeout`` (seconds, default 60).

The module imports nothing of nams-local: the server runs in a subprocess
(``python -m nams_local.cli serve``), exactly as a CI script would start it.
"""

from __future__ import annotations

import json
import secrets
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

__all__ = ["NamsServer", "nams_server", "nams_workspace"]

#: ``serve`` arguments the fixture adds unless ``nams_serve_args`` is set.
DEFAULT_SERVE_ARGS = ("--no-embeddings",)


@dataclass
class NamsServer:
    """A running ``nams-local serve``: where it listens and the key that opens it."""

    #: The REST root, ``http://127.0.0.1:<port>/v1`` (what clients call ``endpoint``).
    endpoint: str
    api_key: str
    process: subprocess.Popen[bytes] = field(repr=False)
    log: Path = field(repr=False)

    @property
    def base_url(self) -> str:
        return self.endpoint.removesuffix("/v1")

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}

    @property
    def env(self) -> dict[str, str]:
        """The variables NAMS clients read, for a client started as a subprocess."""
        return {"MEMORY_ENDPOINT": self.endpoint, "MEMORY_API_KEY": self.api_key}

    def reset(self, workspace: str | None = None) -> None:
        """Empty the key's workspace (or the one ``X-Workspace-Id`` names)."""
        headers = dict(self.headers)
        if workspace is not None:
            headers["X-Workspace-Id"] = workspace
        response = httpx.post(f"{self.endpoint}/testing/reset", headers=headers, timeout=30)
        if response.status_code != 200:
            raise RuntimeError(f"reset failed: {response.status_code} {response.text}")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("nams", "nams-local serve as a CI fake (nams_server fixture)")
    group.addoption(
        "--nams-serve-args",
        default=None,
        help="extra arguments for nams-local serve (one string, shell-quoted)",
    )
    parser.addini("nams_serve_args", "extra arguments for nams-local serve", type="args")
    parser.addini("nams_startup_timeout", "seconds to wait for the server", default="60")


def _serve_args(config: pytest.Config) -> list[str]:
    given = config.getoption("--nams-serve-args")
    if given is not None:
        return shlex.split(given)
    from_ini: list[str] = config.getini("nams_serve_args")
    return from_ini or list(DEFAULT_SERVE_ARGS)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=30)


def _wait_ready(process: subprocess.Popen[bytes], ready: Path, log: Path, timeout: float) -> str:
    """The endpoint from the ready file, once the server wrote it (it does so only when it
    accepts requests); fails with the server's log if it exits or the time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready.is_file():
            endpoint: str = json.loads(ready.read_text(encoding="utf-8"))["endpoint"]
            return endpoint
        if process.poll() is not None:
            break
        time.sleep(0.05)  # between checks of a condition with a deadline
    _stop(process)
    output = log.read_text(encoding="utf-8", errors="replace")[-4000:]
    raise RuntimeError(f"nams-local serve did not become ready in {timeout:g} s:\n{output}")


@pytest.fixture(scope="session")
def nams_server(
    tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Iterator[NamsServer]:
    """``nams-local serve`` for the whole session (see the module docstring)."""
    folder = tmp_path_factory.mktemp("nams-server")
    key = "nams_test_" + secrets.token_urlsafe(24)
    ready = folder / "ready.json"
    log = folder / "serve.log"
    command = [
        sys.executable,
        "-m",
        "nams_local.cli",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--db",
        str(folder / "nams.db"),
        "--api-key",
        key,
        "--allow-reset",
        "--ready-file",
        str(ready),
        *_serve_args(pytestconfig),
    ]
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    try:
        timeout = float(pytestconfig.getini("nams_startup_timeout"))
        endpoint = _wait_ready(process, ready, log, timeout)
        yield NamsServer(endpoint=endpoint, api_key=key, process=process, log=log)
    finally:
        _stop(process)


@pytest.fixture
def nams_workspace(nams_server: NamsServer) -> NamsServer:
    """The session's server with its workspace emptied before this test."""
    nams_server.reset()
    return nams_server
