"""The test side of ``peer.py``: start the other process, ask it things, stop it."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["Peer", "PeerError", "peer_process"]

#: Generous: the machine running the tests may be busy.
ANSWER_TIMEOUT = 60.0


class PeerError(AssertionError):
    """The peer answered with an error (its exception class and message)."""


class Peer:
    """A ``SQLiteBackend`` in another process, one JSON command at a time."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self._lines: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put("")  # end of output

    def send(self, op: str, **args: Any) -> None:
        """Send a command without waiting for its answer (see ``answer``)."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.process.stdin.flush()

    def answer(self) -> Any:
        """The answer to the oldest command not yet answered."""
        try:
            line = self._lines.get(timeout=ANSWER_TIMEOUT)
        except queue.Empty:
            raise AssertionError(f"the peer did not answer within {ANSWER_TIMEOUT} s") from None
        if not line:
            err = self.process.stderr.read() if self.process.stderr else ""
            raise AssertionError(f"the peer exited; stderr:\n{err}")
        reply = json.loads(line)
        if "error" in reply:
            raise PeerError(f"{reply['error']}: {reply['message']}")
        return reply["ok"]

    def ask(self, op: str, **args: Any) -> Any:
        self.send(op, **args)
        return self.answer()


@contextmanager
def peer_process(
    path: Path, workspace: str = "default", *, embeddings: bool = True
) -> Iterator[Peer]:
    """``peer.py`` on ``path``, ready; asked to quit (killed if it will not) at the end."""
    flags = [] if embeddings else ["no-embeddings"]
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.backends.sqlite.peer", str(path), workspace, *flags],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    peer = Peer(process)
    try:
        assert peer.answer() == "ready"
        yield peer
    finally:
        try:
            if process.poll() is None:
                peer.send("quit")
                process.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait(timeout=10)
        finally:
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream is not None:
                    stream.close()
