"""Running ``nams-local serve`` as a real process, the way a user or a CI job does."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .support import wait_until_healthy

__all__ = ["ServeProcess", "serve_process"]

_LISTENING = re.compile(r"serving http://127\.0\.0\.1:(\d+)/v1")


@dataclass
class ServeProcess:
    process: subprocess.Popen[str]
    base_url: str
    banner: str

    def stop(self, sig: signal.Signals = signal.SIGINT, timeout: float = 30.0) -> int:
        """Send ``sig`` and wait for the exit status."""
        self.process.send_signal(sig)
        return self.process.wait(timeout=timeout)


def _first_line(process: subprocess.Popen[str], timeout: float) -> str:
    """The first stdout line, or a failure with stderr if none arrives in time."""
    assert process.stdout is not None
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(process.stdout.readline()))  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout)
    if not lines or not lines[0]:
        process.kill()
        _, err = process.communicate(timeout=10)
        raise AssertionError(f"nams-local serve printed nothing; stderr:\n{err}")
    return lines[0]


@contextmanager
def serve_process(
    args: Sequence[str],
    tmp_path: Path,
    *,
    stderr: Path | None = None,
    start_timeout: float = 60.0,
    extra_env: dict[str, str] | None = None,
) -> Iterator[ServeProcess]:
    """``nams-local serve <args>`` in a subprocess, up and healthy; killed if still running.

    ``stderr``: a file for the server's log (a busy server's access log would fill a pipe
    nobody reads, and then block the server). ``start_timeout``: how long the banner may
    take (``--workers N`` starts its workers one phase after another). ``extra_env``: more
    environment for the server (e.g. ``NAMS_WRITER_TRACE``)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "NAMS_LOCAL_DB": str(tmp_path / "default.db"),
        "HF_HUB_OFFLINE": "1",
        **(extra_env or {}),
    }
    log = open(stderr, "w") if stderr is not None else None  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [sys.executable, "-m", "nams_local.cli", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=log if log is not None else subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        banner = _first_line(process, timeout=start_timeout)
        match = _LISTENING.search(banner)
        assert match, banner
        base_url = f"http://127.0.0.1:{match.group(1)}"
        wait_until_healthy(base_url, timeout=start_timeout)
        yield ServeProcess(process, base_url, banner)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        for stream in (process.stdout, process.stderr, log):
            if stream is not None:
                stream.close()
