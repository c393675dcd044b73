"""Plans as JSON-ready data and back, generic over the fields of the plan's dataclasses.

``to_data`` turns a frozen dataclass into plain dicts, lists, numbers and strings, one key per
field; ``from_data`` rebuilds it from its type hints. A field added to a plan dataclass is
serialised with no change here, provided its type is built from int (never negative in a plan:
sizes, offsets, counts), float, str, bool, None, enums, tuples, dicts with string keys and
other such dataclasses. ``PLAN_SCHEMA`` is the
version of the JSON form; it changes when a field changes meaning or goes away.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from functools import cache
from typing import Any

from ..errors import PlanError, PlanFileError

PLAN_SCHEMA = 1


def parse_json(text: str, source: str = "plan") -> Any:
    """The data of a JSON document, or a PlanFileError naming ``source`` and the line.

    Refused besides malformed JSON: a key given twice in one object (which value would be
    meant?), numbers the json module cannot read (over 4300 digits), and nesting deeper than
    Python's recursion limit (the json module recurses once per level: 100,000 nested arrays
    raise RecursionError). A leading byte-order mark is skipped.
    """
    if not isinstance(text, str):
        raise PlanFileError(f"{source}: a JSON plan is text, got {type(text).__name__}")
    text = text.removeprefix("\ufeff")
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise PlanFileError(f"{source}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise PlanFileError(
            f"{source}: arrays or objects nested too deep to read; a plan nests 6 levels"
        ) from None
    except ValueError as exc:  # a key twice, an integer too long to read
        raise PlanFileError(f"{source}: not a JSON plan: {exc}") from None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} appears twice in one object")
        out[key] = value
    return out


def to_data(value: Any) -> Any:
    """Plain JSON-ready data for a dataclass, tuple, dict, enum or scalar (recursively)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_data(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return to_data(value.value)
    if isinstance(value, (tuple, list)):
        return [to_data(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_data(v) for k, v in value.items()}
    return value


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_data(cls: Any, data: Any, path: str = "plan", *, derived: frozenset[str] = frozenset()):
    """Rebuild a value of type ``cls`` from :func:`to_data`'s output.

    Keys named in ``derived`` (values computed from the fields, kept in the JSON for readers)
    are skipped; any other key that is not a field is an error, as is a value of the wrong
    type or a negative integer. Missing fields take their defaults.
    """
    return _build(cls, data, path, derived)


def _fail(path: str, expected: str, data: Any) -> PlanFileError:
    return PlanFileError(f"{path}: expected {expected}, got {data!r}")


def _build(cls: Any, data: Any, path: str, derived: frozenset[str]) -> Any:
    if cls is Any or (cls is str and type(data) is str):
        return data
    if cls is int and type(data) is int and data >= 0:  # the common leaves, without lookups
        return data
    kind = _kind(cls)
    if kind == "union":
        return _build_union(cls, data, path, derived)
    if kind == "dataclass":
        return _build_dataclass(cls, data, path, derived)
    if kind == "tuple":
        return _build_tuple(cls, data, path, derived)
    if kind == "dict":
        if not isinstance(data, dict):
            raise _fail(path, "an object", data)
        args = typing.get_args(cls)
        value_type = args[1] if args else Any
        return {k: _build(value_type, v, f"{path}.{k}", derived) for k, v in data.items()}
    if isinstance(cls, type) and issubclass(cls, enum.Enum):
        try:
            return cls(data)
        except ValueError:
            raise _fail(path, f"one of {[m.value for m in cls]}", data) from None
    return _build_scalar(cls, data, path)


@cache
def _kind(cls: Any) -> str:
    """How :func:`_build` rebuilds a value of type ``cls``."""
    origin = typing.get_origin(cls)
    if origin in (typing.Union, types.UnionType):
        return "union"
    if dataclasses.is_dataclass(cls):
        return "dataclass"
    if origin is tuple or cls is tuple:
        return "tuple"
    if origin is dict or cls is dict:
        return "dict"
    return "other"


def _build_union(cls: Any, data: Any, path: str, derived: frozenset[str]) -> Any:
    options = typing.get_args(cls)
    if data is None and type(None) in options:
        return None
    errors = []
    for option in options:
        if option is type(None):
            continue
        try:
            return _build(option, data, path, derived)
        except PlanFileError as exc:
            errors.append(str(exc))
    raise PlanFileError(errors[0] if len(errors) == 1 else f"{path}: no form fits {data!r}")


def _build_dataclass(cls: Any, data: Any, path: str, derived: frozenset[str]) -> Any:
    if not isinstance(data, dict):
        raise _fail(path, f"an object ({cls.__name__})", data)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields) - derived)
    if unknown:
        raise PlanFileError(
            f"{path}: unknown key(s) {', '.join(unknown)} for {cls.__name__}; "
            f"its fields are {', '.join(fields)}"
        )
    hints = _hints(cls)
    kwargs = {}
    for name, f in fields.items():
        if name in data:
            kwargs[name] = _build(hints[name], data[name], f"{path}.{name}", derived)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise PlanFileError(f"{path}: {cls.__name__} needs the key {name!r}")
    try:
        return cls(**kwargs)
    except PlanError as exc:  # a value the dataclass itself refuses
        raise PlanFileError(f"{path}: {exc}") from None


def _build_tuple(cls: Any, data: Any, path: str, derived: frozenset[str]) -> tuple:
    if not isinstance(data, (list, tuple)):
        raise _fail(path, "an array", data)
    args = typing.get_args(cls)
    if not args:
        return tuple(data)
    if len(args) == 2 and args[1] is Ellipsis:
        return tuple(_build(args[0], v, f"{path}[{i}]", derived) for i, v in enumerate(data))
    if len(data) != len(args):
        raise _fail(path, f"an array of {len(args)}", data)
    return tuple(_build(a, v, f"{path}[{i}]", derived) for i, (a, v) in enumerate(zip(args, data)))


def _build_scalar(cls: Any, data: Any, path: str) -> Any:
    if cls is int:
        ok = isinstance(data, int) and not isinstance(data, bool)
        if ok and data < 0:  # a plan's integers are offsets, sizes, counts and ids
            raise _fail(path, "int >= 0", data)
    elif cls is float:
        ok = isinstance(data, (int, float)) and not isinstance(data, bool)
        data = float(data) if ok else data
    elif cls in (str, bool) or cls is type(None):
        ok = isinstance(data, cls)
    else:
        raise TypeError(f"{path}: cannot rebuild a field of type {cls!r}")  # a model bug
    if not ok:
        raise _fail(path, getattr(cls, "__name__", str(cls)), data)
    return data
