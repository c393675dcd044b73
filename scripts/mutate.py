#!/usr/bin/env python3
"""Mutation testing for tilemem: does the test suite notice a single-point change to the source?

Each mutant changes one spot of one module (a comparison boundary, an operator, an integer
constant, a boolean operator, a removed ``not``, a returned value, a removed ``raise`` or
validation call, a slice bound, ...). The mutant is written over the module in a private copy
of the repository (never in the working tree) and the module's test selection is run against
it with ``pytest -x``. A mutant is *killed* when a test fails or the run exceeds the time
limit, and *survives* when every test passes. The score is

    killed / (mutants - survivors judged equivalent)

where an equivalent survivor is a change no caller can observe (listed with its reason in the
``--equivalent`` file, one ``module | source line | change | reason`` per line; the change
may end in `` in Class.method`` to excuse only the copy of a repeated line in that definition).

    python3 scripts/mutate.py --module src/tilemem/plan/stages.py --jobs 1
    python3 scripts/mutate.py --module src/tilemem/layout --survivors /tmp/survivors.txt
    python3 scripts/mutate.py --module src/tilemem/plan/capacity.py --tests tests/plan --list
    python3 scripts/mutate.py --module src/tilemem/kernels.py --list \
        --skip-verdicts docs/verification/*mutation*.txt   # only mutants without a verdict

Without ``--tests`` a module of ``src/tilemem/<layer>/`` is tested by ``tests/<layer>/`` (plan
modules also by ``tests/pool/``) and ``tests/test_bad_inputs.py``; outside ``layout/`` the slow
TIRx oracle tests (``*oracle*``) are left out. ``ir/``, ``cuda/``, ``gemm/`` and the top-level
``planfile``, ``cli``, ``kernels`` and ``verify`` modules have their own lists (``_KERNEL_SIDE``).
Each mutant runs the test files with a test that executes one of its lines in the unmutated
run (traced once per test selection), and the tests that start tilemem in a subprocess; a
mutant no test reaches is reported as ``uncovered`` and counts as surviving.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# -- mutation operators ---------------------------------------------------------------------

_COMPARE_SWAP: dict[type, type] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_BINOP_SWAP: dict[type, type] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.FloorDiv: ast.Mult,
    ast.Div: ast.Mult,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
    ast.BitXor: ast.BitOr,
}
_CALL_SWAP = {"min": "max", "max": "min", "any": "all", "all": "any"}
_SYMBOL = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.FloorDiv: "//",
    ast.Div: "/",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.And: "and",
    ast.Or: "or",
}


@dataclass(frozen=True)
class Mutant:
    """One single-point change: bytes ``[start, end)`` of ``module`` become ``replacement``."""

    module: str  # path relative to the repository root
    index: int
    line: int
    end_line: int
    start: int
    end: int
    replacement: str
    change: str  # what changed, e.g. "`<` -> `<=`"
    source_line: str  # the original line, stripped
    column: int  # where the changed expression starts in ``source_line``
    length: int  # characters of source the changed expression spans
    scope: str = ""  # the enclosing class/function, dotted ("_Builder.call"); "" at module level

    @property
    def where(self) -> str:
        """The change and the span it rewrites: two ``8`` on one line are two mutants."""
        return f"{self.change} @ col {self.column}+{self.length}"

    def apply(self, source: bytes) -> bytes:
        return source[: self.start] + self.replacement.encode() + source[self.end :]

    @property
    def key(self) -> tuple[str, str, str]:
        """Stable across edits elsewhere in the file: module, source line, change and column."""
        return (self.module, self.source_line, self.where)

    @property
    def scoped_key(self) -> tuple[str, str, str]:
        """:attr:`key` with the enclosing definition: tells apart identical lines (a bare
        ``raise``) of different functions."""
        return (self.module, self.source_line, f"{self.where} in {self.scope}")


def _column(source: bytes, line_begin: int, start: int) -> int:
    """Characters from the first non-blank of the line to ``start``."""
    return len(source[line_begin:start].decode().lstrip())


def _is_docstring(node: ast.AST, parent: ast.AST | None) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        and isinstance(parent, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    )


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _is_text(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str)
    )


def _skipped_children(node: ast.AST) -> set[int]:
    """Children not worth mutating: annotations, decorators and ``__all__``."""
    skip: set[int] = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        skip.update(id(d) for d in node.decorator_list)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
        skip.add(id(node.returns))
    if isinstance(node, ast.arg) and node.annotation is not None:
        skip.add(id(node.annotation))
    if isinstance(node, ast.AnnAssign):
        skip.add(id(node.annotation))
    if isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
    ):
        skip.add(id(node.value))
    return skip


def _walk(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node that may be mutated: no docstrings, text, annotations, decorators,
    ``TYPE_CHECKING`` blocks."""
    stack: list[tuple[ast.AST, ast.AST | None]] = [(tree, None)]
    while stack:
        node, parent = stack.pop()
        if _is_docstring(node, parent) or _is_type_checking(node) or _is_text(node):
            continue
        yield node
        skip = _skipped_children(node)
        children = [c for c in ast.iter_child_nodes(node) if id(c) not in skip]
        stack.extend((child, node) for child in reversed(children))


def _expr(node: ast.expr) -> str:
    return "(" + ast.unparse(node) + ")"


