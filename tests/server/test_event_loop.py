"""``serve`` runs on uvloop and httptools when they are installed, and says so.

uvicorn's own ``"auto"`` falls back silently; ``runtime.py`` chooses by name and ``/healthz``
reports the loop that really runs, so a slow fallback is visible (and fails here).
"""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

from nams_local.server.runtime import http_choice, loop_choice

from .processes import serve_process


@pytest.mark.skipif(sys.platform == "win32", reason="uvloop has no Windows build")
def test_serve_answers_healthz_from_uvloop(tmp_path: Path) -> None:
    args = ["--port", "0", "--db", str(tmp_path / "m.db"), "--no-embeddings", "--no-ui"]
    with serve_process(args, tmp_path, stderr=tmp_path / "serve.log") as server:
        health = httpx.get(f"{server.base_url}/healthz", timeout=10).json()
        assert server.stop() == 0
    assert health["loop"] == "uvloop"
    assert health["status"] == "ok"


def test_the_choice_follows_what_imports(monkeypatch: pytest.MonkeyPatch) -> None:
    if sys.platform != "win32":
        assert loop_choice() == "uvloop"
    assert http_choice() == "httptools"
    # ``None`` in sys.modules makes ``import uvloop`` raise ImportError: as if not installed.
    monkeypatch.setitem(sys.modules, "uvloop", None)
    monkeypatch.setitem(sys.modules, "httptools", None)
    assert loop_choice() == "asyncio"
    assert http_choice() == "h11"


async def test_healthz_names_the_loop_of_an_in_process_app(http: httpx.AsyncClient) -> None:
    # pytest's event loop is asyncio's own: the field reports what runs, not the choice.
    health = (await http.get("/healthz")).json()
    assert health["loop"] == "asyncio"
