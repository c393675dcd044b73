"""The builder: Python calls inside a ``@T.kernel`` function append IR statements.

Frames (``T.If``/``T.Then``/``T.Else``, loops) are context managers or
generators that collect statements; the Builder is also the pools' emitter,
so ``SMEMPool``/``TMEMPool`` calls inside a kernel declare their buffers and
emit the TMEM alloc/dealloc protocol here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType

from ..dtype import DataType, as_dtype
from ..errors import BuildError as BuildError  # defined with every error; re-exported here
from ..plan.target import Target
from ..pool import SMEM, Buffer
from ..pool.emit import current_emitter
from ..validate import check_name
from .index import layout_index
from .nodes import (
    INT32,
    BufferVar,
    Cast,
    Comment,
    DeclBuffer,
    Expr,
    ExprStmt,
    For,
    IfThenElse,
    IRError,
    Kernel,
    LetStmt,
    Load,
    Param,
    PhaseStmt,
    Select,
    SeqStmt,
    Stmt,
    Store,
    Var,
    binop,
    check_byte_float_cast,
    convert,
)


def current() -> Builder:
    """The kernel being built: the pools' active emitter (one context variable for both)."""
    builder = current_emitter()
    if not isinstance(builder, Builder):
        raise IRError("this call emits kernel code: use it inside a @T.kernel function")
    return builder


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_MACHINERY = tuple(
    os.path.join(_PACKAGE, part) for part in ("ir" + os.sep, "pool" + os.sep, "lang.py")
)


