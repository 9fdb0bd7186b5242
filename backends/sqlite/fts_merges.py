"""Full-text segments merged while the writer is idle, so a search reads few of them.

FTS5 writes every transaction's new postings as a new segment (a b-tree) and merges
segments as it goes: by default only once a level holds four of them, and only as much
merge work per transaction as it wrote (``automerge``). A store written one small
transaction at a time — every chat message, every extracted entity — therefore keeps
15-17 segments per index, and every full-text query looks each of its terms up in every
one of them and merges their doclists. On the 100k-message ``turn`` store, merged from 17
segments to 2, the same queries cost about half: a conversation's BM25 query 0.22 ->
0.12 ms, a turn's shared query over six conversations 1.07 -> 0.60 ms (measured on copies
of one file; docs/retrieval.md, "Session 6").

``optimize`` merges everything into one segment, but rewrites the whole index each time
(seconds at a million messages, all of it holding the writer). Here the merging is the
incremental kind FTS5 offers: ``INSERT INTO t(t, rank) VALUES('merge', N)`` writes about
``N`` pages of merged data and merges only levels holding at least ``usermerge``
segments. With ``usermerge`` at 2 (``USERMERGE``; set once per file, ``configure``) that
leaves at most one segment per level: a handful for any index size, each entry rewritten
about once per level over its life (the binary-counter bound), and no single step larger
than ``STEP_PAGES`` pages — a few milliseconds of writer time.

Steps run only once the writer has had nothing to do for ``IDLE_SECONDS`` (``WriterLane``),
then back to back, each in its own short transaction under the file's writer lock, so a
request write waits behind at most one step. FTS5 itself says when there is nothing left:
a ``merge`` that did no work changes fewer than two rows (``total_changes``), and the
table is then left alone until the next unit of work. Results are unchanged: BM25 reads the
same postings, only from fewer b-trees.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

__all__ = ["IDLE_SECONDS", "STEP_PAGES", "TABLES", "USERMERGE", "FtsMerges", "configure"]

log = logging.getLogger("nams_local.sqlite")

#: The FTS5 tables of a store (``schema.FTS_DDL``).
TABLES = ("messages_fts", "entities_fts", "store_items_fts")
#: Merge a level once it holds this many segments (FTS5's ``usermerge``; its default is 4).
USERMERGE = 2
#: Pages of merged data one step writes at most (4 KiB pages: ~256 KiB, a few ms).
STEP_PAGES = 64
#: How long the writer must have had no unit of work before merging starts. Long enough
#: that a store written steadily (a chat turn every few tens of ms, the ``load`` mix)
#: never merges between its writes: at 10 ms the ``turn`` benchmark's merge steps ran
#: between turns, against the next turn's reads, and retrieval p50 at 100k went 13.0 ->
#: 14.2 and 12.8 -> 18.4 ms (back to back with merging off); at 250 ms, 16.6 and 13.8
#: off against 16.6 and 14.2 on (a noisier host). A store with pauses merges in them.
IDLE_SECONDS = 0.25


def configure(conn: Any, tables: Sequence[str] = TABLES) -> None:
    """Set ``usermerge`` on each table that lacks it (a DB-API connection, inside the
    store's opening write transaction); a no-op on a file that has it."""
    for table in tables:
        found = conn.execute(f"SELECT v FROM {table}_config WHERE k = 'usermerge'").fetchone()
        if found is None or int(found[0]) != USERMERGE:
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES('usermerge', {USERMERGE})")


class FtsMerges:
    """Which FTS tables may have segments to merge, and one bounded merge step (writer
    thread only; see the module docstring)."""

    def __init__(self, tables: Sequence[str] = TABLES) -> None:
        self._tables = tuple(tables)
        #: Pending from the start: a file may have been left fragmented by its last writer.
        self._pending: set[str] = set(self._tables)
        #: Steps run, steps that merged something, and their seconds in all.
        self.steps = 0
        self.merged = 0
        self.seconds = 0.0

    @property
    def pending(self) -> bool:
        """Whether a table may still have segments to merge."""
        return bool(self._pending)

    def writing(self) -> None:
        """A unit of work is about to write (marked before its future resolves, so its
        caller finds the tables pending): its FTS inserts may add segments."""
        self._pending.update(self._tables)

    def forget(self) -> None:
        """Nothing is pending (a step failed: the next unit of work marks them again)."""
        self._pending.clear()

    def step(self, conn: Any) -> None:
        """One merge of at most ``STEP_PAGES`` pages on the first pending table that has
        work (``conn``: the writer's DB-API connection, inside a write transaction); a
        table with nothing to merge stops being pending."""
        started = time.perf_counter()
        try:
            for table in sorted(self._pending):
                before = conn.total_changes
                conn.execute(f"INSERT INTO {table}({table}, rank) VALUES('merge', {STEP_PAGES})")
                if conn.total_changes - before >= 2:  # FTS5's sign that it merged
                    self.merged += 1
                    return
                self._pending.discard(table)
        finally:
            self.steps += 1
            self.seconds += time.perf_counter() - started

    def as_dict(self) -> dict[str, float]:
        return {
            "fts_merge_steps": self.steps,
            "fts_merges": self.merged,
            "fts_merge_seconds": self.seconds,
        }
