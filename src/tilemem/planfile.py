"""Plan files: a memory plan written in TOML (or saved as JSON), read by one loader.

:func:`load_plan` reads either form and returns the :class:`~tilemem.plan.MemoryPlan`.

A TOML file lists the SMEM pool's operations in order (``alloc``, ``alloc_mma``,
``move_base_to``, where a TMEM pool's address slot goes), then each TMEM pool's (``alloc``,
``alloc_sf``, ``move_base_to``) and its stage views. Loading it replays those calls, so the
plan is the same object Python code would get, checked by the same rules. Keys are the Python
keyword arguments; a new keyword of a pool method is a new key with no change here. The
format is described in docs/PLAN_FORMAT.md.

Every error is a :class:`~tilemem.errors.TilememError` whose message starts with
``file:line:``, the line of the offending key where the key is known (else its table's
header); a pool's own error keeps its class. The file's shape is checked before any pool
call: tables where tables belong, strings and integers where the loader reads them, no
floats, inline tables or dates as call arguments (no pool keyword takes one), unknown keys
answered with the keys allowed and the closest one ("did you mean").
"""

from __future__ import annotations

import codecs
import datetime
import difflib
import inspect
import json
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from .errors import PlanFileError, TilememError
from .examples import Example
from .plan import MemoryPlan, get_target, plan_from_json_text
from .plan.check import MAX_TEXT
from .pool import Buffer, SMEMPool, TMEMPool, TMEMStages
from .validate import check_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PLAN_FILE_SCHEMA = 1

_TOP_KEYS = {"schema", "name", "summary", "target", "threads", "smem", "tmem"}
_TOP_TYPES: dict[str, type] = {
    "schema": int,
    "name": str,
    "summary": str,
    "target": str,
    "threads": int,
}
_FILE_KEYS = {"kind", "move_base_to", "slot_of"}  # item keys of the file, not of a pool call
_SMEM_KINDS: dict[str, Callable[..., Any]] = {"alloc": SMEMPool.alloc, "mma": SMEMPool.alloc_mma}
_TMEM_KINDS: dict[str, Callable[..., Any]] = {"alloc": TMEMPool.alloc, "sf": TMEMPool.alloc_sf}
_BUFFER_REFERENCES = {"alias_of", "tmem_addr"}  # keys whose string value names a buffer
_KEY_WORDS = {"datapath": ("data path",)}  # keys as error messages spell them
_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-]+)\s*\]\]?")
_BOMS = (  # UTF-32 first: its little-endian mark starts with UTF-16's
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


@dataclass(frozen=True)
class _Where:
    """Where an item of the file starts, for error messages."""

    source: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.what}"

    def at(self, line: int) -> _Where:
        return _Where(self.source, line, self.what)


def _did_you_mean(word: Any, choices: Any) -> str:
    """``; did you mean 'shape'?`` for a near miss among ``choices`` (difflib), else ''."""
    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, [c for c in choices if isinstance(c, str)], n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


