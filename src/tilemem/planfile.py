"""Plan files: a memory plan written in TOML, built by the same pools as the Python calls.

A file lists the SMEM pool's operations in order (``alloc``, ``alloc_mma``, ``move_base_to``,
where a TMEM pool's address slot goes), then each TMEM pool's (``alloc``, ``alloc_sf``,
``move_base_to``) and its stage views. Loading it replays those calls, so the plan is the
same object Python code would get, checked by the same rules. Keys are the Python keyword
arguments; a new keyword of a pool method is a new key with no change here. The format is
described in docs/PLAN_FORMAT.md. Errors carry the file name and line.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import PlanFileError, TilememError
from .examples import Example
from .plan import MemoryPlan
from .pool import SMEMPool, TMEMPool, TMEMStages

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PLAN_FILE_SCHEMA = 1

_TOP_KEYS = {"schema", "name", "summary", "target", "threads", "smem", "tmem"}
_FILE_KEYS = {"kind", "move_base_to", "slot_of"}  # item keys of the file, not of a pool call
_SMEM_KINDS: dict[str, Callable[..., Any]] = {"alloc": SMEMPool.alloc, "mma": SMEMPool.alloc_mma}
_TMEM_KINDS: dict[str, Callable[..., Any]] = {"alloc": TMEMPool.alloc, "sf": TMEMPool.alloc_sf}
_BUFFER_REFERENCES = {"alias_of", "tmem_addr"}  # keys whose string value names a buffer
_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-]+)\s*\]\]?")


@dataclass(frozen=True)
class _Where:
    """Where an item of the file starts, for error messages."""

    source: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.what}"


class _Lines:
    """Line numbers of the file's table headers (tomllib keeps none)."""

    def __init__(self, text: str, source: str):
        self.source = source
        self.lines = text.splitlines()
        self.headers = [
            (n, m.group(2))
            for n, line in enumerate(self.lines, 1)
            if (m := _HEADER.match(line)) is not None
        ]

    def item(self, path: str, index: int, parent: tuple[str, int] | None = None) -> int:
        """Line of the ``index``-th ``[[path]]`` (inside the ``parent``-th ``[[parent]]``)."""
        seen_parent, seen = -1, 0
        fallback = 1
        for line, header in self.headers:
            if parent is not None and header == parent[0]:
                seen_parent += 1
                if seen_parent == parent[1]:
                    fallback = line
            in_parent = parent is None or seen_parent == parent[1]
            if header == path and in_parent:
                if seen == index:
                    return line
                seen += 1
            elif parent is None and header == path.rsplit(".", 1)[0]:
                fallback = line
        return fallback

    def key(self, start: int, key: str) -> int:
        """Line of ``key = ...`` in the table whose header is line ``start`` (else ``start``);
        ``start`` 1 without a header there means the top-level keys."""
        pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
        first = start if _HEADER.match(self.lines[start - 1] if self.lines else "") else start - 1
        for n in range(first, len(self.lines)):
            if n > start - 1 and _HEADER.match(self.lines[n]):
                break
            if pattern.match(self.lines[n]):
                return n + 1
        return start


def _parse(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"line (\d+)", str(exc))
        line = match.group(1) if match else str(max(1, len(text.splitlines())))  # end of file
        raise PlanFileError(f"{source}:{line}: not valid TOML: {exc}") from None


def _check_keys(table: Mapping[str, Any], allowed: set[str], where: _Where, lines: _Lines):
    for key in table:
        if key not in allowed:
            line = lines.key(where.line, key)
            raise PlanFileError(
                f"{where.source}:{line}: {where.what}: unknown key {key!r}; "
                f"the keys here are {', '.join(sorted(allowed))}"
            )


def _keywords(method: Any, skip: tuple[str, ...] = ("self",)) -> set[str]:
    return {p for p in inspect.signature(method).parameters if p not in skip}


def _value(value: Any) -> Any:
    """TOML arrays become tuples (shapes, strides, live sets), recursively."""
    if isinstance(value, list):
        return tuple(_value(v) for v in value)
    return value


def _call(where: _Where, function: Callable, *args, **kwargs):
    """Run one pool call; a tilemem error keeps its class and gains the file and line."""
    try:
        return function(*args, **kwargs)
    except PlanFileError:
        raise
    except TilememError as exc:
        raise type(exc)(f"{where}: {exc}") from exc


