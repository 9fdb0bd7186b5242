"""Loopback ports for tests that run side by side (``pytest -n``): taken from the OS, never
fixed numbers, so two workers cannot collide.

``closed_port`` keeps its port bound without listening for as long as it is open: a
connection to it is refused at once, and no other worker can start listening there meanwhile
(a port that was merely free a moment ago could be taken by a parallel test).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["closed_port", "free_port"]


def free_port() -> int:
    """A port nothing listens on right now (the OS picks it), for a process that must be
    told its port up front; prefer port 0 wherever the server can report what it bound."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def closed_port() -> Iterator[int]:
    """A bound loopback port nothing listens on: connections to it are refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        yield port