def _with(node: ast.AST, **fields) -> ast.AST:
    new = copy.copy(node)
    for name, value in fields.items():
        setattr(new, name, value)
    return new


def _int_constants(node: ast.Constant) -> Iterator[tuple[str, str]]:
    value = node.value
    if isinstance(value, bool) or not isinstance(value, int):
        return
    for new in (value + 1, value - 1) if value else (1,):
        yield str(new), f"`{value}` -> `{new}`"


def _mutations(node: ast.AST) -> Iterator[tuple[ast.AST, str, str]]:
    """(node whose source is replaced, replacement source, description) for one node."""
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            new_op = _COMPARE_SWAP.get(type(op))
            if new_op is not None:
                ops = list(node.ops)
                ops[i] = new_op()
                change = f"`{_SYMBOL[type(op)]}` -> `{_SYMBOL[new_op]}`"
                yield node, _expr(_with(node, ops=ops)), change
    elif isinstance(node, ast.BinOp):
        new_op = _BINOP_SWAP.get(type(node.op))
        if new_op is not None and not (_is_text(node.left) or _is_text(node.right)):
            change = f"`{_SYMBOL[type(node.op)]}` -> `{_SYMBOL[new_op]}`"
            yield node, _expr(_with(node, op=new_op())), change
    elif isinstance(node, ast.AugAssign):
        new_op = _BINOP_SWAP.get(type(node.op))
        if new_op is not None and not _is_text(node.value):
            change = f"`{_SYMBOL[type(node.op)]}=` -> `{_SYMBOL[new_op]}=`"
            yield node, ast.unparse(_with(node, op=new_op())), change
    elif isinstance(node, ast.BoolOp):
        new_op = ast.Or if isinstance(node.op, ast.And) else ast.And
        change = f"`{_SYMBOL[type(node.op)]}` -> `{_SYMBOL[new_op]}`"
        yield node, _expr(_with(node, op=new_op())), change
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub, ast.Invert)):
        symbol = {ast.Not: "not ", ast.USub: "-", ast.Invert: "~"}[type(node.op)]
        yield node, _expr(node.operand), f"`{symbol.strip()}` removed"
    elif isinstance(node, ast.Constant):
        if isinstance(node.value, bool):
            yield node, str(not node.value), f"`{node.value}` -> `{not node.value}`"
        else:
            for text, change in _int_constants(node):
                yield node, text, change
    elif isinstance(node, ast.Return) and node.value is not None:
        if not (isinstance(node.value, ast.Constant) and node.value.value is None):
            yield node, "return None", "return value -> `None`"
    elif isinstance(node, ast.Raise):
        yield node, "pass", "`raise` removed"
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        yield node, "pass", f"call `{ast.unparse(node.value.func)}(...)` removed"
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        swap = _CALL_SWAP.get(node.func.id)
        if swap is not None:
            new_call = _with(node, func=ast.Name(id=swap, ctx=ast.Load()))
            yield node, _expr(new_call), f"`{node.func.id}(...)` -> `{swap}(...)`"
    elif isinstance(node, ast.Slice):
        if node.lower is not None:
            yield node, ast.unparse(_with(node, lower=None)), "slice lower bound removed"
        if node.upper is not None:
            yield node, ast.unparse(_with(node, upper=None)), "slice upper bound removed"


def _scopes(tree: ast.AST) -> dict[int, str]:
    """id(node) -> dotted name of the class or function that encloses it."""
    found: dict[int, str] = {}
    stack: list[tuple[ast.AST, str]] = [(tree, "")]
    while stack:
        node, scope = stack.pop()
        found[id(node)] = scope
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            scope = f"{scope}.{node.name}" if scope else node.name
        stack.extend((child, scope) for child in ast.iter_child_nodes(node))
    return found


def generate(module: Path) -> list[Mutant]:
    """Every mutant of ``module`` that still compiles, one per distinct resulting source."""
    source = module.read_bytes()
    tree = ast.parse(source)
    scopes = _scopes(tree)
    line_start = [0]
    for line in source.splitlines(keepends=True):
        line_start.append(line_start[-1] + len(line))
    lines = source.decode().splitlines()
    rel = str(module.resolve().relative_to(ROOT))
    mutants: list[Mutant] = []
    seen: set[bytes] = {source}
    for node in _walk(tree):
        for target, replacement, change in _mutations(node):
            start = line_start[target.lineno - 1] + target.col_offset
            end = line_start[target.end_lineno - 1] + target.end_col_offset  # type: ignore[operator]
            mutant = Mutant(
                rel,
                len(mutants),
                target.lineno,
                target.end_lineno or target.lineno,
                start,
                end,
                replacement,
                change,
                lines[target.lineno - 1].strip(),
                _column(source, line_start[target.lineno - 1], start),
                len(source[start:end].decode()),
                scopes.get(id(target), ""),
            )
            text = mutant.apply(source)
            if text in seen:
                continue
            try:
                compile(text, rel, "exec")
            except SyntaxError:
                continue
            seen.add(text)
            mutants.append(mutant)
    return mutants


# -- running ------------------------------------------------------------------------------
#
# Starting Python, pytest, numpy, hypothesis (and TVM for the oracle tests) costs more than
# most mutants take to die, so this process imports them once and forks one child per
# mutant. The child imports tilemem fresh from a private copy of the repository that holds
# the mutant, and runs pytest in-process.


