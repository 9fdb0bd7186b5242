"""The listening sockets of ``nams-local serve``: one, or one per ``--workers`` process.

Kept apart from ``serve.py`` so the supervisor (``workers.py``), which ``serve`` starts,
can bind its workers' sockets without importing ``serve`` back.
"""

from __future__ import annotations

import socket
import sys

__all__ = ["SPREAD", "bind", "bind_like"]

#: Whether the kernel spreads new connections over sockets bound with ``SO_REUSEPORT``
#: (Linux). Elsewhere ``--workers N`` shares one listening socket, and a burst of
#: connections goes to whichever worker accepts first.
SPREAD = sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


def bind(host: str, port: int, *, shared: bool = False) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``port`` 0 = any free port).

    Created with ``proto=IPPROTO_TCP`` on purpose: asyncio turns Nagle's algorithm off only
    on accepted sockets whose protocol says TCP, and ``socket.create_server`` leaves it 0.
    With Nagle on, every keep-alive response waited ~40 ms for a delayed ACK.

    ``shared`` (``--workers N`` where the kernel spreads connections: ``SPREAD``): the
    socket only holds the address, with ``SO_REUSEPORT`` and without listening, and each
    worker listens on a socket of its own bound to it (``workers.py``). The address is
    first bound without ``SO_REUSEPORT``, so a port that anything holds, another ``serve
    --workers`` of the same user included, is refused as before instead of shared.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    spread = shared and SPREAD
    if spread:
        probe = _bound(family, (host, port), reuse_port=False)
        port = probe.getsockname()[1]  # ``0`` picked a free port: keep that one
        probe.close()
    sock = _bound(family, (host, port), reuse_port=spread)
    if not spread:
        try:
            sock.listen(socket.SOMAXCONN)
        except BaseException:
            sock.close()
            raise
    return sock


def bind_like(reserved: socket.socket) -> socket.socket:
    """Another socket bound, with ``SO_REUSEPORT``, to the address ``reserved`` (from
    ``bind(..., shared=True)``) holds; it listens once its worker serves, and from then on
    the kernel gives it its share of new connections."""
    return _bound(reserved.family, reserved.getsockname(), reuse_port=True)


def _bound(family: int, address: tuple[object, ...], *, reuse_port: bool) -> socket.socket:
    """A TCP socket bound to ``address`` (closed again if any step fails)."""
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
    except BaseException:
        sock.close()
        raise
    return sock
