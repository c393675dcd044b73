"""Hopper warpgroup MMA (PTX ISA 9.0: "wgmma.mma_async", "wgmma.fence", "wgmma.commit_group",
"wgmma.wait_group")."""

from __future__ import annotations

from ...dtype import as_dtype
from ...layout.operand import wgmma_descriptor_high
from ...pool import Buffer
from ..builder import LocalArray, current
from ..nodes import Expr, IRError, convert
from .descriptor import shared_descriptor
from .registry import asm, expose, intrinsic

_WGMMA_N = set(range(8, 257, 8))


@expose("ptx.wgmma.desc")
def wgmma_desc(buf: Buffer, *coords) -> Expr:
    """wgmma shared-memory descriptor of ``buf`` starting at ``coords`` (stage..., row, k)."""
    current().require("wgmma", "wgmma descriptor")
    return shared_descriptor(buf, coords, wgmma_descriptor_high)


@intrinsic("ptx.wgmma.fence", feature="wgmma", ptx="wgmma.fence.sync.aligned;")
def wgmma_fence():
    return (), ()


@intrinsic("ptx.wgmma.commit_group", feature="wgmma", ptx="wgmma.commit_group.sync.aligned;")
def wgmma_commit_group():
    return (), ()


@intrinsic(
    "ptx.wgmma.wait_group",
    feature="wgmma",
    lower=lambda call, gen: asm(f"wgmma.wait_group.sync.aligned {call.attr('n')};"),
)
def wgmma_wait_group(n: int = 0):
    return (), (("n", int(n)),)


def _lower_mma_async(call, gen) -> str:
    acc, a_desc, b_desc, scale_d = call.args
    n, dtype = call.attr("n"), call.attr("dtype")
    ab = {"bfloat16": "bf16", "float16": "f16"}[dtype]
    regs = n // 2
    dlist = ", ".join(f"%{i}" for i in range(regs))
    text = (
        "{\\n.reg .pred p;\\n"
        f"setp.ne.b32 p, %{regs + 2}, 0;\\n"
        f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ab}.{ab} {{{dlist}}}, "
        f"%{regs}, %{regs + 1}, p, 1, 1, 0, 0;\\n}}"
    )
    outs = ", ".join(f'"+f"({acc.name}[{i}])' for i in range(regs))
    ins = (
        f'"l"((uint64_t)({gen.expr(a_desc)})), "l"((uint64_t)({gen.expr(b_desc)})), '
        f'"r"((int32_t)({gen.expr(scale_d)}))'
    )
    return asm(text, outs, ins)


@intrinsic(
    "ptx.wgmma.mma_async",
    feature="wgmma",
    instruction="wgmma.mma_async",
    lower=_lower_mma_async,
)
def wgmma_mma_async(acc: LocalArray, a_desc, b_desc, *, n: int, dtype="bfloat16", scale_d=1):
    """``wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{dtype}.{dtype}``: A and B in shared memory.

    ``acc`` is the thread's ``n/2`` float32 accumulator registers (``T.alloc_local``).
    """
    dtype = as_dtype(dtype)
    if dtype.name not in ("bfloat16", "float16"):
        raise IRError(f"wgmma_mma_async supports bfloat16/float16 inputs, got {dtype.name}")
    if n not in _WGMMA_N:
        raise IRError(f"wgmma m64nNk16: N must be a multiple of 8 in [8, 256], got {n}")
    if not isinstance(acc, LocalArray) or acc.dtype.name != "float32" or acc.shape != (n // 2,):
        raise IRError(
            f"wgmma m64n{n}k16 accumulates into T.alloc_local({n // 2}, 'float32'), got "
            f"{getattr(acc, 'shape', acc)!r}"
        )
    args = (acc.var, convert(a_desc), convert(b_desc), convert(scale_d))
    return args, (("n", n), ("dtype", dtype.name))