class _Lines:
    """Line numbers of the file's table headers and keys (tomllib keeps none)."""

    def __init__(self, text: str, source: str):
        self.source = source
        self.lines = text.splitlines()
        self.headers = [
            (n, m.group(2), m.group(1) == "[[")
            for n, line in enumerate(self.lines, 1)
            if (m := _HEADER.match(line)) is not None
        ]

    def header(self, path: str) -> int | None:
        """Line of the first header naming ``path`` (``[path]`` or ``[[path]]``)."""
        return next((n for n, header, _ in self.headers if header == path), None)

    def item(self, path: str, index: int, parent: tuple[str, int] | None = None) -> int:
        """Line of the ``index``-th ``[[path]]`` (inside the ``parent``-th ``[[parent]]``)."""
        seen_parent, seen = -1, 0
        fallback = 1
        for line, header, array in self.headers:
            if parent is not None and header == parent[0] and array:
                seen_parent += 1
                if seen_parent == parent[1]:
                    fallback = line
            in_parent = parent is None or seen_parent == parent[1]
            if header == path and array and in_parent:
                if seen == index:
                    return line
                seen += 1
            elif parent is None and header == path.rsplit(".", 1)[0]:
                fallback = line
        return fallback

    def key(self, start: int, key: str) -> int:
        """Line of ``key = ...`` in the table whose header is line ``start`` (else ``start``);
        ``start`` 1 without a header there means the top-level keys."""
        pattern = re.compile(
            rf"""^\s*(?:{re.escape(key)}|"{re.escape(key)}"|'{re.escape(key)}')\s*="""
        )
        first = start if _HEADER.match(self.lines[start - 1] if self.lines else "") else start - 1
        for n in range(max(first, 0), len(self.lines)):
            if n > start - 1 and _HEADER.match(self.lines[n]):
                break
            if pattern.match(self.lines[n]):
                return n + 1
        return start

    def smem_threads_line(self) -> int:
        """Line of ``[smem]``'s threads written without a ``[smem]`` header: a top-level
        ``smem.threads = ...`` or the ``smem = { ... }`` inline table holding it (else 1)."""
        dotted = self.key(1, "smem.threads")
        return dotted if dotted != 1 or not self.lines else self.key(1, "smem")

    def mentioned(self, start: int, keys: Mapping[str, Any], message: str) -> int:
        """Line of the key of a table that an error message names first, as written or in
        words (``swizzle mode``, ``data path``); else ``start``."""
        found = []
        for key in keys:
            if not isinstance(key, str):
                continue
            for spelling in (key, key.replace("_", " "), *_KEY_WORDS.get(key, ())):
                if m := re.search(rf"\b{re.escape(spelling)}\b", message):
                    found.append((m.start(), key))
        if not found:  # no key named: the key whose value the message refuses ("got x", 'x');
            for key, value in keys.items():  # names aside, quoted to say which buffer or pool
                if key == "name" or not isinstance(value, str):
                    continue
                for quoted in (f"got {value}", repr(value)):
                    if quoted in message:
                        found.append((message.index(quoted), key))
        return self.key(start, min(found)[1]) if found else start


def _parse(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"line (\d+)", str(exc))
        line = match.group(1) if match else str(max(1, len(text.splitlines())))  # end of file
        raise PlanFileError(f"{source}:{line}: not valid TOML: {exc}") from None
    except RecursionError:
        raise PlanFileError(
            f"{source}:1: not valid TOML here: arrays or tables nested too deep to read"
        ) from None


def _type_name(value: Any) -> str:
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, (datetime.date, datetime.time)):
        return "a date or time"
    return type(value).__name__


def _check_keys(table: Mapping[str, Any], allowed: set[str], where: _Where, lines: _Lines):
    for key in table:
        if key not in allowed:
            line = lines.key(where.line, key)
            raise PlanFileError(
                f"{where.source}:{line}: {where.what}: unknown key {key!r}"
                f"{_did_you_mean(key, allowed)}; the keys here are {', '.join(sorted(allowed))}"
            )


@cache
def _parameters(method: Any) -> Mapping[str, inspect.Parameter]:
    return inspect.signature(method).parameters


def _check_required(method: Any, given: Any, where: _Where, skip: tuple[str, ...]) -> None:
    """A keyword the pool method cannot do without, missing from the table."""
    for name, p in _parameters(method).items():
        if name in skip or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.default is p.empty and name not in given:
            owner = getattr(method, "__qualname__", "the call").replace(".__init__", "")
            raise PlanFileError(f"{where}: needs the key {name!r} (the {name} of {owner})")


def _keywords(method: Any, skip: tuple[str, ...] = ("self",)) -> set[str]:
    return {p for p in _parameters(method) if p not in skip}


def _live_fix(value: dict[str, Any]) -> str:
    """For ``live = {mainloop = false, epilogue = true}``: the array that means it."""
    if all(isinstance(v, bool) for v in value.values()):
        phases = ", ".join(json.dumps(k) for k, v in value.items() if v)
        return f"; write the phases it is live in as an array: [{phases}]"
    return ""


def _integer_fix(value: float) -> str:
    if value == value and value not in (float("inf"), float("-inf")) and value == int(value):
        return f"; write {int(value)}"
    return ": it must be an integer"


