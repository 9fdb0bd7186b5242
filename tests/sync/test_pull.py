"""``nams-local sync --from``: a workspace behind a NAMS endpoint pulled into a fresh local
store, which then holds what the endpoint holds."""

from __future__ import annotations

from pathlib import Path

from backends.hosted import HostedBackend
from backends.sqlite import SQLiteBackend

from .conftest import Target, report_of, run_sync
from .content import seed, snapshot


async def test_pull_into_a_fresh_store_holds_the_endpoint_content_and_resumes_as_a_no_op(
    tmp_path: Path, target: Target, target_client: HostedBackend
) -> None:
    origin = tmp_path / "origin.db"
    await seed(origin, conversations=3, messages=5)
    push = ["--to", target.endpoint, "--api-key", target.key, "--db", str(origin), "--json"]
    report_of(run_sync(push, tmp_path))

    local = tmp_path / "pulled.db"
    pull = ["--from", target.endpoint, "--api-key", target.key, "--db", str(local), "--json"]
    pull += ["--no-embeddings"]
    first = report_of(run_sync(pull, tmp_path, NAMS_EXTRACTION="off"))
    assert first["sent"]["message"] == 15
    again = report_of(run_sync(pull, tmp_path, NAMS_EXTRACTION="off"))
    assert again["sent"] == {}

    async with SQLiteBackend(local, embeddings=False, extraction="off") as pulled:
        assert await snapshot(pulled) == await snapshot(target_client)
