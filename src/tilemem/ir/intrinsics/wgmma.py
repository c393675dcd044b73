"""Hopper warpgroup MMA (PTX ISA 9.0: "wgmma.mma_async", "wgmma.fence", "wgmma.commit_group",
"wgmma.wait_group").

Simulation: ``mma_async`` is an asynchronous operation of the issuing warp on the "wgmma"
queue. When it completes (no later than the ``wait_group`` that orders it) it decodes the
two descriptors the kernel computed, reads A and B from shared memory through them, and
adds this warp's 16 rows of A @ B to its accumulator registers in the PTX fragment layout
(fp32 accumulation, int32 for s8/u8). Each of the warpgroup's four warps does its own rows.
"""

from __future__ import annotations

import numpy as np

from ...dtype import as_dtype
from ...layout.decode import decode_wgmma_descriptor, operand_values
from ...layout.fragments import wgmma_accumulator
from ...layout.operand import wgmma_descriptor_high
from ...pool import Buffer
from ..builder import LocalArray, current
from ..nodes import Expr, IRError, convert
from .descriptor import shared_descriptor
from .registry import asm, expose, intrinsic, pending_groups

# wgmma input types (PTX ISA 9.0, "wgmma.mma_async"): PTX type, K of one instruction,
# accumulator type; only 16-bit inputs may be read MN-major (imm-trans-a/b)
_WGMMA_TYPES = {
    "float16": ("f16", 16, "float32"),
    "bfloat16": ("bf16", 16, "float32"),
    "float32": ("tf32", 8, "float32"),  # tf32 operands are stored as float32
    "float8_e4m3fn": ("e4m3", 32, "float32"),
    "float8_e5m2": ("e5m2", 32, "float32"),
    "int8": ("s8", 32, "int32"),
    "uint8": ("u8", 32, "int32"),
}
_WGMMA_N = set(range(8, 257, 8))
_WGMMA_N_INT = {8, 16, 24, *range(32, 257, 16)}  # integer wgmma


@expose("ptx.wgmma.desc")
def wgmma_desc(buf: Buffer, *coords, major: str = "K") -> Expr:
    """wgmma shared-memory descriptor of ``buf`` starting at ``coords`` (stage..., row, col).

    ``major="MN"`` reads a (..., K, MN) tile MN-major; pass the same major to
    ``T.ptx.wgmma.mma_async`` (its transpose bit).
    """
    current().target.require("wgmma", "wgmma descriptor")
    return shared_descriptor(buf, coords, wgmma_descriptor_high, major)


def _sim_fence(ctx, call) -> None:
    """``wgmma.fence`` orders the warp's register writes before the next wgmma reads them; in
    the simulator register accesses are ordered by program order already."""


@intrinsic("ptx.wgmma.fence", feature="wgmma", ptx="wgmma.fence.sync.aligned;", sim=_sim_fence)
def wgmma_fence():
    return (), ()


@intrinsic(
    "ptx.wgmma.commit_group",
    feature="wgmma",
    ptx="wgmma.commit_group.sync.aligned;",
    sim=lambda ctx, call: ctx.commit_group("wgmma"),
)
def wgmma_commit_group():
    return (), ()


@intrinsic(
    "ptx.wgmma.wait_group",
    feature="wgmma",
    lower=lambda call, gen: asm(f"wgmma.wait_group.sync.aligned {call.attr('n')};"),
    sim=lambda ctx, call: ctx.wait_group("wgmma", call.attr("n")),
)
def wgmma_wait_group(n: int = 0):
    return (), (("n", pending_groups(n, "wgmma.wait_group")),)


def _lower_mma_async(call, gen) -> str:
    acc, a_desc, b_desc, scale_d = call.args
    n, a_type, b_type = call.attr("n"), call.attr("dtype"), call.attr("b_dtype")
    (a_ptx, k, acc_type), b_ptx = _WGMMA_TYPES[a_type], _WGMMA_TYPES[b_type][0]
    regs = n // 2
    dlist = ", ".join(f"%{i}" for i in range(regs))
    d_ptx = "s32" if acc_type == "int32" else "f32"
    if acc_type == "int32":  # integer: no input scaling, no transpose
        tail = ""
    elif k == 16:  # imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b
        tail = f", 1, 1, {call.attr('trans_a')}, {call.attr('trans_b')}"
    else:
        tail = ", 1, 1"
    text = (
        "{\\n.reg .pred p;\\n"
        f"setp.ne.b32 p, %{regs + 2}, 0;\\n"
        f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.{d_ptx}.{a_ptx}.{b_ptx} {{{dlist}}}, "
        f"%{regs}, %{regs + 1}, p{tail};\\n}}"
    )
    constraint = "+r" if acc_type == "int32" else "+f"
    outs = ", ".join(f'"{constraint}"({acc.name}[{i}])' for i in range(regs))
    ins = (
        f'"l"((uint64_t)({gen.expr(a_desc)})), "l"((uint64_t)({gen.expr(b_desc)})), '
        f'"r"((int32_t)({gen.expr(scale_d)}))'
    )
    return asm(text, outs, ins)


_FORMATS = {"float32": "tf32"}  # tf32 operands are float32 words read without their low bits