@dataclass(frozen=True)
class Outcome:
    mutant: Mutant
    status: str  # "killed", "timeout", "survived", "uncovered" (no test runs the line)
    seconds: float


def _copy_tree(dest: Path) -> None:
    """The working tree (tests read benchmarks/ and examples/ too), without caches and git.

    Other checkouts nested inside it (a folder holding its own ``.git``) stay behind.
    """
    caches = shutil.ignore_patterns(
        ".git", "__pycache__", ".hypothesis", ".pytest_cache", "*.egg-info", "build", "dist"
    )

    def ignore(folder: str, names: list[str]) -> set[str]:
        nested = {n for n in names if (Path(folder, n, ".git")).exists()}
        return set(caches(folder, names)) | nested

    shutil.copytree(ROOT, dest, ignore=ignore, dirs_exist_ok=True)


def _drop_bytecode(path: Path) -> None:
    """Remove the cached bytecode of ``path`` (a same-size rewrite within one second would
    otherwise be served from the stale .pyc)."""
    for pyc in (path.parent / "__pycache__").glob(path.stem + ".*.pyc"):
        pyc.unlink(missing_ok=True)


_IMPORT_RE = re.compile(
    r"""^(?:import|from)\s+([A-Za-z_][\w.]*)|importorskip\(\s*["']([\w.]+)["']""", re.M
)


def preload(tests: list[str]) -> None:
    """Import the third-party modules the selected tests use, once, before any fork."""
    import pytest  # noqa: F401

    # the pool-program fuzz replays 10,000 programs per CI run; per mutant a few hundred
    os.environ.setdefault("TILEMEM_PROGRAMS", "300")

    files: list[Path] = []
    for t in tests:
        path = ROOT / t.split("::")[0]
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    for f in files:
        for match in _IMPORT_RE.finditer(f.read_text()):
            name = match.group(1) or match.group(2)
            if name.split(".")[0] in ("tilemem", "__future__") or name in sys.modules:
                continue
            with contextlib.suppress(Exception):  # the test itself reports (or skips) it
                __import__(name)
    if "tilemem" in sys.modules:
        raise SystemExit("tilemem was imported before forking: mutants would not be seen")


class LineTracer:
    """pytest plugin: which tests run which lines of some source files (one traced run serves
    every module that shares a test selection).

    Lines run outside any test (at import, during collection) are recorded for the test id
    ``""``: a mutant there needs the whole selection. A test that starts Python or tilemem in
    a subprocess (the CLI tests) runs lines the tracer cannot see: it is recorded in
    ``spawners`` and runs for every mutant of the module.
    """

    def __init__(self, filenames: list[str]) -> None:
        self.filenames = set(filenames)
        self.current = ""
        self.hits: dict[str, dict[int, set[str]]] = {f: {} for f in filenames}
        self.order: list[str] = []
        self.seconds: dict[str, float] = {}
        self.failed: list[str] = []  # tracing slows code down: time-limit tests may fail
        self.spawners: set[str] = set()

    def _watch_subprocesses(self) -> None:
        """Record the running test whenever it starts a process that may import tilemem."""
        import subprocess

        start = subprocess.Popen.__init__

        def watched(popen, args, *rest, **kwargs):
            text = args if isinstance(args, str) else " ".join(map(str, args))
            if sys.executable in text or "python" in text or "-m tilemem" in text:
                self.spawners.add(self.current)
            start(popen, args, *rest, **kwargs)

        subprocess.Popen.__init__ = watched  # type: ignore[method-assign]

    def _line(self, frame, event, arg):
        if event == "line":
            lines = self.hits[frame.f_code.co_filename]
            lines.setdefault(frame.f_lineno, set()).add(self.current)
        return self._line

    def _call(self, frame, event, arg):
        return self._line if frame.f_code.co_filename in self.filenames else None

    def pytest_sessionstart(self, session) -> None:
        self._watch_subprocesses()
        sys.settrace(self._call)

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        self.current = nodeid
        self.order.append(nodeid)

    def pytest_runtest_logfinish(self, nodeid, location) -> None:
        self.current = ""

    def pytest_runtest_logreport(self, report) -> None:
        self.seconds[report.nodeid] = self.seconds.get(report.nodeid, 0.0) + report.duration
        if report.failed:
            self.failed.append(report.nodeid)

    def pytest_sessionfinish(self, session, exitstatus) -> None:
        sys.settrace(None)


def _child(
    workdir: Path, tests: list[str], tracer: LineTracer | None = None, out: Path | None = None
) -> None:
    """In the forked child: run pytest on ``workdir``'s copy, exit with pytest's status. With a
    ``tracer``, its line hits are written as JSON to ``out``."""
    code = 3
    try:
        if tracer is None:  # a mutant's run is silent; the unmutated run shows its failures
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
        os.chdir(workdir)
        sys.path.insert(0, str(workdir / "src"))
        # subprocesses the tests start (``python -m tilemem ...``) import the mutant too
        inherited = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [str(workdir / "src"), *([inherited] if inherited else [])]
        )
        try:  # deterministic and without shrinking: a failure is all we need to know
            from hypothesis import Phase, settings

            settings.register_profile(
                "mutate",
                derandomize=True,
                database=None,
                deadline=None,
                phases=(Phase.explicit, Phase.reuse, Phase.generate),
            )
            settings.load_profile("mutate")
        except ImportError:
            pass
        import pytest

        if tracer is None:
            code = int(pytest.main(["-x", "-q", "-p", "no:cacheprovider", *tests]))
        else:
            code = int(pytest.main(["-q", "-p", "no:cacheprovider", *tests], plugins=[tracer]))
        if tracer is not None and out is not None:
            hits = {
                f: {line: sorted(ids) for line, ids in lines.items()}
                for f, lines in tracer.hits.items()
            }
            data = {"hits": hits, "order": tracer.order, "seconds": tracer.seconds}
            data["spawners"] = sorted(tracer.spawners)
            data["failed"] = tracer.failed
            data["status"] = code
            out.write_text(json.dumps(data))
            code = 0
    finally:
        os._exit(code)


