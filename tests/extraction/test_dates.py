"""Date phrases resolved against the day a message was written (no model, English only)."""

from __future__ import annotations

from datetime import date

import pytest

from nams_local.extraction import ExtractionInput
from nams_local.extraction.dates import find_date_phrase, resolve_date
from nams_local.extraction.rules import extract_sync

SAID_ON = date(2026, 12, 1)


@pytest.mark.parametrize(
    ("phrase", "meaning"),
    [
        ("in May", "2026-05"),
        ("since 2021", "2021"),
        ("last month", "2026-11"),
        ("last year", "2025"),
        ("this year", "2026"),
        ("last week", "2026-11-24"),
        ("yesterday", "2026-11-30"),
        ("today", "2026-12-01"),
        ("in March 2021", "2021-03"),
        ("since March of 2021", "2021-03"),
        ("October 2026", "2026-10"),
        ("in December", "2026-12"),
        ("3 months ago", "2026-09"),
        ("two years ago", "2024"),
        ("a few weeks ago", "2026-11-10"),
        ("2021-03-15", "2021-03-15"),
        ("back in 2019", "2019"),
        ("last summer", "2026-06"),
    ],
)
def test_phrases_resolve_to_what_was_said(phrase: str, meaning: str) -> None:
    assert resolve_date(phrase, SAID_ON) == meaning


def test_a_month_later_in_the_year_than_the_message_is_last_years() -> None:
    assert resolve_date("in May", date(2026, 3, 10)) == "2025-05"
    assert resolve_date("last month", date(2026, 1, 15)) == "2025-12"


@pytest.mark.parametrize(
    "text",
    [
        "I may move to Berlin.",  # "may" the verb
        "Ich bin im Mai nach Berlin gezogen.",
        "Me mudé en marzo de 2021.",
        "Je suis arrivé en mars.",
        "Я переехал в мае.",
        "我去年搬到了柏林。",
        "I have 2021 reasons.",
    ],
)
def test_no_date_where_none_was_said_in_english(text: str) -> None:
    assert find_date_phrase(text) is None


def test_the_rule_extractor_attaches_the_clause_date() -> None:
    found = extract_sync(ExtractionInput("I no longer work at TechCorp; I joined Acme in May."))
    when = {r.target: (r.ended, r.when) for r in found.relationships}
    assert when == {"TechCorp": (True, None), "Acme": (False, "in May")}