def source_line() -> str:
    """``file:line`` of the code that asked for the current statement: the first caller
    outside the builder, the intrinsics, the pools and ``contextlib`` (a built-in kernel's
    own line in ``kernels.py``, a user's line in theirs)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith(_MACHINERY) and "contextlib" not in name:
            return f"{name}:{frame.f_lineno}"
        frame = frame.f_back
    return "?"


def c_name(name: str) -> str:
    text = re.sub(r"\W", "_", name)
    return text if text and not text[0].isdigit() else f"_{text}"


# -- parameter annotations ------------------------------------------------------------


@dataclass(frozen=True)
class BufferSpec:
    """``T.Buffer(shape, dtype)``: a global-memory tensor parameter (row-major)."""

    shape: tuple
    dtype: DataType


@dataclass(frozen=True)
class ScalarSpec:
    dtype: DataType


class TensorMapSpec:
    """``T.TensorMap``: a TMA descriptor parameter, passed by value as
    ``const __grid_constant__``."""


class GlobalBuffer:
    """A global tensor inside the kernel: ``A[i, j]`` loads/stores row-major."""

    def __init__(self, var: BufferVar, shape: tuple):
        self.var, self.shape = var, shape
        self.dtype = var.dtype
        self.name = var.name

    def flat_index(self, index) -> Expr:
        """The row-major element offset of ``index`` (one int or expression per dimension)."""
        index = index if isinstance(index, tuple) else (index,)
        if len(index) != len(self.shape):
            raise IRError(
                f"{self.name} has {len(self.shape)} dimensions, indexed with {len(index)}"
            )
        flat: Expr = convert(0)
        for i, extent in zip(index, self.shape):
            flat = binop("+", binop("*", flat, extent), i)
        return flat

    def __getitem__(self, index) -> Expr:
        return Load(self.var, self.flat_index(index), self.dtype)

    def __setitem__(self, index, value) -> None:
        current().emit(Store(self.var, self.flat_index(index), _as_value(value, self.dtype)))


class LocalArray(GlobalBuffer):
    """A per-thread register array (``T.alloc_local``); indexed like a global buffer."""


def _as_value(value, dtype: DataType) -> Expr:
    value = convert(value, dtype)
    if value.dtype == dtype:
        return value
    check_byte_float_cast(value, dtype)
    return Cast(value, dtype)


# -- the builder ------------------------------------------------------------------------


class Builder:
    """Collects one kernel's statements and declares its pools' shared buffers.

    :class:`tilemem.ir.build.KernelBuilder` adds the TMEM protocol, which needs the
    intrinsics, and so completes the pools' emitter protocol.
    """

    def __init__(self, name: str, target: Target, grid, block, cluster):
        # the kernel's C++ name (extern "C" __global__): refused here, not by NVRTC
        self.name, self.target = check_name(name, "kernel name", error=IRError), target
        self.grid, self.block, self.cluster = grid, block, cluster
        self.threads = math.prod(block)  # pools read it for the TMEM residency rule
        self.frames: list[list[Stmt]] = [[]]
        self.params: list[Param] = []
        self.region: str | None = None
        self.dyn_smem_bytes = 0
        self.smem_vars: dict[Buffer, BufferVar] = {}  # Buffers hash by identity
        self.tmem_bases: dict[object, Var] = {}  # TMEMPool -> its base, once read
        self.names: set[str] = set()
        self.tmem_pools: list = []
        self.smem_pools: list = []
        self.if_stack: list[If] = []  # open T.If frames, innermost last
        self.locations: dict[Stmt, str] = {}  # statement -> the user's file:line
        self.tmem_buffers: list[tuple] = []  # (pool, Buffer) in allocation order

    # statements
    def emit(self, stmt: Stmt) -> None:
        self.frames[-1].append(stmt)
        self.locations[stmt] = source_line()

    @contextlib.contextmanager
    def frame(self) -> Iterator[list[Stmt]]:
        self.frames.append([])
        try:
            yield self.frames[-1]
        finally:
            self.frames.pop()

    def fresh(self, stem: str) -> str:
        stem = c_name(stem)
        name, n = stem, 0
        while name in self.names:
            n += 1
            name = f"{stem}_{n}"
        self.names.add(name)
        return name

    # -- PoolEmitter ----------------------------------------------------------------
    def smem_pool(self, pool) -> None:
        self.smem_pools.append(pool)
        if pool.ptr is None:
            if self.region is not None:
                raise IRError(
                    "a kernel has one dynamic shared-memory region and it already has an owning "
                    "SMEMPool; pass ptr= to carve a second pool out of an existing buffer"
                )
            self.region = "smem"
            self.names.add("smem")

    def smem_buffer(self, pool, buf: Buffer) -> None:
        if pool.ptr is None:
            region, offset = self.region, buf.byte_offset
        elif isinstance(pool.ptr, Buffer) and pool.ptr in self.smem_vars:
            outer = self.smem_vars[pool.ptr]  # a pool carved out of an existing buffer
            assert outer.byte_offset is not None and buf.byte_offset is not None
            region, offset = outer.region, outer.byte_offset + buf.byte_offset
        else:
            raise IRError(
                f"SMEMPool(ptr=...) takes a shared-memory Buffer of this kernel, got {pool.ptr!r}"
            )
        var = BufferVar(
            self.fresh(buf.name),
            buf.dtype,
            SMEM,
            buf.shape,
            offset,
            region,
            nbytes=buf.nbytes,
            live=pool.live_phases(buf),
        )
        self.smem_vars[buf] = var
        comment = f"{buf.layout_name}, {buf.nbytes} bytes, align {buf.align}"
        self.emit(DeclBuffer(var, comment))

    def smem_commit(self, pool, size: int) -> None:
        if pool.ptr is None:
            self.dyn_smem_bytes = size
            self.emit(Comment(f"shared memory committed: {size} bytes of dynamic shared memory"))

    def tmem_pool(self, pool) -> None:
        self.target.require("tcgen05", "TMEMPool (tcgen05.alloc)")
        self.tmem_pools.append(pool)

    def tmem_buffer(self, pool, buf: Buffer) -> None:
        # addressed through the base read from the slot; kept for the simulator's reports
        self.tmem_buffers.append((pool, buf))

    def load(self, buf: Buffer, index: tuple) -> Expr:
        var = self._smem_var(buf)
        return Load(var, self._element(buf, index), buf.dtype)

    def store(self, buf: Buffer, index: tuple, value) -> None:
        var = self._smem_var(buf)
        self.emit(Store(var, self._element(buf, index), _as_value(value, buf.dtype)))

    def is_current(self) -> bool:
        """Whether this kernel is the one being built now (a pool's buffers emit only into it)."""
        return current_emitter() is self

    def tmem_stage(self, stages, stage, start: int, stop: int):
        """A stage picked by a run-time index: stage 0's view whose column offset becomes
        ``col_offset + stage * (stride * bits / 32)``; every stage must be that shift of it."""
        stage = convert(stage)
        if stage.dtype.name not in ("int32", "int64", "uint32"):
            raise IRError(f"a TMEM stage index must be an integer expression, got {stage!r}")
        first = stages.view(0, start, stop)
        step_bits = stages.step * stages.buf.dtype.bits
        shifted = all(
            stages.view(s, start, stop).layout == first.layout for s in range(stages.stages)
        )
        if step_bits % 32 or not shifted:
            raise IRError(
                f"stages of {stages.buf.name!r} are not whole-column shifts of each other (stride "
                f"{stages.step} x {stages.buf.dtype.bits} bits, or the layout moves between lane "
                "blocks), so a run-time stage index has no column arithmetic: use a constant index"
            )
        col = binop("+", convert(first.col_offset), binop("*", stage, step_bits // 32))
        return dataclasses.replace(first, name=f"{stages.buf.name}[stage]", col_offset=col)

    def _smem_var(self, buf: Buffer) -> BufferVar:
        if buf not in self.smem_vars:
            raise IRError(f"buffer {buf.name!r} does not belong to this kernel's pools")
        return self.smem_vars[buf]

    def _element(self, buf: Buffer, index: tuple) -> Expr:
        if buf.dtype.bits < 8:
            raise IRError(
                f"{buf.name} holds {buf.dtype.name}, {buf.dtype.bits}-bit elements packed into "
                "bytes; "
                "load and store them through a uint8 view of the same bytes"
            )
        return layout_index(buf.layout, index)["m"]

    # -- finish --------------------------------------------------------------------
    def kernel(self) -> Kernel:
        (body,) = self.frames
        return Kernel(
            name=self.name,
            params=tuple(self.params),
            body=SeqStmt(tuple(body)),
            target=self.target.name,
            grid=self.grid,
            block=self.block,
            cluster=self.cluster,
            dyn_smem_bytes=self.dyn_smem_bytes,
            regions=(self.region,) if self.region else (),
            locations=self.locations,
            phases=self.phases(),
            tmem_buffers=tuple(
                (buf.name, buf.col_offset, buf.cols, pool.live_phases(buf))
                for pool, buf in self.tmem_buffers
                if buf.placed
            ),
            pools=(*self.smem_pools, *self.tmem_pools),
        )

    def phases(self) -> tuple[str, ...]:
        """Every phase name of the kernel's pools, in the order the pools list them."""
        out: list[str] = []
        for pool in [*self.smem_pools, *self.tmem_pools]:
            out += [p for p in pool.phases or () if p not in out]
        return tuple(out)


# -- frames --------------------------------------------------------------------------


class If:
    """``with T.If(cond):`` then ``with T.Then():`` / ``with T.Else():`` (or statements
    directly)."""

    def __init__(self, cond):
        self.cond = convert(cond)
        self.then: list[Stmt] | None = None
        self.else_: list[Stmt] | None = None
        self.direct: list[Stmt] = []

    def __enter__(self) -> If:
        builder = current()
        builder.frames.append(self.direct)
        builder.if_stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        builder = current()
        builder.frames.pop()
        builder.if_stack.pop()
        if exc[0] is not None:
            return
        if self.direct and self.then is not None:
            raise IRError("put every statement of a T.If with a T.Then inside T.Then or T.Else")
        then = self.then if self.then is not None else self.direct
        builder.emit(
            IfThenElse(
                self.cond,
                SeqStmt(tuple(then)),
                SeqStmt(tuple(self.else_)) if self.else_ is not None else None,
            )
        )


@contextlib.contextmanager
def _branch(kind: str):
    builder = current()
    if not builder.if_stack or builder.frames[-1] is not builder.if_stack[-1].direct:
        raise IRError(f"T.{kind}() must sit directly inside `with T.If(cond):`")
    frame_if = builder.if_stack[-1]
    if getattr(frame_if, kind.lower() if kind != "Else" else "else_") is not None:
        raise IRError(f"T.If already has a T.{kind}")
    with builder.frame() as body:
        yield
    if kind == "Then":
        frame_if.then = body
    else:
        if frame_if.then is None:
            raise IRError("T.Else() needs a T.Then() before it")
        frame_if.else_ = body


def Then():
    return _branch("Then")


def Else():
    return _branch("Else")


def _loop(kind: str, start, stop, name: str):
    if stop is None:
        start, stop = 0, start
    builder = current()
    var = Var(builder.fresh(name), INT32)
    start = convert(start)
    extent = binop("-", stop, start)
    with builder.frame() as body:
        yield var
    builder.emit(For(var, start, extent, kind, SeqStmt(tuple(body))))


def serial(start, stop=None, *, name: str = "i"):
    """``for i in T.serial(n):`` — a run-time loop (the Python body runs once, building it)."""
    return _loop("serial", start, stop, name)


def unroll(start, stop=None, *, name: str = "i"):
    """Like :func:`serial`, with ``#pragma unroll``."""
    return _loop("unroll", start, stop, name)


# -- small statements and expressions -------------------------------------------------


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """``with T.phase("epilogue"):`` marks the statements inside as running in that phase of
    the kernel's pools; the simulator reports an access to a buffer not live in it."""
    builder = current()
    known = builder.phases()
    if name not in known:
        raise IRError(
            f"T.phase({name!r}): the kernel's pools have phases {list(known)}; name one of them "
            "(or give a pool phases=(...) first)"
        )
    with builder.frame() as body:
        yield
    builder.emit(PhaseStmt(name, SeqStmt(tuple(body))))


def evaluate(expr) -> None:
    current().emit(ExprStmt(convert(expr)))


def let(name: str, value, dtype=None) -> Var:
    value = convert(value)
    dtype = as_dtype(dtype) if dtype is not None else value.dtype
    var = Var(current().fresh(name), dtype)
    current().emit(LetStmt(var, value if value.dtype == dtype else Cast(value, dtype)))
    return var


def alloc_local(shape, dtype="float32", name: str = "reg") -> LocalArray:
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    var = BufferVar(current().fresh(name), as_dtype(dtype), "local", shape)
    current().emit(DeclBuffer(var))
    return LocalArray(var, shape)


def cast(value, dtype) -> Expr:
    value, dtype = convert(value), as_dtype(dtype)
    check_byte_float_cast(value, dtype)
    return Cast(value, dtype)


def select(cond, a, b) -> Expr:
    a, b = convert(a), convert(b)
    return Select(convert(cond), a, b, a.dtype)


def all_of(*conds) -> Expr:
    out = convert(conds[0])
    for c in conds[1:]:
        out = binop("&&", out, c)
    return out


def any_of(*conds) -> Expr:
    out = convert(conds[0])
    for c in conds[1:]:
        out = binop("||", out, c)
    return out


def min_(a, b) -> Expr:
    return binop("min", a, b)


def max_(a, b) -> Expr:
    return binop("max", a, b)