class _Builder:
    """Replays a parsed plan file on fresh pools."""

    def __init__(self, data: dict[str, Any], lines: _Lines):
        self.data = data
        self.lines = lines
        self.buffers: dict[str, Any] = {}
        self.tmem: dict[int, TMEMPool] = {}

    def where(self, line: int, what: str) -> _Where:
        return _Where(self.lines.source, line, what)

    def buffer_named(self, key: str, name: Any, where: _Where) -> Any:
        if name not in self.buffers:
            raise PlanFileError(
                f"{where}: {key} = {name!r} names no buffer defined above; "
                f"defined: {', '.join(self.buffers) or 'none'}"
            )
        return self.buffers[name]

    def resolve(self, args: dict[str, Any], where: _Where) -> dict[str, Any]:
        out = {key: _value(v) for key, v in args.items()}
        for key in _BUFFER_REFERENCES & out.keys():
            if isinstance(out[key], str):
                out[key] = self.buffer_named(key, out[key], where)
        return out

    def build(self) -> SMEMPool:
        smem_table = dict(self.data.get("smem", {}))
        where = self.where(self.lines.item("smem", 0), "[smem]")
        allowed = _keywords(SMEMPool.__init__, ("self", "ptr", "target")) | {"buffers", "commit"}
        _check_keys(smem_table, allowed, where, self.lines)
        ops = smem_table.pop("buffers", [])
        commit_size = smem_table.pop("commit", None)
        options = self.resolve(smem_table, where)
        smem = _call(where, SMEMPool, target=self.data.get("target"), **options)
        for index, op in enumerate(ops):
            self.smem_op(smem, op, index)
        for index in range(len(self.data.get("tmem", []))):
            if index not in self.tmem:
                self.open_tmem(smem, index)
        for index, pool in self.tmem.items():
            self.fill_tmem(pool, index)
        _call(where, smem.commit, commit_size)
        for index, pool in self.tmem.items():
            where = self.where(self.lines.item("tmem", index), f"[[tmem]] {pool.name!r}")
            _call(where, pool.commit)
        return smem

    def smem_op(self, smem: SMEMPool, op: dict[str, Any], index: int) -> None:
        line = self.lines.item("smem.buffers", index)
        where = self.where(line, f"[[smem.buffers]] #{index + 1}")
        if "move_base_to" in op:
            _check_keys(op, {"move_base_to"}, where, self.lines)
            _call(where, smem.move_base_to, op["move_base_to"])
        elif "slot_of" in op:
            _check_keys(op, {"slot_of"}, where, self.lines)
            self.open_tmem(smem, self.tmem_index(op["slot_of"], where))
        else:
            self.alloc_kind(smem, _SMEM_KINDS, "SMEM", op, line, where)

    def alloc_kind(
        self,
        pool,
        kinds: Mapping[str, Callable],
        scope: str,
        op: dict[str, Any],
        line,
        where: _Where,
    ) -> None:
        """A buffer made by the pool method that ``kind`` names (default ``alloc``)."""
        kind = op.get("kind", "alloc")
        if kind not in kinds:
            raise PlanFileError(
                f"{self.lines.source}:{self.lines.key(line, 'kind')}: {where.what}: "
                f"kind = {kind!r}; {scope} buffers are kind {' or '.join(map(repr, kinds))}"
            )
        method = kinds[kind]
        _check_keys(op, _keywords(method) | {"kind"}, where, self.lines)
        self.alloc(method.__get__(pool), op, where)

    def alloc(self, method: Callable, op: dict[str, Any], where: _Where) -> None:
        if "name" in op:
            where = _Where(where.source, where.line, f"{where.what} {op['name']!r}")
        args = self.resolve({k: v for k, v in op.items() if k not in _FILE_KEYS}, where)
        buf = _call(where, method, **args)
        self.buffers[buf.name] = buf

    def tmem_index(self, name: Any, where: _Where) -> int:
        names = [t.get("name") for t in self.data.get("tmem", [])]
        if name not in names:
            raise PlanFileError(
                f"{where}: slot_of = {name!r} names no [[tmem]] pool; pools: {names}"
            )
        index = names.index(name)
        if index in self.tmem:
            raise PlanFileError(f"{where}: the slot of TMEM pool {name!r} is placed twice")
        return index

    def open_tmem(self, smem: SMEMPool, index: int) -> None:
        table = self.data["tmem"][index]
        line = self.lines.item("tmem", index)
        where = self.where(line, f"[[tmem]] #{index + 1}")
        options = {k: v for k, v in table.items() if k not in ("buffers", "stages")}
        _check_keys(options, _keywords(TMEMPool.__init__, ("self", "pool")), where, self.lines)
        self.tmem[index] = _call(where, TMEMPool, smem, **self.resolve(options, where))

    def fill_tmem(self, pool: TMEMPool, index: int) -> None:
        table = self.data["tmem"][index]
        for n, op in enumerate(table.get("buffers", [])):
            line = self.lines.item("tmem.buffers", n, parent=("tmem", index))
            where = self.where(line, f"[[tmem.buffers]] #{n + 1} of {pool.name!r}")
            if "move_base_to" in op:
                _check_keys(op, {"move_base_to"}, where, self.lines)
                _call(where, pool.move_base_to, op["move_base_to"])
                continue
            self.alloc_kind(pool, _TMEM_KINDS, "TMEM", op, line, where)
        for n, view in enumerate(table.get("stages", [])):
            line = self.lines.item("tmem.stages", n, parent=("tmem", index))
            self.stage_view(view, self.where(line, f"[[tmem.stages]] #{n + 1} of {pool.name!r}"))

    def stage_view(self, view: dict[str, Any], where: _Where) -> None:
        allowed = _keywords(TMEMStages.__init__, ("self", "buf")) | {"buffer"}
        _check_keys(view, allowed, where, self.lines)
        args = dict(view)
        if "buffer" not in args:
            raise PlanFileError(f"{where}: needs buffer = the name of the TMEM buffer it views")
        buf = self.buffer_named("buffer", args.pop("buffer"), where)
        _call(where, buf.pool.stages, buf, **args)  # listed in the TMEM pool's plan


