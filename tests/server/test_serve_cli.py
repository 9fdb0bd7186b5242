"""``nams-local serve`` as a real process: up, answering, and down cleanly on a signal."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest

from backends.sqlite import SQLiteBackend
from nams_local.cli import _parser
from nams_local.server.auth import derived_workspace
from tests.ports import free_port

from .processes import ServeProcess, serve_process
from .support import bearer


async def _conversations_in(db: Path, workspace: str) -> list[str]:
    async with SQLiteBackend(db, embeddings=False) as root:
        return [c.user_id or "" for c in await root.for_workspace(workspace).list_conversations()]


#: Ports tried for an explicit ``--port``: one chosen free may be taken by a parallel
#: test before the server binds it; only that failure ("Address already in use") retries.
PORT_ATTEMPTS = 3


@contextmanager
def _serve_on_a_chosen_port(db: Path, tmp_path: Path) -> Iterator[tuple[int, ServeProcess]]:
    """``serve --port N`` with N chosen here, not by the server (what the test checks)."""
    for attempt in range(1, PORT_ATTEMPTS + 1):
        port = free_port()
        args = ["--port", str(port), "--db", str(db), "--no-embeddings"]
        with ExitStack() as stack:
            try:
                served = stack.enter_context(serve_process(args, tmp_path))
            except AssertionError as refused:
                if "Address already in use" not in str(refused) or attempt == PORT_ATTEMPTS:
                    raise
                continue
            yield port, served
            return


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serve_answers_and_stops_cleanly(tmp_path: Path, sig: signal.Signals) -> None:
    db = tmp_path / "served.db"
    with _serve_on_a_chosen_port(db, tmp_path) as (port, served):
        assert served.base_url == f"http://127.0.0.1:{port}"
        assert "open (any bearer token)" in served.banner and str(db) in served.banner
        with httpx.Client(base_url=served.base_url, headers=bearer("cli-token")) as http:
            created = http.post("/v1/conversations", json={"userId": "cli-user"})
            assert created.status_code == 201
            listed = http.get("/v1/conversations").json()["conversations"]
            assert [c["id"] for c in listed] == [created.json()["id"]]
        assert served.stop(sig) == 0
        err = served.process.stderr.read() if served.process.stderr else ""
    assert "Traceback" not in err
    assert "POST /v1/conversations 201" in err and "cli-token" not in err
    # Written to the file, under the token's workspace, and the file closed cleanly.
    users = asyncio.run(_conversations_in(db, derived_workspace("cli-token")))
    assert users == ["cli-user"]


def test_serve_with_api_keys_on_any_free_port(tmp_path: Path) -> None:
    args = ["--port", "0", "--db", str(tmp_path / "k.db"), "--no-embeddings"]
    args += ["--api-key", "key-one", "--api-key", "key-two=shared", "--max-body-bytes", "2000"]
    with serve_process(args, tmp_path) as served:
        assert "2 configured key(s)" in served.banner
        with httpx.Client(base_url=served.base_url) as http:
            assert http.get("/v1/conversations", headers=bearer("other")).status_code == 401
            one = http.post("/v1/conversations", json={}, headers=bearer("key-one"))
            two = http.post("/v1/conversations", json={}, headers=bearer("key-two"))
            assert one.status_code == two.status_code == 201
            assert two.json()["workspaceId"] == "shared"
            assert one.json()["workspaceId"] != "shared"
            big = http.post(
                "/v1/conversations", json={"userId": "x" * 3000}, headers=bearer("key-one")
            )
            assert big.status_code == 413
        assert served.stop(signal.SIGTERM) == 0


def test_serve_fails_fast_when_the_port_is_taken(tmp_path: Path) -> None:
    with serve_process(
        ["--port", "0", "--db", str(tmp_path / "a.db"), "--no-embeddings"], tmp_path
    ) as first:
        port = first.base_url.rsplit(":", 1)[1]
        second = subprocess.run(
            [
                sys.executable,
                "-m",
                "nams_local.cli",
                "serve",
                "--port",
                port,
                "--db",
                str(tmp_path / "b.db"),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert second.returncode == 1
        assert f"cannot listen on 127.0.0.1:{port}" in second.stderr
        assert first.stop() == 0


def test_serve_options_parse() -> None:
    args = _parser().parse_args(["serve", "--api-key", "a", "--api-key", "b=ws", "--no-embeddings"])
    assert (args.host, args.port, args.api_key, args.no_embeddings) == (
        "127.0.0.1",
        8765,
        ["a", "b=ws"],
        True,
    )
    assert args.max_body_bytes is None and args.db is None
