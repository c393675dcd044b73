"""``build(fn)``: run a kernel function under a builder and return its IR.

The :class:`KernelBuilder` is the pools' emitter: a pool created inside the
function declares its shared buffers through the builder and, for TMEM, emits
the ``tcgen05`` alloc / dealloc protocol of :mod:`tilemem.ir.intrinsics`.
tilemem errors raised inside the function keep their class, with the user's file and
line added to the message; other exceptions come back as :class:`BuildError`.
"""

from __future__ import annotations

import inspect
import math
import os
import traceback
from collections.abc import Callable

from ..errors import PoolStateError, TilememError
from ..plan.target import get_target
from ..pool.emit import emitting
from ..validate import check_shape
from .builder import (
    BufferSpec,
    Builder,
    BuildError,
    GlobalBuffer,
    ScalarSpec,
    TensorMapSpec,
    c_name,
)
from .intrinsics import tmem_alloc_protocol, tmem_dealloc_protocol
from .nodes import INT32, BufferVar, IRError, Kernel, Param, TensorMapVar, Var

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class KernelBuilder(Builder):
    """A :class:`Builder` that also emits the TMEM protocol: the full pools' emitter."""

    def tmem_commit(self, pool) -> None:
        tmem_alloc_protocol(pool)

    def tmem_dealloc(self, pool) -> None:
        tmem_dealloc_protocol(pool)


def _dims(value, what: str) -> tuple:
    value = check_shape(value, what, error=IRError)
    if len(value) > 3:
        raise IRError(f"{what} must be 1 to 3 positive integers, got {value!r}")
    return value + (1,) * (3 - len(value))


def _user_frame(exc: BaseException):
    frames = traceback.extract_tb(exc.__traceback__)
    for fs in reversed(frames):
        if (
            not os.path.abspath(fs.filename).startswith(_PACKAGE_DIR)
            and "contextlib" not in fs.filename
        ):
            return fs
    return None


def _parameters(fn: Callable):
    """The function's parameters with annotations evaluated (``from __future__ import annotations``
    turns them into strings; closure variables are visible too)."""
    params = inspect.signature(fn).parameters
    if not any(isinstance(p.annotation, str) for p in params.values()):
        return params
    scope = dict(fn.__globals__)
    if fn.__closure__:
        scope.update(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__)))
    return {
        name: p.replace(annotation=eval(p.annotation, scope))
        if isinstance(p.annotation, str)
        else p
        for name, p in params.items()
    }


def build(fn: Callable, *, target, grid, block, cluster=None, name: str | None = None) -> Kernel:
    """Run ``fn`` under a builder and return its IR :class:`Kernel`."""
    target = get_target(target)
    block = _dims(block, "block")
    if math.prod(block) > target.max_threads_per_block:
        raise IRError(
            f"block {block} has {math.prod(block)} threads; {target.name} allows at most "
            f"{target.max_threads_per_block} per block"
        )
    builder = KernelBuilder(
        name or fn.__name__,
        target,
        _dims(grid, "grid"),
        block,
        _dims(cluster, "cluster") if cluster is not None else None,
    )
    args: list[GlobalBuffer | Var | TensorMapVar] = []
    symbols: dict[str, Var] = {}
    hints = _parameters(fn)
    for pname, param in hints.items():
        spec = param.annotation
        if isinstance(spec, BufferSpec):
            shape = []
            for dim in spec.shape:
                if isinstance(dim, str):
                    if dim not in symbols:
                        symbols[dim] = Var(c_name(dim), INT32)
                    shape.append(symbols[dim])
                else:
                    shape.append(dim)
            var = BufferVar(builder.fresh(pname), spec.dtype, "global", tuple(shape))
            builder.params.append(Param(var.name, "buffer", var))
            args.append(GlobalBuffer(var, tuple(shape)))
        elif isinstance(spec, ScalarSpec):
            scalar = Var(builder.fresh(pname), spec.dtype)
            builder.params.append(Param(scalar.name, "scalar", scalar))
            args.append(scalar)
        elif spec is TensorMapSpec or isinstance(spec, TensorMapSpec):
            tmap = TensorMapVar(builder.fresh(pname))
            builder.params.append(Param(tmap.name, "tensormap", tmap))
            args.append(tmap)
        else:
            raise BuildError(
                f"parameter {pname!r} of kernel {builder.name!r} needs an annotation: "
                "T.Buffer(shape, dtype), a scalar type such as T.int32, or T.TensorMap"
            )
    for sym in symbols.values():
        builder.names.add(sym.name)
        builder.params.append(Param(sym.name, "scalar", sym))
    try:
        with emitting(builder):
            fn(*args)
    except TilememError as exc:
        # keeps its class (docs/DESIGN.md#errors); the user's line joins the message
        where = _user_frame(exc)
        if where is not None and not isinstance(exc, BuildError):
            exc.args = (
                f"{where.filename}:{where.lineno} in {where.name}: {exc}\n    {where.line}",
            )
        raise
    except Exception as exc:  # a mistake in the kernel's own Python code
        where = _user_frame(exc)
        if where is None:
            raise
        raise BuildError(
            f"{where.filename}:{where.lineno} in {where.name}: {type(exc).__name__}: {exc}\n    "
            f"{where.line}"
        ) from exc
    _check_pools_finished(builder)
    return builder.kernel()


def _check_pools_finished(builder: Builder) -> None:
    """Pools left half-done would build a broken kernel: an uncommitted SMEM region launches
    with 0 bytes of dynamic shared memory; TMEM must be freed before the kernel exits (PTX
    ISA 9.0, tcgen05.dealloc)."""
    for smem in builder.smem_pools:
        if smem.ptr is None and smem.buffers and not smem.committed:
            raise PoolStateError(
                f"kernel {builder.name!r}: SMEM pool {smem.name!r} holds {len(smem.buffers)} "
                f"buffer(s) ({smem.max_offset} bytes) but was never committed, so the kernel "
                f"would launch with 0 bytes of dynamic shared memory: call {smem.name}.commit()"
            )
    for tmem in builder.tmem_pools:
        if not tmem.committed and tmem.buffers:
            raise PoolStateError(
                f"kernel {builder.name!r}: TMEM pool {tmem.name!r} holds buffers but was never "
                "committed, so no tcgen05.alloc runs: call commit() before using them"
            )
        if tmem.committed and not tmem.deallocated:
            raise PoolStateError(
                f"kernel {builder.name!r}: TMEM pool {tmem.name!r} is committed but never "
                f"deallocated; every column must be freed before the kernel exits: call "
                "dealloc() once the last tcgen05 access is done"
            )