class Workers:
    """One private copy of the repository per job; a mutant is written into one copy at a time,
    then a forked child runs the tests there."""

    def __init__(self, jobs: int) -> None:
        self.dirs = [Path(tempfile.mkdtemp(prefix="tilemem-mutate-")) for _ in range(jobs)]
        for d in self.dirs:
            _copy_tree(d)

    def run_all(
        self,
        mutants: list[Mutant],
        select: Callable[[Mutant], list[str]],
        limit: Callable[[list[str]], float],
        done: Callable[[Outcome], None],
        stop: float | None = None,
    ) -> None:
        """Run every mutant against the tests ``select`` picks for it; none picked: uncovered.

        Past ``stop`` (a ``time.monotonic()`` value) no mutant starts and the running ones are
        ended without a verdict: the caller sees fewer outcomes than mutants."""
        pending = list(reversed(mutants))
        free = list(self.dirs)
        running: dict[int, tuple[Mutant, Path, bytes, float, float]] = {}
        try:
            self._loop(pending, free, running, select, limit, done, stop)
        finally:
            for pid in running:  # interrupted: no child outlives the run
                with contextlib.suppress(ProcessLookupError, ChildProcessError):
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)

    def _loop(self, pending, free, running, select, limit, done, stop) -> None:
        while pending or running:
            if stop is not None and time.monotonic() >= stop:
                return  # run_all ends the running children
            while pending and free:
                mutant = pending.pop()
                tests = select(mutant)
                if not tests:
                    done(Outcome(mutant, "uncovered", 0.0))
                    continue
                workdir = free.pop()
                path = workdir / mutant.module
                original = path.read_bytes()
                path.write_bytes(mutant.apply(original))
                _drop_bytecode(path)
                pid = os.fork()
                if pid == 0:
                    _child(workdir, tests)
                deadline = time.monotonic() + limit(tests)
                running[pid] = (mutant, workdir, original, time.monotonic(), deadline)
            time.sleep(0.01)
            for pid, (mutant, workdir, original, begin, deadline) in list(running.items()):
                finished, status = os.waitpid(pid, os.WNOHANG)
                elapsed = time.monotonic() - begin
                if finished == 0 and time.monotonic() < deadline:
                    continue
                if finished == 0:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    verdict = "timeout"
                else:
                    verdict = _verdict(os.waitstatus_to_exitcode(status))
                path = workdir / mutant.module
                path.write_bytes(original)
                _drop_bytecode(path)
                del running[pid]
                free.append(workdir)
                done(Outcome(mutant, verdict, elapsed))

    def baseline(self, tests: list[str], modules: list[str]) -> tuple[float, dict[str, Coverage]]:
        """Run the unmutated selection once, tracing which tests run which lines of each of
        ``modules`` (paths relative to the repository)."""
        workdir = self.dirs[0]
        out = workdir / "coverage.json"
        begin = time.monotonic()
        pid = os.fork()
        if pid == 0:
            _child(workdir, tests, LineTracer([str(workdir / m) for m in modules]), out)
        os.waitpid(pid, 0)
        data = json.loads(out.read_text())
        if data["status"] not in (0, 1):  # collection errors, usage errors, no tests
            raise SystemExit(f"pytest could not run {' '.join(tests)} (status {data['status']})")
        if data["failed"]:  # again without the tracer: only a real failure stops the run
            print(f"failed under the tracer, run again untraced: {' '.join(data['failed'])}")
            pid = os.fork()
            if pid == 0:
                _child(workdir, data["failed"])
            _, status = os.waitpid(pid, 0)
            if _verdict(os.waitstatus_to_exitcode(status)) != "survived":
                raise SystemExit(f"the unmutated sources fail {' '.join(data['failed'])}")
        seconds = time.monotonic() - begin
        spawners = set(data["spawners"]) - {""}
        coverages = {}
        for module in modules:
            lines = data["hits"][str(workdir / module)]
            hits = {int(line): set(ids) for line, ids in lines.items()}
            coverages[module] = Coverage(
                hits, data["order"], tests, data["seconds"], seconds, spawners
            )
        return seconds, coverages

    def close(self) -> None:
        for d in self.dirs:
            shutil.rmtree(d, ignore_errors=True)


