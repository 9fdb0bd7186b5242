"""Caller Cypher → the text the engine runs: checked read-only, labels spelled one way.

The interpreter (kglite, see ``cypher_run.py`` and ``docs/cypher.md``) parses full read
Cypher and takes ``$parameters`` natively, so nothing of the caller's query is rendered
again except two things, found by a lexer that knows strings, comments and backticks:

* **the clause guard**: a write clause (and ``CALL`` and ``LOAD CSV``, which kglite runs even
  in a read-only graph: ``LOAD CSV FROM 'file:///etc/passwd'`` reads the file) is refused by
  looking at keyword *tokens*, so ``"CREATE"`` inside a string or a comment is just text.
  The graph is read-only in the worker as well; the guard is what keeps files and
  procedures out;
* **labels and relationship types** are spelled with ``canonical_label`` (the projection
  labels the graph the same way), so ``:Person``, ``:person`` and ``:PERSON`` are one label
  and ``:conversation`` finds conversations;
* a string literal with a backslash escape is decoded by Cypher's rules (``\\uD83D\\uDE00``
  is one character, as in Neo4j) and written back without escapes the engine could read
  otherwise.

Error messages of the engine quote the query: a syntax error is reported on the caller's own
text (``cypher_run``), never on this module's rewrite.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from nams_local.errors import InvalidInputError
from nams_local.json_depth import check_json_depth

__all__ = [
    "MAX_PARAMS_CHARS",
    "MAX_QUERY_CHARS",
    "SCHEMA_LABELS",
    "WRITE_CLAUSES",
    "Statement",
    "canonical_label",
    "label_key",
    "prepare",
]

#: Clauses that write, run procedures or load files: always refused (kglite's own
#: ``INSERT`` and ``NODETACH DELETE`` included).
WRITE_CLAUSES = frozenset(
    {
        "CREATE",
        "MERGE",
        "DELETE",
        "DETACH",
        "NODETACH",
        "INSERT",
        "SET",
        "REMOVE",
        "DROP",
        "CALL",
        "LOAD",
        "FOREACH",
    }
)

#: The longest query, and the longest parameters (as JSON), accepted.
MAX_QUERY_CHARS = 10_000
MAX_PARAMS_CHARS = 1_000_000

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
_ESCAPE = re.compile(r"\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)", re.DOTALL)
_SIMPLE_ESCAPES = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f"}
_SIMPLE_ESCAPES.update({c: c for c in "'\"\\"})
_LONE_SURROGATE = "strings must be valid Unicode (no lone surrogates)"
_INT64 = 2**63


@functools.lru_cache(maxsize=1024)
def label_key(text: str) -> str:
    """The one spelling of an entity type or relationship type: upper case, and every run
    of characters other than ASCII letters, digits and ``_`` as ``_`` (a leading digit
    gets a ``_`` in front, so the result is always a plain name)."""
    key = re.sub(r"[^A-Za-z0-9_]+", "_", text.strip()).upper()
    return key if key and not key[0].isdigit() else f"_{key}"


#: The labels of the memory model (``cypher_run.py`` projects them), by their ``label_key``.
SCHEMA_LABELS = {
    label_key(label): label
    for label in ("Conversation", "Message", "Entity", "ReasoningStep", "ToolCall")
}


@functools.lru_cache(maxsize=1024)
def canonical_label(text: str) -> str:
    """A node label as the projection spells it: the memory model's own labels as the
    agent-memory schema writes them (``Conversation``, ``ReasoningStep``...), whatever the
    case; any other label (an entity type) as its ``label_key``."""
    key = label_key(text)
    return SCHEMA_LABELS.get(key, key)


@dataclass(frozen=True)
class Statement:
    """A checked query ready for the engine."""

    #: The text the engine runs (labels spelled one way, escapes decoded).
    text: str
    #: The caller's text, for error messages (its ``/* */`` comments as spaces: kglite
    #: reads ``//`` comments only).
    original: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _Token:
    kind: str
    text: str
    start: int
    end: int


def _tokens(cypher: str) -> list[_Token]:
    found: list[_Token] = []
    for m in _TOKEN.finditer(cypher):
        kind = m.lastgroup or "punct"
        if kind == "comment" and m.group().startswith("/*"):
            found.append(_Token("block", m.group(), m.start(), m.end()))
            continue
        if kind in ("space", "comment"):
            continue
        if kind == "punct" and m.group() in "'\"`":
            raise InvalidInputError(f"unterminated {m.group()} quote in the Cypher query")
        found.append(_Token(kind, m.group(), m.start(), m.end()))
    return found


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


def _render_string(value: str) -> str:
    """A decoded string as a literal with only the two escapes every engine reads alike."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _valid_text(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"{what}: {_LONE_SURROGATE}") from exc


