"""A target that rate-limits (429 + ``Retry-After``) and lacks the extensions, as hosted
NAMS does: the sync waits as told, sends nothing twice, and reports what it could not
carry, per kind, with counts."""

from __future__ import annotations

import json
from pathlib import Path

from backends.hosted import HostedBackend
from backends.sqlite import SQLiteBackend
from nams_local.backend import MAX_LIST_LIMIT

from .conftest import Target, report_of, run_sync
from .content import seed
from .proxy import proxy
from .test_push import source_snapshot


async def _messages(backend: HostedBackend | SQLiteBackend) -> list[tuple[str | None, str]]:
    out: list[tuple[str | None, str]] = []
    for conv in await backend.list_conversations(limit=MAX_LIST_LIMIT):
        out += [(conv.user_id, m.content) for m in await backend.list_messages(conv.id, 200)]
    return sorted(out)


async def test_429_is_waited_out_and_what_hosted_cannot_hold_is_counted(
    tmp_path: Path, target: Target, target_client: HostedBackend
) -> None:
    db, checkpoint = tmp_path / "source.db", tmp_path / "sync.json"
    await seed(db, conversations=3, messages=6)  # every third message has metadata
    with proxy(
        target.serve.base_url, throttle_every=4, retry_after="0.2", hide_capabilities=True
    ) as front:
        done = run_sync(
            [
                *("--to", f"{front.url}/v1", "--api-key", target.key, "--db", str(db)),
                *("--checkpoint", str(checkpoint), "--batch-size", "2", "--json"),
            ],
            tmp_path,
        )
        throttled = front.throttled
    report = report_of(done)

    assert throttled >= 3
    assert report["waits"] == throttled
    assert report["sent"]["message"] == 18
    assert report["notCarried"]["relationships"]["count"] == 2
    assert report["notCarried"]["message metadata"]["count"] == 6
    assert report["notCarried"]["conversation metadata values (sent as text)"]["count"] == 3
    assert "relationship validity" not in report["notCarried"]  # no relationship was sent
    # every message arrived exactly once, in spite of the refused requests
    async with SQLiteBackend(db, embeddings=False, extraction="off") as source:
        assert await _messages(target_client) == await _messages(source)
    snap = await source_snapshot(db)
    assert len(await target_client.list_entities()) == len(snap["entities"])


async def test_a_record_the_target_refuses_is_reported_and_not_retried(
    tmp_path: Path, target: Target, target_client: HostedBackend
) -> None:
    db, checkpoint = tmp_path / "source.db", tmp_path / "sync.json"
    await seed(db, conversations=1, messages=2)  # one step with a tool call, one without
    args = ["--to", "", "--api-key", target.key, "--db", str(db)]
    args += ["--checkpoint", str(checkpoint), "--json"]
    with proxy(target.serve.base_url, hide_capabilities=False, refuse="plan 0") as front:
        args[1] = f"{front.url}/v1"
        done = run_sync(args, tmp_path)
        assert done.returncode == 3, done.stderr
        report = json.loads(done.stdout)
        assert [why for why in report["refused"].values()] == ["refused"]
        assert report["notCarried"]["tool calls (their step was refused)"]["count"] == 1
        assert report["sent"]["step"] == 1
        again = run_sync(args, tmp_path)
    assert again.returncode == 3, again.stderr
    assert json.loads(again.stdout)["sent"] == {}  # the refusal is remembered, not retried
    [conv] = await target_client.list_conversations()
    assert [s.reasoning for s in await target_client.list_steps(conv.id)] == ["answer 0"]
