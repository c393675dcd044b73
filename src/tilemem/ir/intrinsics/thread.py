"""Threads and the block: indices, barriers, warp election, shared-memory addresses.

PTX ISA 9.0: ``bar.sync``, ``elect.sync``; CUDA C++: ``__syncthreads``, ``__syncwarp``,
``__cvta_generic_to_shared``.
"""

from __future__ import annotations

import numpy as np

from ...dtype import float32_to_bits
from ...errors import SimError
from ...pool import SMEM, Buffer
from ..builder import current
from ..index import layout_index
from ..nodes import BOOL, INT32, UINT32, Const, Expr, IRError, binop, convert
from .registry import SimContext, asm, intrinsic


def _sim_thread_idx(ctx: SimContext, call):
    """threadIdx from the linear thread index: x fastest, then y, then z."""
    bx, by, _ = ctx.block_dim
    t = ctx.thread_ids
    return (t % bx, (t // bx) % by, t // (bx * by))[call.attr("axis")]


@intrinsic(
    "cuda.thread_idx",
    lower=lambda call, gen: f"(int)threadIdx.{'xyz'[call.attr('axis')]}",
    value=INT32,
    public=False,
    sim=_sim_thread_idx,
)
def _thread_idx(axis: int):
    return (), (("axis", axis),)


@intrinsic(
    "cuda.block_idx",
    lower=lambda call, gen: f"(int)blockIdx.{'xyz'[call.attr('axis')]}",
    value=INT32,
    public=False,
    sim=lambda ctx, call: ctx.cta[call.attr("axis")],
)
def _block_idx(axis: int):
    return (), (("axis", axis),)


@intrinsic(
    "cuda.grid_dim",
    lower=lambda call, gen: f"(int)gridDim.{'xyz'[call.attr('axis')]}",
    value=INT32,
    public=False,
    sim=lambda ctx, call: ctx.grid_dim[call.attr("axis")],
)
def _grid_dim(axis: int):
    return (), (("axis", axis),)


def thread_id(axis: int = 0) -> Expr:
    """``threadIdx.{x,y,z}``."""
    return _thread_idx(axis)


def block_id(axis: int = 0) -> Expr:
    """``blockIdx.{x,y,z}``."""
    return _block_idx(axis)


def grid_dim(axis: int = 0) -> Expr:
    """``gridDim.{x,y,z}``: blocks in the grid, the stride of a persistent tile loop."""
    return _grid_dim(axis)


def linear_thread_id() -> Expr:
    """``threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)``: warps are cut
    from this linear index (CUDA C++ Programming Guide, "Thread Hierarchy")."""
    bx, by, bz = current().block
    tid = thread_id(0)
    if bz > 1:
        tid = binop("+", tid, binop("*", bx * by, thread_id(2)))
    if by > 1:
        tid = binop("+", tid, binop("*", bx, thread_id(1)))
    return tid


def warp_id() -> Expr:
    """Warp index within the block: linear thread index / 32 (any block shape)."""
    return binop("//", linear_thread_id(), 32)


def lane_id() -> Expr:
    return binop("%", linear_thread_id(), 32)


def _sim_syncthreads(ctx: SimContext, call):
    """Every warp of the CTA arrives; each leaves once all have (barrier 0)."""
    yield from ctx.barrier(0, None)


@intrinsic("cuda.syncthreads", lower=lambda call, gen: "__syncthreads()", sim=_sim_syncthreads)
def syncthreads():
    return (), ()


@intrinsic(
    "cuda.syncwarp",
    lower=lambda call, gen: f"__syncwarp({gen.expr(call.args[0])})",
    sim=lambda ctx, call: None,  # a warp's lanes already run in program order here
)
def syncwarp(mask: int = 0xFFFFFFFF):
    return (Const(mask, UINT32),), ()


def _sim_shfl_sync(ctx: SimContext, call):
    """Every lane gets the value lane ``lane`` holds; the full mask needs all 32 lanes here."""
    if not ctx.active.all():
        raise SimError(
            f"__shfl_sync with the full mask reached warp {ctx.warp} with only "
            f"{int(ctx.active.sum())} of 32 lanes active; call it where the whole warp runs "
            "(outside branches that split the warp)"
        )
    return np.full(32, ctx.value(0)[call.attr("lane")], dtype=np.int32)


@intrinsic(
    "cuda.shfl_sync",
    lower=lambda call, gen: (
        f"__shfl_sync(0xffffffffu, (int)({gen.expr(call.args[0])}), {call.attr('lane')})"
    ),
    value=INT32,
    sim=_sim_shfl_sync,
)
def shfl_sync(value, lane: int = 0):
    """``__shfl_sync(0xffffffff, value, lane)``: lane ``lane``'s 32-bit integer in every lane of
    the warp, which must run whole. Its result is warp-uniform *to the compiler*: an index
    derived from ``threadIdx`` (a warpgroup's, say) passed through it lets ptxas keep what is
    computed from it (wgmma descriptors, barrier addresses) in uniform registers, where
    ``threadIdx / 128`` alone, uniform in fact but not provably, costs each wgmma's
    descriptors vector arithmetic and moves into uniform registers (``R2UR``)."""
    if type(lane) is not int or not 0 <= lane < 32:
        raise IRError(f"shfl_sync's lane is an int in [0, 32), got {lane!r}")
    operand = convert(value)
    if operand.dtype not in (INT32, UINT32):
        raise IRError(
            f"shfl_sync moves a 32-bit integer (int32 or uint32), got a {operand.dtype} value "
            f"({value!r}); cast it first (T.cast(x, 'int32')) or shuffle its bits"
        )
    return (operand,), (("lane", lane),)


def _lower_named_barrier(call, gen) -> str:
    threads = call.attr("threads")
    if not call.args:
        return asm(f"bar.sync {call.attr('id')}, {threads};")
    return asm(f"bar.sync %0, {threads};", "", f'"r"({gen.expr(call.args[0])})')


def _sim_named_barrier(ctx: SimContext, call):
    """``bar.sync id, threads``: ``threads / 32`` warps meet at barrier ``id``. An id computed
    at run time must fall in [0, 16) as a constant one must (PTX ISA, "bar.sync": operand a,
    "a logical barrier resource ... with value 0 through 15"): SimError otherwise."""
    fixed = call.attr("id")
    barrier_id = fixed if fixed is not None else ctx.uniform(0)
    if not 0 <= barrier_id < 16:
        raise SimError(
            f"bar.sync: barrier id {barrier_id} (CTA {ctx.cta} warp {ctx.warp}) is outside the 16 "
            "barriers of a CTA (0 through 15, PTX ISA 'bar.sync'); compute the id into [0, 16), "
            "and keep 0 for __syncthreads"
        )
    yield from ctx.barrier(barrier_id, call.attr("threads"))


@intrinsic("cuda.named_barrier", lower=_lower_named_barrier, sim=_sim_named_barrier)
def named_barrier(barrier_id, threads: int):
    """``bar.sync id, threads``: synchronise a subset of warps (``threads`` a multiple of 32).

    ``barrier_id`` is an int in [0, 16) or an expression computed at run time (one barrier per
    warpgroup, say).
    """
    fixed = isinstance(barrier_id, int)
    if (fixed and not 0 <= barrier_id < 16) or threads % 32 or threads <= 0:
        raise IRError(
            "bar.sync takes an id in [0, 16) and a positive multiple of 32 threads, got "
            f"{barrier_id}, {threads}"
        )
    if fixed:
        return (), (("id", barrier_id), ("threads", threads))
    return (convert(barrier_id),), (("threads", threads),)


@intrinsic(
    "cuda.pack_bf16x2",
    lower=lambda call, gen: (
        f"((uint32_t)tm_f32_to_bf16({gen.expr(call.args[0])}) | "
        f"((uint32_t)tm_f32_to_bf16({gen.expr(call.args[1])}) << 16))"
    ),
    value=UINT32,
    public=False,
    sim=lambda ctx, call: (
        float32_to_bits(ctx.value(0), "bfloat16").astype(np.uint32)
        | (float32_to_bits(ctx.value(1), "bfloat16").astype(np.uint32) << 16)
    ),
)
def pack_bf16x2(lo, hi):
    """Two floats rounded to bfloat16 and packed into one 32-bit word (``lo`` in the low half)."""
    return (convert(lo), convert(hi)), ()


_ELECT_SYNC = r"""__device__ __forceinline__ bool tm_elect_sync() {
  uint32_t elected;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "elect.sync _|p, 0xffffffff;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n" : "=r"(elected));
  return elected != 0;
}
"""


@intrinsic(
    "ptx.elect_sync",
    feature="elect.sync",
    instruction="elect.sync",
    lower=lambda call, gen: "tm_elect_sync()",
    helper=_ELECT_SYNC,
    value=BOOL,
    sim=lambda ctx, call: ctx.lanes == np.argmax(ctx.active),  # the lowest active lane
)
def elect_sync():
    """True in exactly one lane of the (fully active) warp."""
    return (), ()


@intrinsic(
    "cuda.smem_addr",
    # the index counts bytes from the buffer's first element
    lower=lambda call, gen: (
        f"tm_smem_addr((uint8_t*){call.args[0].name} + {gen.expr(call.args[1])})"
    ),
    value=UINT32,
    public=False,
    sim=lambda ctx, call: ctx.shared_address(call.args[0]) + ctx.value(1).astype(np.int64),
)
def _smem_addr(var, byte):
    return (var, convert(byte)), ()


def smem_addr(buf: Buffer, *coords) -> Expr:
    """32-bit shared-window address of ``buf`` (at ``coords``, through its layout) for PTX operands.

    Sub-byte elements are addressed by the byte that holds them.
    """
    builder = current()
    if not isinstance(buf, Buffer) or buf.scope != SMEM:
        raise IRError(f"smem_addr takes a shared-memory buffer, got {buf!r}")
    var = builder._smem_var(buf)
    if not coords:
        return _smem_addr(var, 0)
    element = layout_index(buf.layout, coords)["m"]
    bits = buf.dtype.bits
    byte = (
        binop("*", element, bits // 8)
        if bits % 8 == 0
        else binop("//", binop("*", element, bits), 8)
    )
    return _smem_addr(var, byte)


def shared_operand(x) -> Expr:
    """A shared-memory operand: a pool Buffer (its first element), ``(buffer, *coords)``, or a
    32-bit address expression."""
    if isinstance(x, Buffer):
        return smem_addr(x)
    if isinstance(x, tuple) and x and isinstance(x[0], Buffer):
        return smem_addr(x[0], *x[1:])
    return convert(x)
