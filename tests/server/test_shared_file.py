"""``nams-local serve`` and the database file: another process writing it, and the file
deleted or replaced under the running server."""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path

import httpx
import pytest

from backends.sqlite import SQLiteBackend
from nams_local.server.auth import derived_workspace
from tests.backends.sqlite.files import messages_in, move_away, swap_in
from tests.backends.sqlite.peers import peer_process

from .processes import ServeProcess, serve_process
from .support import bearer

TOKEN = "shared-file-token"


def _serve(db: Path, tmp_path: Path) -> AbstractContextManager[ServeProcess]:
    return serve_process(["--port", "0", "--db", str(db), "--no-embeddings"], tmp_path)


def _client(served: ServeProcess) -> httpx.Client:
    return httpx.Client(base_url=served.base_url, headers=bearer(TOKEN), timeout=30)


def _node_ids(body: dict[str, object]) -> set[str]:
    nodes = body["nodes"]
    assert isinstance(nodes, list)
    return {str(node["id"]) for node in nodes}


def test_the_server_sees_a_script_writing_the_same_file(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    with _serve(db, tmp_path) as served, _client(served) as http:
        assert http.get("/v1/entities/graph").status_code == 200  # the mirror is loaded
        with peer_process(db, derived_workspace(TOKEN), embeddings=False) as peer:
            hub = peer.ask("add_entity", name="Hub", type="place")
            spokes: list[str] = []
            for n in range(8):
                spokes.append(peer.ask("add_entity", name=f"Spoke {chr(65 + n)}", type="place"))
                peer.ask("add_relationship", source=hub, target=spokes[-1])
                around = http.get(f"/v1/entities/{spokes[-1]}/neighbourhood")
                assert around.status_code == 200, around.text
                assert _node_ids(around.json()) == {hub, spokes[-1]}
            assert _node_ids(http.get(f"/v1/entities/{hub}/neighbourhood").json()) == {
                hub,
                *spokes,
            }
            peer.ask("delete_entity", id=spokes[0])
            assert _node_ids(http.get("/v1/entities/graph").json()) == {hub, *spokes[1:]}
            served_one = http.post("/v1/entities", json={"name": "Depot", "type": "place"})
            assert served_one.status_code == 201
            assert served_one.json()["id"] in peer.ask("graph")["nodes"]
            again = http.post("/v1/entities", json={"name": "hub", "type": "place"})
            assert again.json()["id"] == hub  # resolved against the peer's entity


def test_two_servers_on_one_file_answer_alike(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    with (
        _serve(db, tmp_path) as one,
        _serve(db, tmp_path) as two,
        _client(one) as first,
        _client(two) as second,
    ):
        assert second.get("/v1/entities/graph").status_code == 200  # the mirror is loaded
        hub = first.post("/v1/entities", json={"name": "Hub", "type": "place"}).json()["id"]
        for n in range(20):
            made = first.post("/v1/entities", json={"name": f"Stop {n}", "type": "place"})
            stop = made.json()["id"]
            linked = first.post(
                "/v1/relationships", json={"sourceId": hub, "targetId": stop, "type": "LINKS"}
            )
            assert linked.status_code == 201, linked.text
            around = second.get(f"/v1/entities/{stop}/neighbourhood")
            assert around.status_code == 200, around.text
            assert _node_ids(around.json()) == {hub, stop}
        # The same new name posted to both at once, many times: one entity each time.
        with ThreadPoolExecutor(max_workers=2) as pool:
            for n in range(10):
                body = {"name": f"Twin {n}", "type": "place"}
                sent = [
                    pool.submit(http.post, "/v1/entities", json=body) for http in (first, second)
                ]
                answers = [future.result() for future in sent]
                assert [a.status_code for a in answers] == [201, 201]
                assert len({a.json()["id"] for a in answers}) == 1
        names = [e["name"] for e in second.get("/v1/entities").json()["entities"]]
        assert len(names) == len(set(names)) == 1 + 20 + 10


def _assert_unavailable(http: httpx.Client, conversation: str, what: str) -> None:
    for method, url, body in (
        ("POST", f"/v1/conversations/{conversation}/messages", {"role": "user", "content": "x"}),
        ("POST", "/v1/conversations", {"userId": "late"}),
        ("GET", f"/v1/conversations/{conversation}/messages", None),
        ("GET", "/v1/conversations", None),
        ("GET", "/v1/entities/graph", None),
        ("POST", "/v1/entities", {"name": "Late", "type": "place"}),
    ):
        answer = http.request(method, url, json=body)
        assert answer.status_code == 503, (method, url, answer.text)
        assert what in answer.json()["error"]


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_served_file_that_goes_away_answers_503_and_acknowledges_nothing(
    tmp_path: Path, how: str
) -> None:
    db, kept = tmp_path / "served.db", tmp_path / "kept.db"
    with _serve(db, tmp_path) as served, _client(served) as http:
        conversation = http.post("/v1/conversations", json={"userId": "u1"}).json()["id"]
        said = http.post(
            f"/v1/conversations/{conversation}/messages",
            json={"role": "user", "content": "acknowledged before"},
        )
        assert said.status_code == 201
        if how == "replaced":
            other_db = tmp_path / "other.db"
            with sqlite3.connect(other_db) as other:
                other.execute("CREATE TABLE unrelated(x)")
            other.close()
            # In one rename: the server's background work (extraction of the message just
            # acknowledged) must not look at the path while it names nothing.
            swap_in(db, other_db, kept)
            _assert_unavailable(http, conversation, "was replaced by another file")
        else:
            move_away(db, kept)
            _assert_unavailable(http, conversation, "was deleted")
        assert served.stop() == 0
    if how == "deleted":
        assert not db.exists()  # nothing opened a new, empty file at the path
    else:
        conn = sqlite3.connect(db)
        tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master")]
        conn.close()
        assert tables == ["unrelated"]
    assert messages_in(kept) == ["acknowledged before"]


async def test_the_kept_file_reopens_whole(tmp_path: Path) -> None:
    """What the server acknowledged is in the file it had open, readable by a new store."""
    db, kept = tmp_path / "served.db", tmp_path / "kept.db"
    with _serve(db, tmp_path) as served, _client(served) as http:
        http.post("/v1/entities", json={"name": "Keep", "type": "place"})
        move_away(db, kept)
        assert http.post("/v1/entities", json={"name": "Lost", "type": "place"}).status_code == 503
        assert served.stop() == 0
    async with SQLiteBackend(kept, embeddings=False) as root:
        names = [e.name for e in await root.for_workspace(derived_workspace(TOKEN)).list_entities()]
    assert names == ["Keep"]