class _Builder:
    """Replays a parsed plan file on fresh pools."""

    def __init__(self, data: dict[str, Any], lines: _Lines, threads: int | None):
        self.data = data
        self.lines = lines
        self.threads = threads
        self.buffers: dict[str, Buffer] = {}
        self.tmem: dict[int, TMEMPool] = {}

    def where(self, line: int, what: str) -> _Where:
        return _Where(self.lines.source, line, what)

    def fail(self, where: _Where, key: str, message: str) -> PlanFileError:
        """An error about ``key`` of the table at ``where``, at the key's line."""
        return PlanFileError(f"{where.at(self.lines.key(where.line, key))}: {message}")

    def call(self, where: _Where, table: Mapping[str, Any], function: Callable, *args, **kwargs):
        """Run one pool call; a tilemem error keeps its class and gains the file and the line
        of the key it names (else the table's header)."""
        try:
            return function(*args, **kwargs)
        except PlanFileError:
            raise
        except TilememError as exc:
            line = self.lines.mentioned(where.line, table, str(exc))
            raise type(exc)(f"{where.at(line)}: {exc}") from exc

    def tables(self, where: _Where, key: str, value: Any, path: str) -> list[dict[str, Any]]:
        """``value`` as the array of tables ``[[path]]`` it must be."""
        if isinstance(value, dict):
            line = self.lines.header(path) or self.lines.key(where.line, key)
            raise PlanFileError(
                f"{self.lines.source}:{line}: [{path}] is one table; write [[{path}]] (double "
                f"brackets), one table per item"
            )
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            bad = (
                value
                if not isinstance(value, list)
                else next(v for v in value if not isinstance(v, dict))
            )
            raise self.fail(
                where,
                key,
                f"{key} must be [[{path}]] tables (an array of tables), got {_type_name(bad)} "
                f"{bad!r}",
            )
        return value

    def string(self, where: _Where, key: str, value: Any) -> str:
        if not isinstance(value, str):
            raise self.fail(
                where, key, f"{key} must be a string, got {_type_name(value)} {value!r}"
            )
        return value

    def value(self, where: _Where, key: str, value: Any, inside: bool = False) -> Any:
        """A call argument: TOML arrays become tuples (shapes, strides, live sets); floats,
        inline tables and dates are refused (no pool keyword takes one)."""
        if isinstance(value, list):
            return tuple(self.value(where, key, v, True) for v in value)
        if isinstance(value, float):
            said = f"{key} holds {value!r}, a float" if inside else f"{key} = {value!r} is a float"
            raise self.fail(where, key, f"{said}{_integer_fix(value)}")
        if isinstance(value, dict):
            hint = _live_fix(value) if key == "live" else ""
            raise self.fail(where, key, f"{key} = {value!r} is a table; {key} takes no table{hint}")
        if isinstance(value, (datetime.date, datetime.time)):
            raise self.fail(where, key, f"{key} = {value} is a date or time, not a plan value")
        return value

    def buffer_named(self, key: str, name: Any, where: _Where) -> Buffer:
        if name not in self.buffers:
            raise self.fail(
                where,
                key,
                f"{key} = {name!r} names no buffer defined above"
                f"{_did_you_mean(name, self.buffers)}; defined: "
                f"{', '.join(self.buffers) or 'none'}",
            )
        return self.buffers[name]

    def resolve(self, args: Mapping[str, Any], where: _Where) -> dict[str, Any]:
        out = {key: self.value(where, key, v) for key, v in args.items()}
        for key in _BUFFER_REFERENCES & out.keys():
            if isinstance(out[key], str):
                out[key] = self.buffer_named(key, out[key], where)
        return out

    def build(self) -> SMEMPool:
        smem_table = dict(self.data.get("smem", {}))
        where = self.where(self.lines.header("smem") or 1, "[smem]")
        allowed = _keywords(SMEMPool.__init__, ("self", "ptr", "target")) | {"buffers", "commit"}
        _check_keys(smem_table, allowed, where, self.lines)
        ops = self.tables(where, "buffers", smem_table.pop("buffers", []), "smem.buffers")
        commit_size = self.value(where, "commit", smem_table.pop("commit", None))
        options = self.resolve(smem_table, where)
        if self.threads is not None:  # the top-level threads reach the TMEM residency check
            options.setdefault("threads", self.threads)
        smem = self.call(where, smem_table, SMEMPool, target=self.data.get("target"), **options)
        tmem_tables = self.tmem_tables()
        for index, op in enumerate(ops):
            self.smem_op(smem, op, index)
        for index in range(len(tmem_tables)):
            if index not in self.tmem:
                self.open_tmem(smem, index)
        for index, pool in self.tmem.items():
            self.fill_tmem(pool, index)
        self.call(where.at(self.lines.key(where.line, "commit")), {}, smem.commit, commit_size)
        for index, pool in self.tmem.items():
            where = self.where(self.lines.item("tmem", index), f"[[tmem]] {pool.name!r}")
            self.call(where, self.tmem_tables()[index], pool.commit)  # e.g. total_cols too few
        return smem

    def tmem_tables(self) -> list[dict[str, Any]]:
        return self.tables(self.where(1, "top level"), "tmem", self.data.get("tmem", []), "tmem")

    def smem_op(self, smem: SMEMPool, op: dict[str, Any], index: int) -> None:
        line = self.lines.item("smem.buffers", index)
        where = self.where(line, f"[[smem.buffers]] #{index + 1}")
        if "move_base_to" in op:
            _check_keys(op, {"move_base_to"}, where, self.lines)
            offset = self.value(where, "move_base_to", op["move_base_to"])
            self.call(where, op, smem.move_base_to, offset)
        elif "slot_of" in op:
            _check_keys(op, {"slot_of"}, where, self.lines)
            self.open_tmem(smem, self.tmem_index(op["slot_of"], where))
        else:
            self.alloc_kind(smem, _SMEM_KINDS, "SMEM", op, where)

    def alloc_kind(
        self,
        pool: Any,
        kinds: Mapping[str, Callable],
        scope: str,
        op: dict[str, Any],
        where: _Where,
    ) -> None:
        """A buffer made by the pool method that ``kind`` names (default ``alloc``)."""
        kind = op.get("kind", "alloc")
        if not isinstance(kind, str) or kind not in kinds:
            raise self.fail(
                where,
                "kind",
                f"kind = {kind!r}; {scope} buffers are kind {' or '.join(map(repr, kinds))}"
                f"{_did_you_mean(kind, kinds)}",
            )
        method = kinds[kind]
        _check_keys(op, _keywords(method) | {"kind"}, where, self.lines)
        if "name" in op:
            where = _Where(where.source, where.line, f"{where.what} {op['name']!r}")
        _check_required(method, op, where, ("self",))
        args = self.resolve({k: v for k, v in op.items() if k not in _FILE_KEYS}, where)
        buf = self.call(where, op, method.__get__(pool), **args)
        self.buffers[buf.name] = buf

    def tmem_index(self, name: Any, where: _Where) -> int:
        name = self.string(where, "slot_of", name)
        names = [t.get("name") for t in self.tmem_tables()]
        if name not in names:
            raise self.fail(
                where,
                "slot_of",
                f"slot_of = {name!r} names no [[tmem]] pool{_did_you_mean(name, names)}; "
                f"pools: {names}",
            )
        index = names.index(name)
        if index in self.tmem:
            raise self.fail(where, "slot_of", f"the slot of TMEM pool {name!r} is placed twice")
        return index

    def open_tmem(self, smem: SMEMPool, index: int) -> None:
        table = self.tmem_tables()[index]
        line = self.lines.item("tmem", index)
        where = self.where(line, f"[[tmem]] #{index + 1}")
        options = {k: v for k, v in table.items() if k not in ("buffers", "stages")}
        _check_keys(options, _keywords(TMEMPool.__init__, ("self", "pool")), where, self.lines)
        self.tmem[index] = self.call(where, options, TMEMPool, smem, **self.resolve(options, where))

    def fill_tmem(self, pool: TMEMPool, index: int) -> None:
        table = self.tmem_tables()[index]
        where = self.where(self.lines.item("tmem", index), f"[[tmem]] {pool.name!r}")
        ops = self.tables(where, "buffers", table.get("buffers", []), "tmem.buffers")
        views = self.tables(where, "stages", table.get("stages", []), "tmem.stages")
        for n, op in enumerate(ops):
            line = self.lines.item("tmem.buffers", n, parent=("tmem", index))
            where = self.where(line, f"[[tmem.buffers]] #{n + 1} of {pool.name!r}")
            if "move_base_to" in op:
                _check_keys(op, {"move_base_to"}, where, self.lines)
                col = self.value(where, "move_base_to", op["move_base_to"])
                self.call(where, op, pool.move_base_to, col)
                continue
            self.alloc_kind(pool, _TMEM_KINDS, "TMEM", op, where)
        for n, view in enumerate(views):
            line = self.lines.item("tmem.stages", n, parent=("tmem", index))
            what = f"[[tmem.stages]] #{n + 1} of {pool.name!r}"
            self.stage_view(pool, view, self.where(line, what))

    def stage_view(self, pool: TMEMPool, view: dict[str, Any], where: _Where) -> None:
        allowed = _keywords(TMEMStages.__init__, ("self", "buf")) | {"buffer"}
        _check_keys(view, allowed, where, self.lines)
        if "buffer" not in view:
            raise PlanFileError(f"{where}: needs buffer = the name of the TMEM buffer it views")
        name = self.string(where, "buffer", view["buffer"])
        buf = self.buffer_named("buffer", name, where)
        if buf.pool is not pool:
            owner = (
                f"TMEM pool {buf.pool.name!r}: list its views under that [[tmem]]"
                if isinstance(buf.pool, TMEMPool)
                else "the SMEM pool: stage views split the columns of a TMEM buffer"
            )
            raise self.fail(where, "buffer", f"buffer = {name!r} is a buffer of {owner}")
        args = {k: v for k, v in view.items() if k != "buffer"}
        _check_required(TMEMPool.stages, args, where, ("self", "buf"))
        self.call(where, view, pool.stages, buf, **self.resolve(args, where))