def _sim_mma_async(ctx, call) -> None:
    """``D[16 q .. 16 q + 15, :] (+)= A[16 q .., :] @ B^T`` for warp ``q = warp % 4`` of the
    warpgroup: A is 64 x K, B is N x K (K-major, or MN-major with the transpose bits)."""
    acc = call.args[0]
    a_desc, b_desc = ctx.uniform(1), ctx.uniform(2)
    add = ctx.uniform(3) != 0  # scale-d: 0 overwrites the accumulators
    n, a_type, b_type = call.attr("n"), call.attr("dtype"), call.attr("b_dtype")
    _, k, acc_type = _WGMMA_TYPES[a_type]
    majors = ("MN" if call.attr("trans_a") else "K", "MN" if call.attr("trans_b") else "K")
    quarter = ctx.warp % 4
    rows, cols = wgmma_accumulator(n)
    rows = rows[32 * quarter : 32 * quarter + 32] - 16 * quarter
    cols = cols[32 * quarter : 32 * quarter + 32]

    def operand(actx, desc: int, mn: int, dtype: str, major: str) -> np.ndarray:
        fmt, bits = _FORMATS.get(dtype, dtype), as_dtype(dtype).bits
        d = decode_wgmma_descriptor(desc)
        if major == "K":
            return operand_values(actx.smem_read, d, mn, k, fmt, bits, "K")
        return operand_values(actx.smem_read, d, k, mn, fmt, bits, "MN").T

    def complete(actx) -> None:
        a = operand(actx, a_desc, 64, a_type, majors[0])[16 * quarter : 16 * quarter + 16]
        b = operand(actx, b_desc, n, b_type, majors[1])
        if acc_type == "int32":
            prod = a.astype(np.int64) @ b.astype(np.int64).T
            old = actx.regs_read(acc).astype(np.int64) if add else 0
            actx.regs_write(acc, (old + prod[rows, cols]).astype(np.int32))
        else:
            prod = a.astype(np.float64) @ b.astype(np.float64).T
            old = actx.regs_read(acc).astype(np.float64) if add else 0.0
            actx.regs_write(acc, (old + prod[rows, cols]).astype(np.float32))

    count = int(np.prod(acc.shape))  # accessing them before wgmma.wait_group is a race
    ctx.issue("wgmma", complete, f"wgmma.mma_async m64n{n}k{k}", writes=((acc, count),))


@intrinsic(
    "ptx.wgmma.mma_async",
    feature="wgmma",
    instruction="wgmma.mma_async",
    lower=_lower_mma_async,
    sim=_sim_mma_async,
)
def wgmma_mma_async(
    acc: LocalArray,
    a_desc,
    b_desc,
    *,
    n: int,
    dtype="bfloat16",
    b_dtype=None,
    scale_d=1,
    a_major: str = "K",
    b_major: str = "K",
):
    """``wgmma.mma_async.sync.aligned.m64n{n}k{K}.{d}.{a}.{b}``: A and B in shared memory.

    ``dtype`` (and ``b_dtype``, default the same) is f16/bf16 (K=16), float32 read
    as tf32 (K=8), e4m3/e5m2 (K=32) or s8/u8 (K=32, int32 accumulators). ``acc``
    is the thread's ``n/2`` accumulator registers (``T.alloc_local``, float32 or
    int32). ``a_major``/``b_major="MN"`` set the transpose bits (16-bit types only)
    and must match the descriptors' majors.
    """
    a_name = as_dtype(dtype).name
    b_name = as_dtype(b_dtype if b_dtype is not None else dtype).name
    for name in (a_name, b_name):
        if name not in _WGMMA_TYPES:
            raise IRError(f"wgmma inputs are {', '.join(_WGMMA_TYPES)}; got {name}")
    a_ptx, k, acc_type = _WGMMA_TYPES[a_name]
    _, b_k, b_acc = _WGMMA_TYPES[b_name]
    if (k, acc_type) != (b_k, b_acc) or (k != 32 and a_name != b_name):
        raise IRError(f"wgmma cannot multiply {a_name} by {b_name}")
    trans = []
    for major, which in ((a_major, "a_major"), (b_major, "b_major")):
        if major not in ("K", "MN"):
            raise IRError(f"{which} must be 'K' or 'MN', got {major!r}")
        if major == "MN" and k != 16:
            raise IRError(f"wgmma reads {a_name} K-major only; MN-major needs f16/bf16 inputs")
        trans.append(int(major == "MN"))
    ns = _WGMMA_N_INT if acc_type == "int32" else _WGMMA_N
    if n not in ns:
        raise IRError(f"wgmma m64nNk{k} {a_ptx}: N={n} is not one of {sorted(ns)}")
    if not isinstance(acc, LocalArray) or acc.dtype.name != acc_type or acc.shape != (n // 2,):
        raise IRError(
            f"wgmma m64n{n}k{k} accumulates into T.alloc_local({n // 2}, '{acc_type}'), got "
            f"{getattr(acc, 'shape', acc)!r}"
        )
    args = (acc.var, convert(a_desc), convert(b_desc), convert(scale_d))
    attrs = (("n", n), ("dtype", a_name), ("b_dtype", b_name))
    return args, (*attrs, ("trans_a", trans[0]), ("trans_b", trans[1]))