@dataclass(frozen=True)
class Coverage:
    """Which tests run which lines of the mutated module (from the traced unmutated run)."""

    hits: dict[int, set[str]]
    order: list[str]
    selection: list[str]
    seconds: dict[str, float]  # per test, traced (so slower than a mutant's run)
    total: float  # the traced run of the whole selection
    spawners: set[str]  # tests that run tilemem in a subprocess: they may reach any line

    def time_limit(self, tests: list[str]) -> float:
        """Seconds a mutant run of ``tests`` may take before it counts as hanging: twice their
        traced time plus start-up (10 s and twice what the traced run spent outside its tests:
        imports and collection, which a busy machine slows as much as the tests), the whole
        traced run when it is the whole selection."""
        if tests == self.selection:
            return self.total + 10
        outside = max(0.0, self.total - sum(self.seconds.values()))
        return 10 + 2 * outside + 2 * sum(self.seconds.get(t, 1.0) for t in tests)

    def tests_for(self, mutant: Mutant) -> list[str]:
        """The tests of every file with a test that runs a line of ``mutant``, in run order;
        none when no test runs it.

        Whole files, not single tests: a file that builds a kernel once (a cached helper, a
        module-scoped fixture) runs the module's lines in its first test only, and its other
        tests check the cached result. A line run only at import (a module constant, a default
        argument) can change what any test sees: the whole selection. A line run at import
        and by tests: those tests' files (each of them imports the module, so a change at
        import shows there too). The tests that start tilemem in a subprocess come after the
        others, for every mutant.
        """
        ids: set[str] = set()
        for line in range(mutant.line, mutant.end_line + 1):
            ids |= self.hits.get(line, set())
        if ids == {""}:
            return list(self.selection)
        files = {t.split("::")[0] for t in ids if t}
        direct = [t for t in self.order if t.split("::")[0] in files]
        return direct + [t for t in self.order if t in self.spawners and t not in direct]


def _verdict(code: int) -> str:
    """0: every test passed. Anything else (failures, a collection error, tests that vanish
    because the mutant changed a parametrisation) kills the mutant."""
    return "survived" if code == 0 else "killed"


# tests that exercise a layer beyond its own folder: the pools drive the plan checks, and the
# bad-input campaign calls every public entry point
_ALSO_TESTED_BY = {"plan": ["pool"], "layout": [], "pool": []}
_CAMPAIGN = "test_bad_inputs.py"
# the kernel side (a folder or a top-level module -> test files, as globs under tests/): the
# IR's checks and emission, the generated CUDA (pinned source, NVRTC where cuda-core is
# installed), the simulator runs of the kernels, and the CLI. Files named for their own
# module's mutants or survivors (``test_<name>_*mutants*.py``, ``test_<name>_*survivors*.py``)
# are found by the patterns too.
_KERNEL_SIDE = {
    "ir": ["ir/test_*.py", "cuda/test_*.py", "sim/test_*.py", "pool/test_kernel_mode.py"],
    "cuda": ["cuda/test_*.py", "sim/test_*.py"],
    "gemm": [
        "cuda/test_gemm*.py",
        "cuda/test_generated_source_pins.py",
        "**/test_gemm*mutants*.py",
        "sim/test_gemm_sim.py",
        "sim/test_gemm_shapes.py",
        "sim/test_mutants_gemm.py",
        "plan/test_capacity.py",
        "test_cli.py",
    ],
    "planfile": ["test_planfile*.py", "test_loader_fuzz.py", "test_cli*.py"],
    "cli": ["test_cli*.py", "sim/test_cli_sim.py"],
    "kernels": [
        "cuda/test_generated_source_pins.py",
        "**/test_kernels*mutants*.py",
        "**/test_kernels*survivors*.py",
        "cuda/test_emission.py",
        "cuda/test_operand_intrinsics.py",
        "cuda/test_verify_kernels.py",
        "cuda/test_example_kernels.py",
        "sim/test_core.py",
        "sim/test_gemm_sim.py",
        "sim/test_tcgen05_kernels.py",
        "sim/test_nvfp4_sim.py",
        "sim/test_tcgen05_attention.py",
        "sim/test_mutants_gemm.py",
        "sim/test_tmem_protocol.py",
        "pool/test_kernel_mode.py",
        "test_cli_hostile.py",
    ],
    "verify": [
        "cuda/test_generated_source_pins.py",
        "**/test_verify*mutants*.py",
        "**/test_verify*survivors*.py",
        "cuda/test_verify_kernels.py",
        "ir/test_intrinsic_registry.py",
        "test_cli*.py",
    ],
}
# test files that need a GPU or nvcc: skipped where the mutants run, so not selected
_NEEDS_GPU = re.compile(r"gpu|nvcc")


def _first(path: Path) -> bool:
    """Short exact tests first (pinned values, pinned generated source, tests written against
    mutants): most mutants die in their first seconds."""
    return any(k in path.name for k in ("_pinned", "_pins", "mutants"))