def header_namespace(name: str) -> str:
    """The C++ header namespace of a plan named ``name`` (``-`` read as ``_``)."""
    return name.replace("-", "_")


def _stem(source: str) -> str:
    """A plan's default name: its file's stem where that can name the header's namespace."""
    stem = Path(source).stem
    try:
        check_name(header_namespace(stem), error=PlanFileError)
    except PlanFileError:
        return "plan"
    return stem


def _default_summary(source: str) -> str:
    said = f"plan file {source}"
    return said if said.isprintable() and len(said) <= MAX_TEXT else "plan file"


def _check_top(data: dict[str, Any], lines: _Lines, source: str) -> None:
    """The top-level keys: known, of their types, ``smem`` a table, ``tmem`` [[tmem]] tables."""
    top = _Where(source, 1, "top level")
    _check_keys(data, _TOP_KEYS, top, lines)
    for key, kind in _TOP_TYPES.items():
        value = data.get(key)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            raise PlanFileError(
                f"{source}:{lines.key(1, key)}: {key} must be "
                f"{'an integer' if kind is int else 'a string'}, got {_type_name(value)} {value!r}"
            )
    summary = data.get("summary")  # the report's and the picture's title: one line
    if summary is not None and (
        not summary or len(summary) > MAX_TEXT or not summary.isprintable()
    ):
        raise PlanFileError(
            f"{source}:{lines.key(1, 'summary')}: summary must be one line of 1 to {MAX_TEXT} "
            f"printable characters, got {summary[:80]!r}"
        )
    if "name" in data:  # the C++ header's namespace: refused now, not when the header is written
        what = f"{source}:{lines.key(1, 'name')}: name"
        check_name(header_namespace(data["name"]), what, error=PlanFileError)
    schema = data.get("schema", PLAN_FILE_SCHEMA)
    if schema != PLAN_FILE_SCHEMA:
        raise PlanFileError(
            f"{source}:{lines.key(1, 'schema')}: schema = {schema!r}; this tilemem reads "
            f"schema {PLAN_FILE_SCHEMA}"
        )
    if "smem" in data and not isinstance(data["smem"], dict):
        raise PlanFileError(
            f"{source}:{lines.key(1, 'smem')}: smem must be the table [smem], got "
            f"{_type_name(data['smem'])}"
        )


