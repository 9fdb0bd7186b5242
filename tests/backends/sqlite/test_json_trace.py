"""The debugging traces (writer groups, model runs): lines when asked, never a failure."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from backends.sqlite.json_trace import JsonTrace
from backends.sqlite.writer_stats import TRACE_ENV, GroupStats

VARIABLE = "NAMS_TEST_TRACE"


def test_a_trace_appends_one_json_line_per_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"earlier": 1}\n')
    monkeypatch.setenv(VARIABLE, str(path))
    trace = JsonTrace(VARIABLE)
    assert trace.on
    trace.write({"a": 1})
    trace.write({"b": [2, 3]})
    trace.close()
    trace.write({"after": "close"})  # dropped, not an error
    assert [json.loads(line) for line in path.read_text().splitlines()] == [
        {"earlier": 1},
        {"a": 1},
        {"b": [2, 3]},
    ]


def test_an_unset_or_unopenable_trace_is_off_and_warns_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv(VARIABLE, raising=False)
    assert not JsonTrace(VARIABLE).on
    monkeypatch.setenv(VARIABLE, str(tmp_path / "missing-dir" / "t.jsonl"))
    with caplog.at_level(logging.WARNING, logger="nams_local.sqlite"):
        trace = JsonTrace(VARIABLE)
        trace.write({"a": 1})
    assert not trace.on
    assert [r.getMessage() for r in caplog.records if VARIABLE in r.getMessage()] != []


def test_the_writer_trace_still_writes_a_line_per_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "w.jsonl"
    monkeypatch.setenv(TRACE_ENV, str(path))
    stats = GroupStats.from_environment()
    stats.record(False, ["ws-a", "ws-b", "ws-a"], [1, 2, 1], 0.004, 0.003)
    stats.close()
    [line] = [json.loads(x) for x in path.read_text().splitlines()]
    assert line == {
        "background": False,
        "units": 3,
        "cost": 4,
        "keys": ["ws-a", "ws-b"],
        "ms": 4.0,
        "cpu_ms": 3.0,
    }
    assert stats.request.groups == 1 and stats.by_key["ws-b"] == pytest.approx(0.002)
