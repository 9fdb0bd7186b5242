"""``nams-local serve --no-ui``: the inspector is gone (404), ``/v1`` is not."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.server.processes import serve_process


def test_no_ui_serves_v1_but_not_the_inspector(tmp_path: Path) -> None:
    args = ["--port", "0", "--db", str(tmp_path / "no-ui.db"), "--no-embeddings", "--no-ui"]
    with serve_process(args, tmp_path, stderr=tmp_path / "serve.log") as served:
        with httpx.Client(base_url=served.base_url, timeout=30) as http:
            assert http.get("/ui/").status_code == 404
            assert http.get("/ui/login").status_code == 404
            listed = http.get("/v1/conversations", headers={"Authorization": "Bearer t"})
            assert listed.status_code == 200
        assert served.stop() == 0
        assert served.process.stdout is not None
        assert "/ui" not in served.process.stdout.read()