def _threads(data: dict[str, Any], lines: _Lines, source: str) -> int | None:
    """Threads per CTA: the top-level ``threads`` (checked against the target's limit), else
    ``[smem] threads``; both given must agree."""
    target = data.get("target")
    try:
        limit = get_target(target).max_threads_per_block if target is not None else 1024
    except TilememError as exc:
        raise type(exc)(f"{source}:{lines.key(1, 'target')}: {exc}") from exc
    top = data.get("threads")
    smem = data.get("smem", {}).get("threads")
    if top is None:
        return smem if isinstance(smem, int) and not isinstance(smem, bool) else None
    where = f"{source}:{lines.key(1, 'threads')}"
    if not 1 <= top <= limit:
        raise PlanFileError(
            f"{where}: threads = {top}: threads per CTA must be in [1, {limit}]"
            + (f" on {target}" if target else "")
        )
    if smem is not None and smem != top:
        header = lines.header("smem")  # else inline (smem = {...}) or dotted (smem.threads)
        line = lines.key(header, "threads") if header else lines.smem_threads_line()
        raise PlanFileError(
            f"{where}: threads = {top} disagrees with [smem] threads = {smem!r} (line {line}); "
            "give it once"
        )
    return top


def _replay(text: str, source: str) -> tuple[Example, SMEMPool]:
    """The file's Example and the pool its first replay built (every error shows here)."""
    data = _parse(text, source)
    lines = _Lines(text, source)
    _check_top(data, lines, source)
    threads = _threads(data, lines, source)
    smem = _Builder(data, lines, threads).build()
    example = Example(
        name=data.get("name", _stem(source)),
        target=data.get("target") or "",
        threads=threads or 0,
        summary=data.get("summary", _default_summary(source)),
        build=lambda: _Builder(data, lines, threads).build(),
    )
    return example, smem


