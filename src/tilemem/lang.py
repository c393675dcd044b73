"""``T``: the kernel language. ``from tilemem import T``.

@T.kernel(target="sm_90a", grid=1, block=128)
def scale(x: T.Buffer(("n",), "float32"), factor: T.float32):
    i = T.thread_id()
    with T.If(i < x.shape[0]):
        x[i] = x[i] * factor
"""

from __future__ import annotations

from types import SimpleNamespace

from .cuda.kernel import KernelProgram
from .dtype import DataType, as_dtype
from .ir import builder as _b
from .ir import intrinsics as _ix
from .ir.build import build as _build

# pools: the same classes as plan-only use; inside a kernel they emit
from .pool import SMEMPool, TMEMPool, TMEMStages

If, Then, Else = _b.If, _b.Then, _b.Else
serial, unroll = _b.serial, _b.unroll
evaluate, let, cast, select = _b.evaluate, _b.let, _b.cast, _b.select
all_of, any_of, min, max = _b.all_of, _b.any_of, _b.min_, _b.max_
alloc_local = _b.alloc_local
phase = _b.phase
thread_id, block_id, warp_id, lane_id = _ix.thread_id, _ix.block_id, _ix.warp_id, _ix.lane_id
grid_dim = _ix.grid_dim
smem_addr, tmem_base, tmem_addr = _ix.smem_addr, _ix.tmem_base, _ix.tmem_addr
pack_bf16x2 = _ix.pack_bf16x2
TensorMap = _b.TensorMapSpec
BuildError = _b.BuildError


def Buffer(shape, dtype="float32") -> _b.BufferSpec:
    """Annotation of a global tensor parameter; string dims (``"M"``) become int32 parameters."""
    shape = (shape,) if isinstance(shape, (int, str)) else tuple(shape)
    return _b.BufferSpec(shape, as_dtype(dtype))


def _scalar(name: str) -> _b.ScalarSpec:
    return _b.ScalarSpec(DataType(name))


int32, uint32, int64, uint64 = (
    _scalar("int32"),
    _scalar("uint32"),
    _scalar("int64"),
    _scalar("uint64"),
)
float32 = _scalar("float32")


def kernel(target: str, grid=1, block=128, cluster=None, name: str | None = None):
    """Decorator: build the function into a kernel for ``target``; returns a KernelProgram."""

    def wrap(fn):
        return KernelProgram(
            _build(fn, target=target, grid=grid, block=block, cluster=cluster, name=name)
        )

    return wrap


def _namespace(prefix: str) -> SimpleNamespace:
    """``T.<prefix>``: every function declared under that path in the intrinsic registry."""
    root = SimpleNamespace()
    for path, fn in sorted(_ix.LANGUAGE.items()):
        head, _, rest = path.partition(".")
        if head != prefix:
            continue
        *groups, name = rest.split(".")
        node = root
        for group in groups:
            if not hasattr(node, group):
                setattr(node, group, SimpleNamespace())
            node = getattr(node, group)
        setattr(node, name, fn)
    return root


cuda = _namespace("cuda")
ptx = _namespace("ptx")

__all__ = [
    "Buffer",
    "BuildError",
    "Else",
    "If",
    "SMEMPool",
    "TMEMPool",
    "TMEMStages",
    "TensorMap",
    "Then",
    "all_of",
    "alloc_local",
    "any_of",
    "block_id",
    "cast",
    "cuda",
    "evaluate",
    "float32",
    "int32",
    "int64",
    "kernel",
    "lane_id",
    "let",
    "max",
    "min",
    "pack_bf16x2",
    "phase",
    "ptx",
    "select",
    "serial",
    "smem_addr",
    "thread_id",
    "tmem_addr",
    "tmem_base",
    "uint32",
    "uint64",
    "unroll",
    "warp_id",
]
