"""``stored_json.loads``: a stored value too deep to render is replaced, at every size of
the fast path's bracket count (the depth walk is skipped only when it cannot matter)."""

from __future__ import annotations

import json

import pytest

from backends.sqlite.stored_json import UNREADABLE_KEY, loads
from nams_local.json_depth import MAX_JSON_DEPTH


def _nested(levels: int) -> str:
    value: object = 1
    for _ in range(levels):
        value = {"a": value}
    return json.dumps(value)


def test_a_value_at_the_bound_reads_back() -> None:
    text = _nested(MAX_JSON_DEPTH)
    assert loads(text) == json.loads(text)


@pytest.mark.parametrize("levels", [MAX_JSON_DEPTH + 1, MAX_JSON_DEPTH + 5])
def test_a_value_past_the_bound_is_replaced(levels: int) -> None:
    assert set(loads(_nested(levels))) == {UNREADABLE_KEY}


def test_lists_count_as_levels_too() -> None:
    text = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    assert set(loads(text)) == {UNREADABLE_KEY}


def test_brackets_inside_strings_do_not_make_a_value_deep() -> None:
    """More than the bound's brackets, all in a string: walked, and it is shallow."""
    value = {"note": "{[" * MAX_JSON_DEPTH, "list": [1, {"b": 2}]}
    assert loads(json.dumps(value)) == value


def test_empty_and_missing_values_are_an_empty_object() -> None:
    assert loads(None) == {} and loads("") == {} and loads("{}") == {}