def parse_plan_file(text: str, source: str = "<plan>") -> Example:
    """A plan file's text as an :class:`~tilemem.examples.Example` whose ``build()`` replays
    it (a fresh SMEMPool each call, committed, holding the TMEM pools). Every error shows
    here, with its line, not at first use."""
    return _replay(text, source)[0]


def _decode(raw: bytes, source: str) -> str:
    """UTF-8 text (a UTF-8 byte-order mark dropped); anything else is refused with its line."""
    for bom, encoding in _BOMS:
        if raw.startswith(bom):
            raise PlanFileError(
                f"{source}:1: the file is {encoding} text; plan files are UTF-8: save it as UTF-8"
            )
    raw = raw.removeprefix(codecs.BOM_UTF8)
    if b"\0" in raw:  # before decoding: UTF-16 without a mark is mostly ASCII and NULs
        line = raw.count(b"\n", 0, raw.index(b"\0")) + 1
        raise PlanFileError(
            f"{source}:{line}: a NUL byte: a binary (or UTF-16) file, not a plan file in UTF-8"
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise PlanFileError(
            f"{source}:{line}: byte 0x{raw[exc.start]:02x} is not UTF-8; plan files are UTF-8 text"
        ) from None


def _read(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise PlanFileError(f"cannot read plan file {path}: {exc.strerror or exc}") from None
    return _decode(raw, str(path))


def _json_plan(text: str, source: str) -> MemoryPlan:
    try:
        plan = plan_from_json_text(text, source)
    except TilememError as exc:  # every message names the file, the class kept
        if str(exc).startswith(source):
            raise
        raise type(exc)(f"{source}: {exc}") from None
    return plan if plan.name is not None else replace(plan, name=_stem(source))


def _toml_plan(text: str, source: str) -> MemoryPlan:
    example, smem = _replay(text, source)
    plan = replace(smem.plan().with_advice(), name=example.name, summary=example.summary)
    return plan.with_threads(example.threads) if example.threads else plan


def load_plan(path: str | Path) -> MemoryPlan:
    """The :class:`~tilemem.plan.MemoryPlan` of a plan file, TOML or JSON alike.

    A TOML plan file (docs/PLAN_FORMAT.md) is replayed on fresh pools, which are committed;
    a JSON plan (``plan.to_dict()``, ``tilemem plan --json``; recognised by its ``.json``
    name or its leading ``{``) is rebuilt by :meth:`MemoryPlan.from_dict`, which refuses a
    plan tilemem could not have made. Either way the plan keeps its name (a TOML file's
    ``name``, else the file's stem), its summary, its threads per CTA (so the report shows
    occupancy) and its padding advice: the TOML and the JSON of one plan give equal plans,
    and the same report, picture and header.

    Errors are :class:`~tilemem.errors.TilememError` naming the file and the line (TOML; the
    line of the offending key) or the file and the path of the bad value (JSON,
    ``plan.pools[0].entries[2].offset: ...``).
    """
    text = _read(Path(path))
    source = str(path)
    if source.endswith(".json") or text.lstrip().startswith("{"):  # TOML never starts so
        return _json_plan(text, source)
    return _toml_plan(text, source)
