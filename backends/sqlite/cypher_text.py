"""Caller Cypher → the text grand-cypher runs: checked read-only, parameterised, labelled.

grand-cypher parses a small Cypher dialect (double-quoted strings that it ``eval``s,
upper-case aggregate names, no ``$parameters``, no ``count(*)``) and has no notion of
reads versus writes. Everything a caller writes therefore goes through this lexer first:

* a write clause is refused by looking at keyword *tokens*, so ``"CREATE"`` inside a string
  literal or a comment is just text;
* every string literal is decoded by Cypher's rules and re-rendered by ``json.dumps``, and
  every ``$parameter`` becomes a literal rendered the same way: grand-cypher's ``eval`` only
  ever sees strings this module wrote, and caller text never changes the query's structure;
* labels and relationship types are normalised with ``label_key`` (the projection labels
  the graph the same way), so ``:Person``, ``:person`` and ``:PERSON`` are one label;
* every RETURN item gets a private alias, because grand-cypher's result dict loses the
  RETURN order; the public column name is the caller's alias or the item's text, as in
  Neo4j;
* SKIP and LIMIT are taken out and applied to the finished rows unless grand-cypher pages
  correctly on its own (see ``_pages_natively``).
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from typing import Any, TypeGuard

from nams_local.errors import InvalidInputError
from nams_local.json_depth import check_json_depth

__all__ = ["WRITE_CLAUSES", "Column", "Statement", "label_key", "prepare"]

#: Clauses that write (or run procedures / load files, which could): always refused.
WRITE_CLAUSES = frozenset(
    {"CREATE", "MERGE", "DELETE", "DETACH", "SET", "REMOVE", "DROP", "CALL", "LOAD", "FOREACH"}
)
_AGGREGATES = frozenset({"COUNT", "SUM", "AVG", "MAX", "MIN", "COLLECT"})
_RETURN_END = frozenset({"ORDER", "SKIP", "LIMIT"})
_PRIVATE_ALIAS = "_nams_col_{}"

#: grand-cypher parses with lark's Earley parser, whose time grows steeply with chained
#: conditions (48 ORs take about a second, 200 half a minute) and with length (an 8 KB
#: ``IN`` list about half a second), on a thread nothing can cancel. Past these, a query
#: is refused rather than allowed to hold a worker for minutes.
MAX_CONDITIONS = 32
MAX_QUERY_CHARS = 10_000

_TOKEN = re.compile(
    r"""
     (?P<space>\s+)
    |(?P<comment>//[^\n]*|/\*.*?\*/)
    |(?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
    |(?P<quoted>`(?:[^`]|``)*`)
    |(?P<param>\$(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+))
    |(?P<name>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<number>[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)
    |(?P<punct>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_ESCAPE = re.compile(r"\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)", re.DOTALL)
_SIMPLE_ESCAPES = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f"}
_SIMPLE_ESCAPES.update({c: c for c in "'\"\\"})


@functools.lru_cache(maxsize=1024)
def label_key(text: str) -> str:
    """The one spelling of a label or relationship type: upper case, and every run of
    characters other than ASCII letters, digits and ``_`` as ``_`` (a leading digit gets a
    ``_`` in front, so the result is always a name grand-cypher can parse)."""
    key = re.sub(r"[^A-Za-z0-9_]+", "_", text.strip()).upper()
    return key if key and not key[0].isdigit() else f"_{key}"


@dataclass(frozen=True)
class Column:
    """One RETURN item: the public column name and the key grand-cypher returns it under."""

    name: str
    key: str
    #: ``COUNT``, ``SUM``... when the item is one aggregate call (it then has a value even
    #: when nothing matched, as in Neo4j).
    aggregate: str | None = None


@dataclass(frozen=True)
class Statement:
    """A checked, rewritten query ready for grand-cypher."""

    text: str
    columns: tuple[Column, ...]
    #: ``RETURN DISTINCT``: grand-cypher's own DISTINCT breaks on aliases and with ORDER BY,
    #: so the rows are made distinct after the run.
    distinct: bool = False
    #: The SKIP and LIMIT taken out of ``text``, to apply to the finished rows (after the
    #: DISTINCT, and after the row aggregates give over no matches); 0 and None when
    #: grand-cypher pages the query itself.
    skip: int = 0
    limit: int | None = None


@dataclass(frozen=True)
class _Token:
    kind: str
    text: str
    start: int
    end: int


def _tokens(cypher: str) -> tuple[list[_Token], str]:
    """The significant tokens, and ``cypher`` with its comments blanked to spaces (same
    offsets), so neither a rewritten query nor a column name carries a comment."""
    found: list[_Token] = []
    blanked = list(cypher)
    for m in _TOKEN.finditer(cypher):
        kind = m.lastgroup or "punct"
        if kind == "comment":
            blanked[m.start() : m.end()] = " " * (m.end() - m.start())
        if kind in ("space", "comment"):
            continue
        if kind == "punct" and m.group() in "'\"`":
            raise InvalidInputError(f"unterminated {m.group()} quote in the Cypher query")
        found.append(_Token(kind, m.group(), m.start(), m.end()))
    return found, "".join(blanked)


_LONE_SURROGATE = "strings must be valid Unicode (no lone surrogates)"


def _decode_string(literal: str) -> str:
    """The value of a Cypher string literal (either quote), by Cypher's escape rules."""

    def escape(m: re.Match[str]) -> str:
        code = m.group(1)
        if code[0] in "uU" and len(code) > 1:
            return chr(int(code[1:], 16))
        if code in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[code]
        raise InvalidInputError(f"invalid escape \\{code} in a Cypher string literal")

    try:
        decoded = _ESCAPE.sub(escape, literal[1:-1])
    except ValueError as exc:  # chr() of a code point past U+10FFFF
        raise InvalidInputError(f"invalid escape in a Cypher string literal: {exc}") from exc
    # ``\uD83D\uDE00`` is one character in Cypher (UTF-16 escapes); a lone half is no text.
    try:
        return decoded.encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(_LONE_SURROGATE) from exc


def _valid_text(text: str) -> str:
    """``text``, which must be encodable (no lone surrogates): a value that could not be
    sent back as JSON is refused here rather than failing the response."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(_LONE_SURROGATE) from exc
    return text


def _literal(value: Any, name: str) -> str:
    """A parameter value as a literal grand-cypher parses back to the same value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError(f"parameter ${name} must be a finite number")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(_valid_text(value), ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_literal(v, name) for v in value) + "]"
    raise InvalidInputError(
        f"parameter ${name} must be a string, number, boolean, null or list of those"
    )


def _unquote(token: _Token) -> str:
    return token.text[1:-1].replace("``", "`") if token.kind == "quoted" else token.text


def _is_name(token: _Token | None, *words: str) -> bool:
    return token is not None and token.kind == "name" and token.text.upper() in words


def _is_variable(token: _Token | None) -> TypeGuard[_Token]:
    return token is not None and token.kind == "name"


class _Rewriter:
    """One pass over the tokens, writing ``out[i]`` as the replacement for token ``i``."""

    def __init__(self, cypher: str, params: dict[str, Any]) -> None:
        self.params = params
        self.tokens, self.cypher = _tokens(cypher)
        self.out = [t.text for t in self.tokens]

    def _prev(self, i: int) -> _Token | None:
        return self.tokens[i - 1] if i > 0 else None

    def _next(self, i: int) -> _Token | None:
        return self.tokens[i + 1] if i + 1 < len(self.tokens) else None

    def rewrite(self) -> Statement:
        brackets: list[str] = []
        for i, token in enumerate(self.tokens):
            prev = self._prev(i)
            in_pattern = bool(brackets) and brackets[-1] in "(["
            is_label = in_pattern and prev is not None and prev.text in (":", "|")
            if token.kind == "punct" and token.text in "([{":
                brackets.append(token.text)
            elif token.kind == "punct" and token.text in ")]}":
                if not brackets or "([{"[")]}".index(token.text)] != brackets.pop():
                    raise InvalidInputError(f"unbalanced {token.text!r} in the Cypher query")
            elif token.kind in ("name", "quoted") and is_label:
                self.out[i] = label_key(_unquote(token))
            elif token.kind == "name":
                self._name(i, token, prev)
            elif token.kind == "quoted":
                self.out[i] = self._quoted_name(token)
            elif token.kind == "string":
                self.out[i] = json.dumps(_decode_string(token.text), ensure_ascii=False)
            elif token.kind == "param":
                self.out[i] = self._param(token.text[1:])
        if brackets:
            raise InvalidInputError(f"unclosed {brackets[-1]!r} in the Cypher query")
        self._check_directions()
        conditions = sum(_is_name(t, "AND", "OR", "XOR") for t in self.tokens)
        if conditions > MAX_CONDITIONS:
            raise InvalidInputError(
                f"too many AND/OR conditions ({conditions}, at most {MAX_CONDITIONS}); "
                "use IN [...] or a list parameter for alternatives"
            )
        span = self._return_clause()
        if span is None:
            raise InvalidInputError("the query needs a RETURN clause")
        start, end, distinct_at = span
        columns = self._alias_return_items(start, end)
        if self._pages_natively(start, distinct_at):
            self._paging(end, remove=False)  # still checked
            return Statement(text=self._text(), columns=columns)
        skip, limit = self._paging(end, remove=True)
        if distinct_at is not None:
            self.out[distinct_at] = ""
        distinct = distinct_at is not None
        return Statement(self._text(), columns, distinct=distinct, skip=skip or 0, limit=limit)

    def _pages_natively(self, start: int, distinct_at: int | None) -> bool:
        """Whether grand-cypher's own SKIP/LIMIT give the right rows, which it applies while
        matching so that it can stop early. That is only right for one MATCH pattern whose
        matches are the rows: it would count or collect only the first LIMIT matches; DISTINCT
        is done by this engine after the run; and with two MATCH clauses it limits each part
        before joining, filtering and ordering them (ORDER BY alone it pages after sorting,
        but then it reads every match anyway, so nothing is lost by paging here)."""
        if distinct_at is not None:
            return False
        matches, depth = 0, 0
        for i, token in enumerate(self.tokens):
            if token.kind == "punct" and token.text in "([{":
                depth += 1
            elif token.kind == "punct" and token.text in ")]}":
                depth -= 1
            elif depth == 0 and self._is_keyword(i, "MATCH"):
                matches += 1
            elif i >= start and self._is_keyword(i, "ORDER", *_AGGREGATES):
                following = self._next(i)
                is_call = following is not None and following.text == "("
                if is_call or token.text.upper() == "ORDER":
                    return False
        return matches == 1

    def _is_keyword(self, i: int, *words: str) -> bool:
        """Whether token ``i`` is one of ``words`` and not a property name (``n.order``)."""
        prev = self._prev(i)
        return _is_name(self.tokens[i], *words) and (prev is None or prev.text != ".")

    def _check_directions(self) -> None:
        """Refuse undirected relationship patterns: grand-cypher answers them with no rows
        on a directed graph, which would be a silent wrong answer."""
        in_match = False
        for i, token in enumerate(self.tokens):
            if token.kind == "name" and token.text.upper() in ("MATCH", "WHERE", "RETURN"):
                in_match = token.text.upper() == "MATCH"
            elif in_match and token.text == ")" and self._edge_is_undirected(i + 1):
                raise InvalidInputError(
                    "undirected relationship patterns are not supported: give each "
                    "relationship a direction, -[...]-> or <-[...]-"
                )

    def _edge_is_undirected(self, start: int) -> bool:
        """Whether the relationship pattern starting at token ``start`` (just after a node
        pattern's ``)``) has neither ``<`` before it nor ``>`` after it."""
        tokens = self.tokens
        if start >= len(tokens) or tokens[start].text != "-":
            return False  # no relationship here, or an incoming one (``<-``)
        end = start + 1
        if end < len(tokens) and tokens[end].text == "[":
            while end < len(tokens) and tokens[end].text != "]":
                end += 1
            end += 1
        after = end + 1
        return (
            end < len(tokens)
            and tokens[end].text == "-"
            and (after >= len(tokens) or tokens[after].text != ">")
        )

    def _paging(self, end: int, *, remove: bool) -> tuple[int | None, int | None]:
        """The counts of the SKIP and LIMIT after the RETURN items (which must be
        non-negative integers), taken out of the query when ``remove``."""
        found: dict[str, int] = {}
        for i in range(end, len(self.tokens) - 1):
            if _is_name(self.tokens[i], "SKIP", "LIMIT") and self.tokens[i - 1].text != ".":
                word, count = self.tokens[i].text.upper(), self.out[i + 1]
                if not (count.isascii() and count.isdigit()):
                    raise InvalidInputError(f"{word} takes a non-negative integer, not {count}")
                found[word] = int(count)
                if remove:
                    self.out[i] = self.out[i + 1] = ""
        return found.get("SKIP"), found.get("LIMIT")

    def _text(self) -> str:
        """The rewritten tokens with the caller's own spacing between them (grand-cypher's
        grammar has multi-character tokens such as ``-[`` that spacing would break)."""
        pieces, end = [], 0
        for token, text in zip(self.tokens, self.out, strict=True):
            pieces += [self.cypher[end : token.start], text]
            end = token.end
        return "".join(pieces)

    def _name(self, i: int, token: _Token, prev: _Token | None) -> None:
        word = token.text.upper()
        after_dot = prev is not None and prev.text == "."
        if word in WRITE_CLAUSES and not after_dot:
            raise InvalidInputError(
                f"{word} is not allowed: queries are read-only (no CREATE, MERGE, DELETE, "
                "DETACH, SET, REMOVE, DROP, CALL, LOAD CSV or FOREACH)"
            )
        following = self._next(i)
        if word in _AGGREGATES and following is not None and following.text == "(":
            self.out[i] = word
            star = self._next(i + 1)
            if word == "COUNT" and star is not None and star.text == "*":
                self.out[i + 2] = self._first_variable()

    def _quoted_name(self, token: _Token) -> str:
        name = _unquote(token)
        if not _NAME.match(name):
            raise InvalidInputError(
                f"the name {token.text} is not supported: names must be letters, digits "
                "and _ (labels and relationship types may contain any characters)"
            )
        return name

    def _param(self, name: str) -> str:
        if name not in self.params:
            raise InvalidInputError(f"missing parameter ${name}")
        return _literal(self.params[name], name)

    def _first_variable(self) -> str:
        """``count(*)`` counts rows; grand-cypher needs a variable every row binds: the
        first node variable of the first MATCH."""
        for i, token in enumerate(self.tokens):
            if _is_name(token, "MATCH"):
                opening, variable = self._next(i), self._next(i + 1)
                if opening is not None and opening.text == "(" and _is_variable(variable):
                    return variable.text
                break
        raise InvalidInputError("count(*) needs a first MATCH pattern that names its node")

    def _return_clause(self) -> tuple[int, int, int | None] | None:
        """Token range of the top-level RETURN items (not a subquery's), and where its
        DISTINCT is, if it has one."""
        depth, start, distinct_at = 0, None, None
        for i, token in enumerate(self.tokens):
            if token.kind == "punct" and token.text in "([{":
                depth += 1
            elif token.kind == "punct" and token.text in ")]}":
                depth -= 1
            elif depth == 0 and start is None and _is_name(token, "RETURN"):
                start = i + 1
                if _is_name(self._next(i), "DISTINCT"):
                    distinct_at, start = start, start + 1
            elif depth == 0 and start is not None and _is_name(token, *_RETURN_END):
                return start, i, distinct_at
        return None if start is None else (start, len(self.tokens), distinct_at)

    def _lone_aggregate(self, first: int, last: int) -> str | None:
        """``COUNT`` etc. when tokens ``first..last`` are one aggregate call, else None."""
        head, opening, closing = self.tokens[first], self._next(first), self.tokens[last]
        if not _is_name(head, *_AGGREGATES) or opening is None or opening.text != "(":
            return None
        depth = 0
        for i in range(first + 1, last + 1):
            depth += (self.tokens[i].text == "(") - (self.tokens[i].text == ")")
            if depth == 0:
                return head.text.upper() if i == last and closing.text == ")" else None
        return None

    def _alias_return_items(self, start: int, end: int) -> tuple[Column, ...]:
        items: list[tuple[int, int]] = []
        depth, first = 0, start
        for i in range(start, end):
            text = self.tokens[i].text if self.tokens[i].kind == "punct" else ""
            depth += (text in "([{") - (text in ")]}") if text else 0
            if depth == 0 and text == ",":
                items.append((first, i))
                first = i + 1
        items.append((first, end))
        columns: list[Column] = []
        for n, (first, end) in enumerate(items):
            if first >= end:
                raise InvalidInputError("empty item in the RETURN clause")
            last = end - 1
            aliased = end - first >= 2 and _is_name(self.tokens[last - 1], "AS")
            aggregate = self._lone_aggregate(first, last - 2 if aliased else last)
            if aliased:
                alias = _unquote(self.tokens[last])
                columns.append(Column(name=alias, key=alias, aggregate=aggregate))
                continue
            key = _PRIVATE_ALIAS.format(n)
            self.out[last] += f" AS {key}"
            text = self.cypher[self.tokens[first].start : self.tokens[last].end]
            columns.append(Column(name=" ".join(text.split()), key=key, aggregate=aggregate))
        names = [c.name for c in columns]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise InvalidInputError(f"duplicate RETURN column names: {', '.join(duplicates)}")
        return tuple(columns)


def prepare(cypher: str, params: dict[str, Any] | None = None) -> Statement:
    """Check ``cypher`` is a read and rewrite it for grand-cypher (``InvalidInputError``
    when it writes, misses a parameter or has no RETURN)."""
    if params is not None and not isinstance(params, dict):
        raise InvalidInputError("params must be an object")
    check_json_depth(params, "params")
    if len(cypher) > MAX_QUERY_CHARS:
        raise InvalidInputError(f"the query is too long (at most {MAX_QUERY_CHARS} characters)")
    statement = _Rewriter(cypher, params or {}).rewrite()
    if len(statement.text) > MAX_QUERY_CHARS:
        raise InvalidInputError(
            f"the query with its parameters is too long (at most {MAX_QUERY_CHARS} characters)"
        )
    return statement
