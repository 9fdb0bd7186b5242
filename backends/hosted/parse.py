"""Lenient parsing of server answers into the typed models.

The hosted spec marks no response field as required, documents several shapes only as
"free-form object", and the TypeScript SDK meets both camelCase and snake_case keys. So the
client never lets a surprising answer crash a caller: ``lenient`` reads each model field
under its snake_case name, its camelCase alias or a listed synonym, ignores ``null``,
recurses into nested models, and when a value still does not fit it drops the value (the
field's default applies) or, for a required field, puts in the empty value of its type.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from enum import Enum
from typing import Any, TypeVar

from pydantic import AliasChoices, BaseModel, ValidationError
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo

from nams_local.errors import BackendUnavailableError

__all__ = ["envelope", "first", "lenient", "lenient_list"]

M = TypeVar("M", bound=BaseModel)
#: Extra keys a field may arrive under, by field name.
Synonyms = Mapping[str, Sequence[str]]

_ENVELOPE_FALLBACKS = ("items", "data", "results")
_MAX_REPAIRS = 4


def first(source: object, *keys: str, default: Any = None) -> Any:
    """The first non-null value under any of ``keys`` (each also tried in camelCase)."""
    if not isinstance(source, Mapping):
        return default
    for key in keys:
        for candidate in (key, to_camel(key)):
            value = source.get(candidate)
            if value is not None:
                return value
    return default


def envelope(body: object, *keys: str) -> list[Mapping[str, Any]]:
    """The object list inside ``{"<key>": [...]}`` (or a bare list); non-objects skipped."""
    found: object = body
    if isinstance(body, Mapping):
        found = first(body, *keys, *_ENVELOPE_FALLBACKS, default=[])
    if not isinstance(found, list):
        return []
    return [item for item in found if isinstance(item, Mapping)]


def lenient_list(
    cls: type[M], items: Iterable[object], synonyms: Synonyms | None = None
) -> list[M]:
    return [lenient(cls, item, synonyms) for item in items if isinstance(item, Mapping)]


def lenient(
    cls: type[M],
    raw: object,
    synonyms: Synonyms | None = None,
    **fallback: Any,
) -> M:
    """``cls`` built from ``raw`` as far as it fits; ``fallback`` fills fields ``raw`` lacks."""
    source: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    values: dict[str, Any] = {}
    for name, field in cls.model_fields.items():
        keys = _keys(name, field, (synonyms or {}).get(name, ()))
        value = next((source[k] for k in keys if source.get(k) is not None), None)
        if value is None:
            value = fallback.get(name)
        if value is not None:
            values[name] = _nested(field.annotation, value)
    for _ in range(_MAX_REPAIRS):
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            if not _repair(cls, values, exc):
                break
    raise BackendUnavailableError(f"the server's answer does not fit {cls.__name__}: {raw!r}")


def _keys(name: str, field: FieldInfo, extra: Sequence[str]) -> list[str]:
    keys = [name, to_camel(name)]
    if field.alias:
        keys.append(field.alias)
    if isinstance(field.validation_alias, AliasChoices):
        keys.extend(c for c in field.validation_alias.choices if isinstance(c, str))
    elif isinstance(field.validation_alias, str):
        keys.append(field.validation_alias)
    keys.extend(extra)
    return list(dict.fromkeys(keys))


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        for arg in typing.get_args(annotation):
            found = _model_in(arg)
            if found is not None:
                return found
    return None


def _nested(annotation: Any, value: Any) -> Any:
    """Recurse into nested models and lists of models, so one bad item spoils nothing."""
    if typing.get_origin(annotation) is list:
        (item_type,) = typing.get_args(annotation) or (Any,)
        model = _model_in(item_type)
        if model is not None:
            return lenient_list(model, value) if isinstance(value, list) else []
        return value
    model = _model_in(annotation)
    if model is not None and isinstance(value, Mapping):
        return lenient(model, value)
    if _is_text(annotation) and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)  # e.g. a numeric Neo4j id where the model holds text
    return value


def _is_text(annotation: Any) -> bool:
    if annotation is str:
        return True
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return str in typing.get_args(annotation)
    return False


def _repair(cls: type[BaseModel], values: dict[str, Any], exc: ValidationError) -> bool:
    changed = False
    by_alias = {field.alias: name for name, field in cls.model_fields.items() if field.alias}
    for error in exc.errors():
        loc = error.get("loc") or ()
        key = loc[0] if loc else None
        name = by_alias.get(key, key) if isinstance(key, str) else None
        if name is None or name not in cls.model_fields:
            continue
        field = cls.model_fields[name]
        if not field.is_required():
            changed = values.pop(name, _MISSING) is not _MISSING or changed
            continue
        empty = _empty(field.annotation)
        if empty is not _MISSING and values.get(name, _MISSING) != empty:
            values[name] = empty
            changed = True
    return changed


_MISSING: Any = object()


def _empty(annotation: Any) -> Any:
    """The empty value of a required field's type ("" for text, 0 for numbers ...)."""
    origin = typing.get_origin(annotation) or annotation
    if isinstance(annotation, types.UnionType) or origin is typing.Union:
        for arg in typing.get_args(annotation):
            if arg is not type(None):
                return _empty(arg)
        return _MISSING
    if origin is typing.Literal:
        return typing.get_args(annotation)[0]
    if isinstance(origin, type) and issubclass(origin, Enum):
        return next(iter(origin)).value
    simple: dict[Any, Any] = {str: "", int: 0, float: 0.0, bool: False, list: [], dict: {}}
    return simple.get(origin, _MISSING)
