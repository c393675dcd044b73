"""Warps as coroutines: each interprets the kernel's statements for its 32 lanes.

Statements run under an active mask (lanes inside the enclosing branches and loop
trips). An intrinsic runs its declared semantics (``sim=``); a blocking one is a
generator whose waits the warp yields to the scheduler. A blocking call nested inside an
expression (``T.ptx.mbarrier.try_wait_parity`` in a condition) runs first, and the
expression then reads its result.
"""

from __future__ import annotations

import inspect
from collections.abc import Generator

import numpy as np

from ..errors import SimError
from ..ir.intrinsics import INTRINSICS
from ..ir.nodes import (
    BinOp,
    BufferVar,
    Call,
    Cast,
    Comment,
    DeclBuffer,
    Expr,
    ExprStmt,
    For,
    IfThenElse,
    LetStmt,
    Load,
    PhaseStmt,
    Select,
    SeqStmt,
    Stmt,
    Store,
    TensorMapVar,
    UnOp,
)
from .context import Context
from .machine import SMEM_BASE, Machine, Warp
from .shadow import Shadow
from .storage import decode, encode, encode_bytes
from .values import LANES, Compiler, convert, numpy_type

# operand-free values fixed for a warp's whole run: computed once per warp
_WARP_CONSTANTS = {"cuda.thread_idx", "cuda.block_idx", "cuda.grid_dim", "ptx.cluster.ctarank"}


def _blocking(op: str) -> bool:
    spec = INTRINSICS.get(op)
    return spec is not None and spec.sim is not None and inspect.isgeneratorfunction(spec.sim)


def _nested_blocking(e: Expr, top: bool, out: list) -> list:
    if isinstance(e, Call):
        for a in e.args:
            if isinstance(a, Expr):
                _nested_blocking(a, False, out)
        if not top and _blocking(e.op):
            out.append(e)
    elif isinstance(e, BinOp):
        _nested_blocking(e.a, False, out)
        _nested_blocking(e.b, False, out)
    elif isinstance(e, (UnOp, Cast)):
        _nested_blocking(e.a, False, out)
    elif isinstance(e, Select):
        for x in (e.cond, e.a, e.b):
            _nested_blocking(x, False, out)
    elif isinstance(e, Load):
        _nested_blocking(e.index, False, out)
    return out