def default_tests(module: Path, root: Path = ROOT) -> list[str]:
    """``src/tilemem/<layer>/x.py`` -> the test files of ``tests/<layer>`` (plan: and of
    ``tests/pool``) and the bad-input campaign; the slow TIRx oracle only for layout modules.
    ``ir/``, ``cuda/``, ``gemm/`` and the top-level kernel-side modules -> ``_KERNEL_SIDE``."""
    rel = module.resolve().relative_to(ROOT / "src" / "tilemem")
    layer = rel.parts[0] if len(rel.parts) > 1 else rel.stem
    files: list[Path] = []
    if layer in _KERNEL_SIDE:
        for pattern in _KERNEL_SIDE[layer]:
            files += [
                f
                for f in sorted((root / "tests").glob(pattern))
                if f not in files and not _NEEDS_GPU.search(f.name)
            ]
    elif len(rel.parts) > 1 and (root / "tests" / layer).is_dir():
        for folder in [layer, *_ALSO_TESTED_BY.get(layer, [])]:
            files += sorted((root / "tests" / folder).glob("test_*.py"))
    else:
        raise SystemExit(f"no tests known for {module}: pass --tests")
    if layer != "layout":
        files = [f for f in files if "oracle" not in f.name]
    files.sort(key=lambda f: not _first(f))  # stable: the listed order otherwise
    campaign = root / "tests" / _CAMPAIGN
    if campaign.exists() and campaign not in files:
        files.append(campaign)
    return [str(f.relative_to(root)) for f in files]


def read_equivalent(path: Path | None) -> dict[tuple[str, str, str], str]:
    """``module | source line | change | reason`` lines -> {key: reason} (a change ending in
    `` in Class.method`` keys :attr:`Mutant.scoped_key`, else :attr:`Mutant.key`).

    ``path`` is one file or a folder whose ``*.txt`` files are all read (one per module).
    """
    if path is None or not path.exists():
        return {}
    if path.is_dir():
        found_all: dict[tuple[str, str, str], str] = {}
        for file in sorted(path.glob("*.txt")):
            found_all.update(read_equivalent(file))
        return found_all
    found: dict[tuple[str, str, str], str] = {}
    for raw in path.read_text().splitlines():
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in raw.split(" | ")]
        # the change is the part that ends in its column: a source line may hold " | " too
        at = [i for i, p in enumerate(parts) if i > 1 and _CHANGE_AT.search(p)]
        if len(parts) < 4 or not at:
            raise SystemExit(f"{path}: expected 'module | source line | change | reason': {raw}")
        i = at[0]
        found[(parts[0], " | ".join(parts[1:i]), parts[i])] = " | ".join(parts[i + 1 :])
    return found


_CHANGE_AT = re.compile(r"@ col \d+\+\d+( in [\w.]+)?$")


