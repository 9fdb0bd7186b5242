"""The Cypher conformance table (``tests/cypher_conformance.py``) on the SQLite engine: every
query answers exactly its rows over the seeded memory graph."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from backends.sqlite import SQLiteBackend
from tests.cypher_conformance import CASES, Case, seed


#: One event loop for the module, so one seeded engine serves the whole table.
@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def seeded() -> AsyncIterator[tuple[SQLiteBackend, dict[str, str]]]:
    """One seeded engine for the whole table (every case only reads)."""
    engine = SQLiteBackend(":memory:", embeddings=False)
    try:
        yield engine, await seed(engine)
    finally:
        await engine.aclose()


def resolved(params: dict[str, Any], ids: dict[str, str]) -> dict[str, Any]:
    """``"$name"`` parameter values stand for the seeded ids."""
    return {
        k: ids[v[1:]] if isinstance(v, str) and v.startswith("$") else v for k, v in params.items()
    }


def comparable(case: Case, rows: list[dict[str, Any]]) -> list[Any]:
    """The rows as the case compares them: in order, or as a sorted multiset (with the
    lists inside sorted too: ``collect`` leaves their order open as well)."""
    if case.ordered:
        return rows
    return sorted(
        json.dumps({k: sorted(v) if isinstance(v, list) else v for k, v in row.items()})
        for row in rows
    )


def test_the_table_is_big_enough() -> None:
    assert len(CASES) >= 40
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
async def test_conformance(seeded: tuple[SQLiteBackend, dict[str, str]], case: Case) -> None:
    engine, ids = seeded
    result = await engine.query(case.cypher, resolved(case.params, ids))
    assert comparable(case, result.rows) == comparable(case, case.rows)
    result.to_wire()  # JSON-encodable