class Runner:
    """One warp's interpreter; also the frame compiled expressions read from."""

    def __init__(self, machine: Machine, warp: Warp, compiler: Compiler, bindings: dict):
        self.m, self.w, self.compile, self.bindings = machine, warp, compiler, bindings
        self.env = warp.env
        self.ctx = Context(machine, warp, self)
        self.preempt = machine.schedule != "in-order"
        self.nested: dict[int, list] = compiler.nested
        self.constants: dict[tuple, np.ndarray] = {}

    # -- expressions --------------------------------------------------------------------------
    def eval(self, e, mask: np.ndarray) -> np.ndarray:
        if isinstance(e, (BufferVar, TensorMapVar)):
            raise SimError(f"{e.name} is not a value; its instruction reads it by name")
        out = self.compile(e)(self, mask)
        return np.broadcast_to(out, (LANES,)) if np.ndim(out) == 0 else out

    def tensor_map(self, var):
        if var not in self.bindings:
            raise SimError(f"tensor map {getattr(var, 'name', var)!r} is not a kernel parameter")
        return self.bindings[var]

    def call(self, e: Call, mask: np.ndarray) -> np.ndarray:
        cached = self.w.cache.pop(id(e), None)
        if cached is not None:
            return cached
        constant = e.op in _WARP_CONSTANTS
        key = (e.op, e.attrs)
        if constant and key in self.constants:
            return self.constants[key]
        ctx = self.ctx
        saved = ctx.call, ctx.active, ctx.op_name  # a call inside another call's operand
        try:
            result = self.invoke(e, self.w.mask if constant else mask)
        finally:
            ctx.call, ctx.active, ctx.op_name = saved
        if constant:
            self.constants[key] = self._as_value(e, result)
            return self.constants[key]
        if inspect.isgenerator(result):
            raise SimError(f"{e.op} blocks; it cannot run inside an expression here")
        return self._as_value(e, result)

    def _as_value(self, e: Call, result) -> np.ndarray:
        t = numpy_type(e.dtype)
        return np.broadcast_to(np.asarray(result).astype(t), (LANES,)).copy()

    def invoke(self, e: Call, mask: np.ndarray):
        spec = INTRINSICS.get(e.op)
        if spec is None or spec.sim is None:
            raise SimError(
                f"instruction {e.op!r} has no simulation semantics: declare sim= with its "
                "@intrinsic so tilemem.sim can run it"
            )
        ctx = self.ctx
        ctx.call, ctx.active, ctx.op_name = e, mask, spec.instruction
        self.m.instructions[e.op] += 1
        return spec.sim(ctx, e)

    def prefetch(self, exprs, mask: np.ndarray, top: Expr | None = None) -> Generator:
        """Run blocking calls nested in ``exprs`` (not ``top`` itself) before evaluating them."""
        for e in exprs:
            key = id(e)
            calls = self.nested.get(key)
            if calls is None:
                calls = self.nested[key] = _nested_blocking(e, e is top, [])
            for c in calls:
                result = self.invoke(c, mask)
                value = yield from result
                self.w.cache[id(c)] = self._as_value(c, value)

    # -- memory ----------------------------------------------------------------------------------
    def load(self, e: Load, index: np.ndarray, mask: np.ndarray) -> np.ndarray:
        var = e.buffer
        self.m.instructions[f"ld.{var.scope.split('.')[0]}"] += 1
        if var.scope == "local":
            return self._local(var, index, mask, None)
        if var.scope == "global":
            mem = self.bindings[var]
            raw = self.m.global_access(
                mem, index[mask], self._actor(), False, self._rec("ld.global", mask)
            )
            out: np.ndarray = np.zeros(LANES, numpy_type(var.dtype))
            out[mask] = decode(raw, var.dtype)
            return out
        addrs, mask = self._smem_addrs(var, index, mask, "ld.shared")
        raw = self.m.smem_access(
            self.w.cta, addrs, self._actor(), False, self._rec("ld.shared", mask)
        )
        out = np.zeros(LANES, numpy_type(var.dtype))
        out[mask] = decode(raw, var.dtype)
        return out

    def store(self, s: Store, mask: np.ndarray) -> None:
        var = s.buffer
        index = self.eval(s.index, mask)
        value = convert(self.eval(s.value, mask), var.dtype)
        self.m.instructions[f"st.{var.scope.split('.')[0]}"] += 1
        if var.scope == "local":
            self._local(var, index, mask, value)
            return
        if var.scope == "global":
            mem = self.bindings[var]
            data = encode(value[mask], var.dtype, mem[0].dtype)
            self.m.global_access(
                mem, index[mask], self._actor(), True, self._rec("st.global", mask), data
            )
            return
        addrs, mask = self._smem_addrs(var, index, mask, "st.shared")
        data = encode_bytes(value[mask], var.dtype)
        rec = self._rec("st.shared", mask)
        lanes = np.flatnonzero(mask)
        self.m.smem_access(self.w.cta, addrs, self._actor(), True, rec, data, lanes=lanes)

    def _smem_addrs(self, var: BufferVar, index: np.ndarray, mask: np.ndarray, op: str):
        size = var.dtype.bits // 8
        offs = index[mask].astype(np.int64) * size
        nbytes = var.nbytes if var.nbytes is not None else int(np.prod(var.shape)) * size
        bad = (offs < 0) | (offs + size > nbytes)
        rec = None
        if bad.any():
            rec = self._rec(op, mask)
            self.m.report(
                "out-of-bounds",
                f"{op} of {var.name} at byte {int(offs[bad][0])}, outside its {nbytes} bytes; "
                "check the index arithmetic against the buffer's shape",
                (rec,),
                space="shared",
                buffer=var.name,
                where=f"bytes {int(offs[bad].min())}..{int(offs[bad].max()) + size - 1}",
            )
        phase = self.w.phase
        if phase is not None and var.live is not None and phase not in var.live:
            rec = rec if rec is not None else self._rec(op, mask)
            self.m.report(
                "lifetime",
                f"{op} of {var.name} in phase {phase!r}; it is live only in {list(var.live)} "
                "(its bytes may hold another buffer now): move the access or give the buffer "
                "live= that phase",
                (rec,),
                space="shared",
                buffer=var.name,
                where=_byte_range(offs, size),
            )
        base = SMEM_BASE + (var.byte_offset or 0)
        inside = mask.copy()
        inside[mask] = ~bad  # lanes outside the buffer access nothing (reported above)
        offs = offs[~bad]
        return (base + offs)[:, None] + np.arange(size, dtype=np.int64), inside

    def _local(self, var: BufferVar, index, mask, value):
        regs, shadow = self.w.regs[var]
        idx = index[mask].astype(np.int64)
        n = regs.shape[1]
        if ((idx < 0) | (idx >= n)).any():
            rec = self._rec("local", mask)
            self.m.report(
                "out-of-bounds",
                f"index {int(idx[(idx < 0) | (idx >= n)][0])} into local array {var.name} of "
                f"{n} elements",
                (rec,),
                space="registers",
                buffer=var.name,
            )
            idx = np.clip(idx, 0, n - 1)
        lanes = np.flatnonzero(mask)
        gid, vc = self._actor()
        if shadow.wt.max() >= 0:  # an asynchronous operation writes this array
            uniq = np.unique(idx)
            rec = self._rec("st.local" if value is not None else "ld.local", mask)
            self.m.check_registers(self.w, var, shadow, uniq, gid, vc, value is not None, rec)
            if value is not None:
                shadow.record_write(uniq, gid, int(vc[gid]), rec, False)
            else:
                shadow.record_read(uniq, gid, int(vc[gid]), rec)
        if value is not None:
            regs[lanes, idx] = value[mask]
            return None
        out = np.zeros(LANES, regs.dtype)
        out[lanes] = regs[lanes, idx]
        return out

    def _actor(self) -> tuple:
        return self.w.gid, self.m.vc[self.w.gid]

    def _rec(self, op: str, mask) -> int:
        return self.m.record(
            op, self.w, mask, self.w.phase, self.m.kernel.locations.get(self.w.stmt, "?")
        )

    # -- statements -------------------------------------------------------------------------
    def run(self) -> Generator:
        yield from self.exec(self.m.kernel.body, self.w.mask)

    def exec(self, s: Stmt, mask: np.ndarray) -> Generator:
        w = self.w
        w.stmt = s if not isinstance(s, (SeqStmt, PhaseStmt, DeclBuffer)) else w.stmt
        if isinstance(s, SeqStmt):
            for x in s.stmts:
                yield from self.exec(x, mask)
        elif isinstance(s, ExprStmt):
            w.stmt = s
            e = s.expr
            yield from self.prefetch((e,), mask, top=e)
            if isinstance(e, Call):
                result = self.invoke(e, mask)
                if inspect.isgenerator(result):
                    yield from result
                if self.preempt:
                    yield None
            else:
                self.eval(e, mask)
        elif isinstance(s, Store):
            w.stmt = s
            yield from self.prefetch((s.index, s.value), mask)
            self.store(s, mask)
        elif isinstance(s, LetStmt):
            w.stmt = s
            yield from self.prefetch((s.value,), mask)
            value = convert(self.eval(s.value, mask), s.var.dtype)
            prev = self.env.get(s.var.name)
            self.env[s.var.name] = (
                value if prev is None or mask.all() else np.where(mask, value, prev)
            )
        elif isinstance(s, IfThenElse):
            w.stmt = s
            yield from self.prefetch((s.cond,), mask)
            cond = self.eval(s.cond, mask).astype(bool)
            then = mask & cond
            if then.any():
                yield from self.exec(s.then, then)
            other = mask & ~cond
            if s.else_ is not None and other.any():
                yield from self.exec(s.else_, other)
        elif isinstance(s, For):
            w.stmt = s
            yield from self.prefetch((s.start, s.extent), mask)
            start = self.eval(s.start, mask).astype(np.int64)
            extent = self.eval(s.extent, mask).astype(np.int64)
            trips = int(extent[mask].max()) if mask.any() else 0
            t = numpy_type(s.var.dtype)
            for i in range(trips):
                live = mask & (i < extent)
                if not live.any():
                    break
                self.env[s.var.name] = (start + i).astype(t)
                yield from self.exec(s.body, live)
        elif isinstance(s, DeclBuffer):
            var = s.buffer
            if var.scope == "local":
                n = int(np.prod(var.shape))
                w.regs[var] = (np.zeros((LANES, n), numpy_type(var.dtype)), Shadow(n))
        elif isinstance(s, PhaseStmt):
            outer = w.phase
            w.phase = s.name
            try:
                yield from self.exec(s.body, mask)
            finally:
                w.phase = outer
        elif isinstance(s, Comment):
            pass
        else:
            raise SimError(f"no semantics for statement {type(s).__name__}")


def _byte_range(offs: np.ndarray, size: int) -> str:
    if offs.size == 0:
        return ""
    return f"bytes {int(offs.min())}..{int(offs.max()) + size - 1}"