def parse_plan_file(text: str, source: str = "<plan>") -> Example:
    """A plan file's text as an :class:`~tilemem.examples.Example` whose ``build()`` replays
    it (a fresh SMEMPool each call, committed, holding the TMEM pools)."""
    data = _parse(text, source)
    lines = _Lines(text, source)
    _check_keys(data, _TOP_KEYS, _Where(source, 1, "top level"), lines)
    schema = data.get("schema", PLAN_FILE_SCHEMA)
    if schema != PLAN_FILE_SCHEMA:
        raise PlanFileError(
            f"{source}:{lines.key(1, 'schema')}: schema = {schema!r}; this tilemem reads "
            f"schema {PLAN_FILE_SCHEMA}"
        )
    for key, kind in (("smem", dict), ("tmem", list)):
        if key in data and not isinstance(data[key], kind):
            form = "[smem]" if kind is dict else "[[tmem]] tables"
            raise PlanFileError(f"{source}:{lines.key(1, key)}: {key} must be {form}")
    name = data.get("name", Path(source).stem)
    threads = data.get("threads", data.get("smem", {}).get("threads") or 0)  # 0: no occupancy
    example = Example(
        name=name,
        target=data.get("target") or "",
        threads=threads,
        summary=data.get("summary", f"plan file {source}"),
        build=lambda: _Builder(data, lines).build(),
    )
    example.build()  # every error shows now, with its line, not at first use
    return example


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise PlanFileError(f"cannot read plan file {path}: {exc.strerror or exc}") from None


def load_plan_file(path: str | Path) -> Example:
    """Read a TOML plan file (see docs/PLAN_FORMAT.md)."""
    return parse_plan_file(_read(Path(path)), str(path))


def load_plan_json(path: str | Path) -> tuple[str, MemoryPlan]:
    """(name, plan) from a JSON file written by ``plan.to_dict()`` or ``tilemem plan --json``;
    the name is its ``example`` key, else the file's stem."""
    text = _read(Path(path))
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PlanFileError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    try:
        plan = MemoryPlan.from_dict(data)
    except PlanFileError as exc:
        raise PlanFileError(f"{path}: {exc}") from None
    return str(data.get("example", Path(path).stem)), plan