def modules_from(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for p in paths:
        path = (ROOT / p).resolve() if not Path(p).is_absolute() else Path(p)
        if path.is_dir():  # with its subfolders (ir/intrinsics/)
            found += sorted(f for f in path.rglob("*.py") if f.name != "__init__.py")
        elif path.is_file():
            found.append(path)
        else:
            raise SystemExit(f"no such module or folder: {p}")
    return found


def _selected(module: Path, args: argparse.Namespace) -> list[Mutant]:
    """``module``'s mutants that ``--lines``, ``--rerun`` and ``--skip-verdicts`` leave."""
    every = generate(module)
    mutants = every
    if args.lines:
        low, high = (int(x) for x in args.lines.split("-"))
        mutants = [m for m in mutants if low <= m.line <= high]
    if args.rerun:
        mutants = rerun_selection(mutants, args.rerun.read_text().splitlines())
    verdicts = getattr(args, "verdicts", None)
    if verdicts is not None:
        mutants, judged, equal = without_verdicts(mutants, every, verdicts, args.judged)
        args.skipped[str(module.relative_to(ROOT))] = (len(every), judged, equal, len(mutants))
    return mutants


# a verbose log's verdict line: "  [8/477] killed   src/x.py:220: `8` -> `9` @ col 36+1  (line
# text)  6.7 s"
_LOGGED = re.compile(
    r"\s*\[\d+/\d+\] (?:killed|timeout)\s+(\S+?):(\d+): (.+? @ col \d+\+\d+)  \((.*)\)  "
    r"\d+(?:\.\d+)? s"
)


def read_verdicts(paths: list[Path]) -> dict[tuple[str, str, str], set[int]]:
    """Mutants with a verdict in earlier runs -> the line numbers they were logged at.

    A verdict is a ``killed`` or ``timeout`` line of a ``--verbose`` log (a mutant killed by
    some tests is killed by all of them). A ``survived`` line is none (the run may have had
    only some of the tests), nor is ``uncovered``, nor a survivors-file line (logs quote
    survivors files of partial selections). Lines without a column (``@ col C+L``) match
    nothing."""
    found: dict[tuple[str, str, str], set[int]] = {}
    for path in paths:
        for line in path.read_text(errors="replace").splitlines():
            hit = _LOGGED.fullmatch(line.rstrip())
            if hit is not None:
                found.setdefault((hit[1], hit[4], hit[3]), set()).add(int(hit[2]))
    return found


def without_verdicts(
    mutants: list[Mutant],
    every: list[Mutant],
    verdicts: dict[tuple[str, str, str], set[int]],
    equivalent: dict[tuple[str, str, str], str],
) -> tuple[list[Mutant], int, int]:
    """``mutants`` less those with a verdict: logged (module, line text, change and column
    equal; where the line text holds this change on more than one line of the module's
    current source, ``every`` mutant of it, the line number too), or judged equivalent.
    Returns (the rest, how many had a logged verdict, how many are judged equivalent)."""
    lines_of: dict[tuple[str, str, str], set[int]] = {}
    for m in every:
        lines_of.setdefault(m.key, set()).add(m.line)
    rest: list[Mutant] = []
    judged = equal = 0
    for m in mutants:
        numbers = verdicts.get(m.key)
        if numbers is not None and (len(lines_of[m.key]) == 1 or m.line in numbers):
            judged += 1
        elif m.scoped_key in equivalent or m.key in equivalent:
            equal += 1
        else:
            rest.append(m)
    return rest, judged, equal


_LISTED = re.compile(r"(\S+?):(\d+): (.*?)  \((.*)\)")
_VERDICT_TAG = r"  (SURVIVED|UNCOVERED|EQUIVALENT \(.*\))$"


def rerun_selection(mutants: list[Mutant], lines: list[str]) -> list[Mutant]:
    """The mutants that survivors-file ``lines`` list, matched by module, line text and
    change with its column (a line written without a column matches every column).

    Identical lines of one module hold mutants with one key: those whose line numbers are
    listed are taken; when some listed number holds none (the module was edited above
    them), all of them.
    Listed mutants of these modules that match nothing (their line text changed) are
    reported: they are new mutants, to be run whole.
    """
    modules = {m.module for m in mutants}
    wanted: dict[tuple[str, str, str], set[int]] = {}
    for line in lines:
        found = _LISTED.match(re.sub(_VERDICT_TAG, "", line.strip()))
        if found is None or found[1] not in modules:
            continue
        change = found[3] if _CHANGE_AT.search(found[3]) else _unnumbered(line)
        wanted.setdefault((found[1], change, found[4]), set()).add(int(found[2]))
    by_key: dict[tuple[str, str, str], list[Mutant]] = {}
    for m in mutants:
        by_key.setdefault(m.key, []).append(m)
        by_key.setdefault(("", _unnumbered(_describe(m)), ""), []).append(m)
    chosen: set[int] = set()
    unmatched = 0
    for (module, change, text), numbers in wanted.items():
        key = (module, text, change) if _CHANGE_AT.search(change) else ("", change, "")
        candidates = by_key.get(key, [])
        unmatched += not candidates
        exact = [m for m in candidates if m.line in numbers]
        chosen.update(m.index for m in (exact if len(exact) >= len(numbers) else candidates))
    if unmatched:
        print(
            f"--rerun: {unmatched} listed mutant(s) of {' '.join(sorted(modules))} match no "
            "mutant of the current sources (line text changed: run those lines whole)"
        )
    return [m for m in mutants if m.index in chosen]


class Baselines:
    """Traced unmutated runs, one per test selection: the first module of a selection traces
    every module of the run that shares it, the others reuse that run."""

    def __init__(self, workers: Workers, selections: dict[str, list[str]]) -> None:
        self.workers = workers
        self.selections = selections  # module (relative path) -> its tests
        self.done: dict[str, Coverage] = {}

    def coverage(self, module: str, report: Callable[[str], None]) -> Coverage:
        if module not in self.done:
            tests = self.selections[module]
            sharing = [m for m, t in self.selections.items() if t == tests and m not in self.done]
            preload(tests)
            seconds, found = self.workers.baseline(tests, sharing)
            report(
                f"traced the unmutated run of {' '.join(tests)} for {' '.join(sharing)} "
                f"({seconds:.1f} s)"
            )
            self.done.update(found)
        return self.done[module]


def _run_module(
    module: Path,
    baselines: Baselines,
    workers: Workers,
    args: argparse.Namespace,
    report: Callable[[str], None],
    stop: float | None = None,
) -> tuple[list[Outcome], int]:
    """The outcomes of ``module``'s mutants (fewer than the count when ``stop`` came first)."""
    mutants = _selected(module, args)
    rel = str(module.relative_to(ROOT))
    if args.skip_verdicts:
        _print_skipped(args, rel)
    if not mutants:
        return [], 0
    coverage = baselines.coverage(rel, report)
    report(f"{rel}: {len(mutants)} mutants, tests {' '.join(coverage.selection)}")
    outcomes: list[Outcome] = []

    def one(outcome: Outcome) -> None:
        outcomes.append(outcome)
        if outcome.status != "killed" or args.verbose:
            m = outcome.mutant
            report(
                f"  [{len(outcomes)}/{len(mutants)}] {outcome.status:8s} {m.module}:{m.line}: "
                f"{m.where}  ({m.source_line})  {outcome.seconds:.1f} s"
            )

    limit = (lambda tests: args.timeout) if args.timeout else coverage.time_limit
    workers.run_all(mutants, coverage.tests_for, limit, one, stop)
    return sorted(outcomes, key=lambda o: o.mutant.index), len(mutants)


def _describe(m: Mutant) -> str:
    return f"{m.module}:{m.line}: {m.where}  ({m.source_line})"


def _unnumbered(line: str) -> str:
    """A survivor line without its line number and verdict, so reruns survive moved lines.

    Lines written before columns were recorded match every column of their change.
    """
    line = re.sub(_VERDICT_TAG, "", line.rstrip())
    found = re.match(
        r"(\S+?):\d+: (`.*?` -> `.*?`|.*?removed|.*?-> `None`)(?: @ col \d+\+\d+)?  \((.*)\)", line
    )
    if found is None:
        return line
    return f"{found[1]} {found[2]} ({found[3]})"


def _table(rows: list[tuple[str, int, int, int, int]]) -> str:
    head = ("module", "mutants", "killed", "survived", "equivalent", "score")
    body = []
    for module, total, killed, survived, equivalent in rows:
        judged = total - equivalent
        score = f"{100 * killed / judged:.1f}%" if judged else "-"
        body.append((module, str(total), str(killed), str(survived), str(equivalent), score))
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    lines = [
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
        for r in [head, *body]
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", nargs="+", required=True, help="module files or folders")
    parser.add_argument("--tests", nargs="+", help="test files/folders (default: by layer)")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once (default 1)")
    parser.add_argument(
        "--timeout", type=float, help="seconds per mutant (default: from the traced run)"
    )
    parser.add_argument("--survivors", type=Path, help="write surviving mutants to this file")
    parser.add_argument(
        "--equivalent",
        type=Path,
        default=ROOT / "docs" / "mutation" / "equivalent",
        help="file or folder of 'module | source line | change | reason' lines",
    )
    parser.add_argument("--lines", help="only mutants on lines LOW-HIGH")
    parser.add_argument(
        "--rerun", type=Path, help="only the mutants listed in this survivors file (unchanged code)"
    )
    parser.add_argument(
        "--budget",
        type=float,
        help="seconds for the whole run: past them no mutant starts; the table and the "
        "survivors so far are written after every module, and a cut module is marked partial",
    )
    parser.add_argument(
        "--skip-verdicts",
        nargs="+",
        type=Path,
        metavar="LOG",
        help="skip the mutants with a verdict in these earlier --verbose logs (killed, timeout), "
        "matched by module, line text, change and column (and line number where the line text "
        "repeats), and those judged equivalent (--equivalent)",
    )
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument("--verbose", action="store_true", help="print every outcome")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # clean up on kill

    modules = modules_from(args.module)
    equivalent = read_equivalent(args.equivalent)
    if args.skip_verdicts:
        args.verdicts, args.judged = read_verdicts(args.skip_verdicts), equivalent
        args.skipped = {}
    if args.list:  # with --lines / --rerun / --skip-verdicts: the mutants they select
        for module in modules:
            for m in _selected(module, args):
                print(_describe(m))
        _print_skipped(args)
        return 0
    workers = Workers(max(1, args.jobs))
    rows: list[tuple[str, int, int, int, int]] = []
    survivors: list[str] = []
    notes: list[str] = []
    begin = time.monotonic()
    stop = begin + args.budget if args.budget else None
    # the copy's tests: files added to the working tree since the copy are not there
    selections = {
        str(m.relative_to(ROOT)): args.tests or default_tests(m, workers.dirs[0]) for m in modules
    }
    baselines = Baselines(workers, selections)
    report = lambda s: print(s, flush=True)  # noqa: E731
    try:
        for module in modules:
            rel = str(module.relative_to(ROOT))
            if stop is not None and time.monotonic() >= stop:
                notes.append(f"{rel}: not run (time budget spent)")
                continue
            outcomes, count = _run_module(module, baselines, workers, args, report, stop)
            if args.rerun and not count:
                continue
            if len(outcomes) < count:
                notes.append(f"{rel}: partial, {len(outcomes)} of {count} mutants run")
            rows.append(_row(rel, outcomes, equivalent, survivors))
            _write(args, rows, survivors, notes, begin)
    finally:
        workers.close()
    _write(args, rows, survivors, notes, begin, final=True)
    return 0


def _print_skipped(args: argparse.Namespace, only: str | None = None) -> None:
    """One line per module: how many mutants --skip-verdicts left to run."""
    for rel, (total, judged, equal, left) in getattr(args, "skipped", {}).items():
        if only is None or rel == only:
            print(
                f"--skip-verdicts: {rel}: {left} to run of {total} mutants ({judged} with a "
                f"verdict in the logs, {equal} judged equivalent)",
                flush=True,
            )


def _row(
    rel: str, outcomes: list[Outcome], equivalent: dict, survivors: list[str]
) -> tuple[str, int, int, int, int]:
    """One table row; appends the module's survivors (tagged EQUIVALENT when judged so)."""
    killed = sum(o.status in ("killed", "timeout") for o in outcomes)
    judged_equal = 0
    for o in outcomes:
        if o.status not in ("survived", "uncovered"):
            continue
        m = o.mutant
        reason = equivalent.get(m.scoped_key) or equivalent.get(m.key)
        judged_equal += reason is not None
        tag = f"EQUIVALENT ({reason})" if reason else o.status.upper()
        survivors.append(f"{_describe(m)}  {tag}")
    return (rel, len(outcomes), killed, len(outcomes) - killed, judged_equal)


def _write(args, rows, survivors, notes, begin: float, final: bool = False) -> None:
    """Print (at the end) and write (after every module) the table and the survivors."""
    shown = list(rows)
    if len(rows) > 1:
        total = tuple(sum(r[i] for r in rows) for i in range(1, 5))
        shown.append(("total", *total))  # type: ignore[arg-type]
    text = _table(shown) + "".join(f"\n{n}" for n in notes)
    text += f"\n\n{time.monotonic() - begin:.0f} s, {args.jobs} job(s)"
    if args.survivors:
        args.survivors.write_text("".join(s + "\n" for s in survivors))
        args.survivors.with_suffix(".table").write_text(text + "\n")
    if final:
        print("\n" + text)
        if args.survivors:
            print(f"survivors written to {args.survivors} (table: .table next to it)")


if __name__ == "__main__":
    sys.exit(main())
