"""Date phrases in chat text ("in May", "last month", "since 2021") and what they mean.

A fact's validity in time comes from the message: the extractor finds a date phrase in the
clause that states the fact (:func:`find_date_phrase`) and the engine resolves it against
the message's timestamp (:func:`resolve_date`). The result is ISO text exactly as precise as
what was said: ``"2021"``, ``"2026-05"``, ``"2026-11-30"``; so plain string order is time
order, and a rendering never claims a day nobody stated.

Why hand-written and not ``dateparser``: measured on this project's machine, dateparser is
15 MB installed (with ``regex``, ``pytz``, ``tzlocal``), imports in about 0.2 s and takes
seconds on its first ``search_dates`` call while it loads language data; it resolves
"last month" to a day ("2026-11-01") that nobody said, and its many languages are a way
for non-English words to be read as English dates. The phrases people use to date a fact
in chat are few; this module handles them in microseconds, English only, and everything
else resolves to nothing (the message's own date is used then).
"""

from __future__ import annotations

import re
from datetime import date, timedelta

__all__ = ["DATE_PHRASE", "find_date_phrase", "resolve_date"]

_MONTHS = {
    name: n
    for n, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sept", "sep"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a few": 3,
}
# "May" alone is a verb too ("I may move"): a bare month needs a preposition before it.
_MONTH_ALT = "|".join(sorted(_MONTHS, key=len, reverse=True))
_NUMBER_ALT = "|".join(sorted((re.escape(k) for k in _NUMBERS), key=len, reverse=True))
_YEAR = r"(?:19|20)\d{2}"

#: A date phrase; the named groups say which kind.
DATE_PHRASE = re.compile(
    rf"\b(?P<iso>{_YEAR}-(?:0[1-9]|1[0-2])(?:-(?:0[1-9]|[12]\d|3[01]))?)\b"
    rf"|\b(?:in|since|from|as\s+of|starting|back\s+in|around|until|till|by|of)\s+"
    rf"(?:(?:early|late|mid)[\s-]+)?(?P<month>{_MONTH_ALT})\.?(?:\s+(?:of\s+)?(?P<month_year>{_YEAR}))?\b"
    rf"|\b(?P<month2>{_MONTH_ALT})\.?\s+(?:of\s+)?(?P<month2_year>{_YEAR})\b"
    rf"|\b(?:in|since|from|as\s+of|starting|back\s+in|around|until|till|by|circa)\s+"
    rf"(?:(?:early|late|mid)[\s-]+)?(?P<year>{_YEAR})\b"
    r"|\b(?P<last>last|this|past)\s+(?P<last_unit>week|month|year|summer|winter|spring|autumn|fall)\b"
    rf"|\b(?P<count>\d{{1,2}}|{_NUMBER_ALT})\s+(?P<unit>day|week|month|year)s?\s+ago\b"
    r"|\b(?P<day>yesterday|today|recently|just now|the other day)\b",
    re.IGNORECASE,
)

_BARE_YEAR = re.compile(_YEAR)
_SEASON_MONTH = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}


def find_date_phrase(text: str) -> str | None:
    """The first date phrase in ``text``, as written, or ``None``."""
    match = DATE_PHRASE.search(text)
    return match.group() if match else None


def _month(anchor: date, months_back: int) -> str:
    total = anchor.year * 12 + (anchor.month - 1) - months_back
    return f"{total // 12:04d}-{total % 12 + 1:02d}"


def _nearest_past_month(anchor: date, month: int) -> str:
    """ "in May" said in December 2026 is May 2026; said in March 2026, May 2025."""
    year = anchor.year if month <= anchor.month else anchor.year - 1
    return f"{year:04d}-{month:02d}"


def resolve_date(phrase: str, anchor: date) -> str | None:
    """The ISO date (as precise as ``phrase``) that ``phrase`` means when said on ``anchor``."""
    if _BARE_YEAR.fullmatch(phrase.strip()):
        return phrase.strip()  # a model's "2021"
    match = DATE_PHRASE.fullmatch(phrase.strip())
    if match is None:
        match = DATE_PHRASE.search(phrase)
    if match is None:
        return None
    g = match.groupdict()
    if g["iso"]:
        return g["iso"]
    for month_key, year_key in (("month", "month_year"), ("month2", "month2_year")):
        if g[month_key]:
            month = _MONTHS[g[month_key].lower()]
            year = g[year_key]
            return f"{int(year):04d}-{month:02d}" if year else _nearest_past_month(anchor, month)
    if g["year"]:
        return g["year"]
    if g["last"]:
        return _relative(anchor, g["last"].lower(), g["last_unit"].lower())
    if g["count"]:
        word = g["count"].lower()
        count = int(word) if word.isdigit() else _NUMBERS[word]
        return _ago(anchor, count, g["unit"].lower())
    if g["day"]:
        if g["day"].lower() == "yesterday":
            return (anchor - timedelta(days=1)).isoformat()
        return anchor.isoformat()
    return None


def _relative(anchor: date, which: str, unit: str) -> str:
    back = 0 if which == "this" else 1
    if unit == "week":
        return (anchor - timedelta(days=7 * back)).isoformat()
    if unit == "month":
        return _month(anchor, back)
    if unit == "year":
        return f"{anchor.year - back:04d}"
    month = _SEASON_MONTH[unit]
    year = anchor.year if (which == "this" or month < anchor.month) else anchor.year - 1
    return f"{year:04d}-{month:02d}"


def _ago(anchor: date, count: int, unit: str) -> str:
    if unit == "day":
        return (anchor - timedelta(days=count)).isoformat()
    if unit == "week":
        return (anchor - timedelta(days=7 * count)).isoformat()
    if unit == "month":
        return _month(anchor, count)
    return f"{anchor.year - count:04d}"