def _check_value(value: Any, name: str) -> None:
    """A parameter value must be JSON: what else could not be sent back as an answer."""
    stack = [value]
    while stack:
        item = stack.pop()
        if item is None or isinstance(item, bool):
            continue
        if isinstance(item, int):
            if not -_INT64 <= item < _INT64:
                raise InvalidInputError(f"parameter ${name}: integers must fit in 64 bits")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise InvalidInputError(f"parameter ${name} must be a finite number")
        elif isinstance(item, str):
            _valid_text(item, f"parameter ${name}")
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    raise InvalidInputError(f"parameter ${name}: map keys must be strings")
                _valid_text(key, f"parameter ${name}")
                stack.append(child)
        else:
            raise InvalidInputError(
                f"parameter ${name} must be a string, number, boolean, null, list or map"
            )


def _check_params(params: dict[str, Any]) -> None:
    check_json_depth(params, "params")
    for name, value in params.items():
        if not isinstance(name, str):
            raise InvalidInputError("parameter names must be strings")
        _check_value(value, name)
    if len(json.dumps(params)) > MAX_PARAMS_CHARS:
        raise InvalidInputError(f"the parameters are too long (at most {MAX_PARAMS_CHARS} chars)")


def _is_name(token: _Token | None, *words: str) -> bool:
    return token is not None and token.kind == "name" and token.text.upper() in words


def _unquote(token: _Token) -> str:
    return token.text[1:-1].replace("``", "`") if token.kind == "quoted" else token.text


def _blank(comment: str) -> str:
    """A block comment as spaces (line breaks kept, so positions stay the caller's)."""
    return "".join(c if c == "\n" else " " for c in comment)


def _rewrite(cypher: str, params: dict[str, Any]) -> str:
    """One pass over the tokens: the guard, the labels, the escapes, missing parameters."""
    tokens = _tokens(cypher)
    out = [t.text for t in tokens]
    brackets: list[str] = []
    in_label = False  # after ``:`` in a pattern or a label test, through ``|``/``&``/``!``
    for i, token in enumerate(tokens):
        prev = tokens[i - 1] if i else None
        after_dot = prev is not None and prev.text == "."
        if token.kind == "punct" and token.text in "([{":
            # ``-[`` opens a relationship pattern ("r"); any other ``[`` a list.
            relationship = token.text == "[" and prev is not None and prev.text == "-"
            brackets.append("r" if relationship else token.text)
        elif token.kind == "punct" and token.text in ")]}" and brackets:
            brackets.pop()  # unbalanced ones are the parser's to report, on the query itself
        top = brackets[-1] if brackets else ""
        starts_label = prev is not None and prev.text == ":" and top != "{"
        # ``:A|B`` in a pattern or a label test; in a list, ``|`` ends a comprehension's WHERE.
        continues_label = (
            in_label and prev is not None and prev.text in ("|", "&", "!") and top != "["
        )
        if token.kind in ("name", "quoted") and (starts_label or continues_label):
            in_label = True
            name = _unquote(token)
            relationship = top == "r"
            out[i] = label_key(name) if relationship else canonical_label(name)
            continue
        if not (token.kind == "punct" and token.text in "|&!:"):
            in_label = False
        if token.kind == "name" and token.text.upper() in WRITE_CLAUSES and not after_dot:
            raise InvalidInputError(
                f"{token.text.upper()} is not allowed: queries are read-only (no CREATE, "
                "MERGE, DELETE, DETACH, SET, REMOVE, DROP, INSERT, FOREACH, and no CALL of "
                "procedures or LOAD CSV)"
            )
        if token.kind == "block":
            out[i] = _blank(token.text)
        elif token.kind == "string" and "\\" in token.text:
            out[i] = _render_string(_decode_string(token.text))
        elif token.kind == "param" and token.text[1:] not in params:
            raise InvalidInputError(f"missing parameter {token.text}")
    if not any(_is_name(t, "RETURN") for t in tokens if t.kind != "block"):
        raise InvalidInputError("the query needs a RETURN clause (queries are reads)")
    pieces, end = [], 0
    for token, text in zip(tokens, out, strict=True):
        pieces += [cypher[end : token.start], text]
        end = token.end
    return "".join([*pieces, cypher[end:]])


def prepare(cypher: str, params: dict[str, Any] | None = None) -> Statement:
    """Check ``cypher`` is a read and spell its labels for the projection
    (``InvalidInputError`` when it writes, misses a parameter or has no RETURN)."""
    if params is not None and not isinstance(params, dict):
        raise InvalidInputError("params must be an object")
    check_json_depth(params, "params")
    if len(cypher) > MAX_QUERY_CHARS:
        raise InvalidInputError(f"the query is too long (at most {MAX_QUERY_CHARS} characters)")
    _valid_text(cypher, "the Cypher query")
    params = params or {}
    _check_params(params)
    quoted = _TOKEN.sub(
        lambda m: (
            _blank(m.group()) if m.lastgroup == "comment" and m.group()[:2] == "/*" else m.group()
        ),
        cypher,
    )
    return Statement(text=_rewrite(cypher, params), original=quoted, params=params)
