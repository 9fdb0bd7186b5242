"""A serve process sets its start-up heap aside from the cyclic garbage collector.

Python's collector runs a full (generation 2) collection every so often, and a full
collection walks every tracked object with the GIL held: every thread of the process
stops until it is done. After start-up a ``serve`` process holds about 160,000 such
objects — FastAPI's routes and pydantic's models, the engine's modules, tables and
prepared statements — and nearly all of them live as long as the process. Under issue 12's
adversarial load each full collection stopped the server for 121-166 ms (p50 to max, 10-12
of them in a 30 s window, measured with ``gc.callbacks``): time every tenant's request
waited, whatever it was doing.

``settle`` collects once and then freezes what survived (``gc.freeze``: those objects move
to a permanent generation that collections skip), so a full collection walks only what the
process made since (about 27,000 objects in the same run: 25-30 ms p50). Only ``serve``
does this, once it is up: a library never changes the collector of the process that
imports it. Garbage made after start-up is collected as before.
"""

from __future__ import annotations

import gc

__all__ = ["settle"]


def settle() -> int:
    """Collect, then freeze every object that is left; returns how many are frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
