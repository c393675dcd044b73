"""TMA bulk tensor copies (PTX ISA 9.0: "cp.async.bulk.tensor", "cp.async.bulk.commit_group",
"cp.async.bulk.wait_group") and the prefetch of their tensor maps ("prefetch.tensormap")."""

from __future__ import annotations

import math

import numpy as np

from ...layout import decode
from ...layout.smem import SwizzleMode
from ...layout.tma import TMAFill, tma_fill
from ...pool import SMEM, Buffer
from ..builder import current
from ..index import layout_index
from ..nodes import BinOp, Cast, Const, IRError, TensorMapVar, binop, convert
from .registry import SimContext, asm, expose, intrinsic, pending_groups
from .thread import shared_operand

# -- semantics (PTX ISA 9.0, "Tensor Copy": box, out-of-bound fill, swizzle modes) ----------

# the 16-byte-chunk swizzles TMA applies, by the buffer's mode (layout/decode.py owns the formula)
_SWIZZLE_NAMES = {
    SwizzleMode.SWIZZLE_NONE: "none",
    SwizzleMode.SWIZZLE_32B_ATOM: "32B",
    SwizzleMode.SWIZZLE_64B_ATOM: "64B",
    SwizzleMode.SWIZZLE_128B_ATOM: "128B",
}


def swizzle_address(addr: np.ndarray, mode: SwizzleMode) -> np.ndarray:
    """The shared address TMA uses for byte ``addr`` of a box: ``Swizzle<B, 4, 3>`` on the
    absolute address, i.e. bits [4, 4+B) XOR bits [7, 7+B) with B = 1, 2, 3 for the 32, 64
    and 128-byte modes (16-byte chunks permuted within each 128 x 2^B-byte period): the same
    rule the MMA descriptors' swizzles follow (:func:`tilemem.layout.decode.swizzle_address`)."""
    return decode.swizzle_address(addr, _SWIZZLE_NAMES[mode])


def box_elements(plan, coords) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each element of the box at ``coords`` (innermost first), in shared-memory order
    (the box is dense, innermost dimension fastest): its flat index in the global array, whether
    it lies inside the tensor, and its byte offset in the box (``index * bits // 8``: two 4-bit
    elements share a byte, packed with no gaps as CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B does)."""
    box = np.asarray(plan.box, np.int64)
    dims = np.asarray(plan.global_dims, np.int64)
    bits = plan.dtype.bits
    grid = np.indices(tuple(box[::-1])).reshape(len(box), -1)[::-1]  # inner dimension first
    g = np.asarray(coords, np.int64)[:, None] + grid
    inside = np.asarray(((g >= 0) & (g < dims[:, None])).all(axis=0))
    strides = np.asarray([1, *(s * 8 // bits for s in plan.global_strides)], np.int64)
    flat = (g * strides[:, None]).sum(axis=0)
    return flat, inside, np.arange(g.shape[1], dtype=np.int64) * bits // 8


def _lanes(ctx: SimContext) -> np.ndarray:
    return np.flatnonzero(ctx.active)


def _read_box(actx: SimContext, tmap, flat: np.ndarray, inside: np.ndarray) -> np.ndarray:
    """The box's bytes in shared-memory order, shape (bytes, element bytes): zeros outside the
    tensor; 4-bit elements packed in pairs (element 2j in the low nibble of byte j)."""
    array = tmap.array
    if tmap.plan.dtype.bits != 4:
        values = np.zeros(flat.size, array.dtype)
        values[inside] = actx.global_read(array, flat[inside])
        return values.view(np.uint8).reshape(flat.size, -1)
    codes = np.zeros(flat.size, np.uint8)
    if tmap.packed:
        f = flat[inside]
        codes[inside] = (actx.global_read(array, f // 2) >> (4 * (f % 2))) & 0xF
    else:
        codes[inside] = actx.global_read(array, flat[inside]).view(np.uint8) & 0xF
    return (codes[0::2] | (codes[1::2] << 4)).reshape(-1, 1)


def _write_box(actx: SimContext, tmap, flat, inside, data: np.ndarray) -> None:
    """Store the box's bytes ``data`` (shared-memory order) to the elements inside the tensor."""
    array = tmap.array
    if tmap.plan.dtype.bits != 4:
        values = np.ascontiguousarray(data).view(array.dtype).reshape(-1)
        actx.global_write(array, flat[inside], values[inside])
        return
    raw = np.ascontiguousarray(data).reshape(-1)
    codes = np.stack([raw & 0xF, raw >> 4], axis=1).reshape(-1)[inside]
    f = flat[inside]
    if not tmap.packed:
        actx.global_write(array, f, codes.view(array.dtype))
        return
    byte, slot = np.unique(f // 2, return_inverse=True)
    shift = (4 * (f % 2)).astype(np.uint8)
    covered = np.zeros(byte.size, np.uint8)
    value = np.zeros(byte.size, np.uint8)
    np.bitwise_or.at(covered, slot, (0xF << shift).astype(np.uint8))
    np.bitwise_or.at(value, slot, (codes << shift).astype(np.uint8))
    partial = covered != 0xFF  # a byte with one nibble outside the tensor keeps that nibble
    if partial.any():
        value[partial] |= actx.global_read(array, byte[partial]) & ~covered[partial]
    actx.global_write(array, byte, value)


def _sim_load(ctx: SimContext, call) -> None:
    """Each active thread issues one copy. At completion the box lands in shared memory of
    every destination CTA (out-of-bound elements as zeros), swizzled on absolute addresses,
    and each destination's mbarrier at ``bar`` gets complete_tx of the whole box's bytes."""
    tmap = ctx.tensor_map(0)
    plan = tmap.plan
    rank = call.attr("rank")
    dst, bar = ctx.value(1).astype(np.int64), ctx.value(2).astype(np.int64)
    coords = np.stack([ctx.value(3 + i).astype(np.int64) for i in range(rank)])
    masks = ctx.value(3 + rank).astype(np.int64) if call.attr("multicast") else None
    for lane in _lanes(ctx):
        flat, inside, offs = box_elements(plan, coords[:, lane])
        targets = (
            [r for r in range(ctx.cluster_size) if (int(masks[lane]) >> r) & 1]
            if masks is not None
            else [None]
        )
        addrs = swizzle_address(int(dst[lane]) + _byte_starts(offs), plan.swizzle)
        b = int(bar[lane])

        def complete(actx: SimContext, flat=flat, inside=inside, addrs=addrs, targets=targets, b=b):
            data = _read_box(actx, tmap, flat, inside)
            for r in targets:
                actx.smem_write(addrs, data, rank=r)
                actx.complete_tx(b, data.size, rank=r)

        ctx.issue("tma", complete, "cp.async.bulk.tensor (TMA load)")


def _byte_starts(offs: np.ndarray) -> np.ndarray:
    """The first byte offset of each element group sharing a byte (every element for whole-byte
    types, every other one for 4-bit types)."""
    if offs.size > 1 and offs[1] == offs[0]:
        return offs[0::2]
    return offs


def _sim_store(ctx: SimContext, call) -> None:
    """Each active thread issues one copy of the box from shared memory (swizzled) to the
    tensor, elements outside it dropped; it completes by the bulk group's wait."""
    tmap = ctx.tensor_map(0)
    plan = tmap.plan
    rank = call.attr("rank")
    src = ctx.value(1).astype(np.int64)
    coords = np.stack([ctx.value(2 + i).astype(np.int64) for i in range(rank)])
    esize = max(plan.dtype.bits // 8, 1)
    for lane in _lanes(ctx):
        flat, inside, offs = box_elements(plan, coords[:, lane])
        addrs = swizzle_address(int(src[lane]) + _byte_starts(offs), plan.swizzle)

        def complete(actx: SimContext, flat=flat, inside=inside, addrs=addrs):
            _write_box(actx, tmap, flat, inside, actx.smem_read(addrs, esize))

        ctx.issue("bulk", complete, "cp.async.bulk.tensor (TMA store)", split_write=True)


def _coords(coords) -> tuple:
    coords = tuple(convert(c) for c in coords)
    if not 1 <= len(coords) <= 5:
        raise IRError(f"a bulk tensor copy takes 1 to 5 coordinates, got {len(coords)}")
    return coords


def _box_operand(x, what: str):
    """The shared-memory side of a bulk tensor copy (:func:`shared_operand`). A box starts on a
    byte: element ``n`` of a sub-byte buffer starts at bit ``n * bits``, on a byte when ``n``
    is a multiple of ``8 / gcd(bits, 8)`` (2 for fp4, 4 for fp6). An element number not
    provably such a multiple is refused (a constant inside a byte, or a run-time index
    tilemem cannot prove lands on a byte), where :func:`smem_addr` would round it down to the
    byte that holds it."""
    if isinstance(x, tuple) and x and isinstance(x[0], Buffer) and x[0].dtype.bits % 8:
        buf, bits = x[0], x[0].dtype.bits
        step = 8 // math.gcd(bits, 8)  # elements from one byte boundary to the next
        element = layout_index(buf.layout, x[1:])["m"] if buf.scope == SMEM else None
        if isinstance(element, Const) and element.value % step:
            raise IRError(
                f"{what}: element {tuple(x[1:])} of {buf.name!r} ({buf.dtype.name}) starts at bit "
                f"{element.value * bits % 8} of a byte; a TMA box starts on a byte: give an "
                f"index whose element number is a multiple of {step}"
            )
        if element is not None and not _multiple_of(element, step):
            raise IRError(
                f"{what}: element {tuple(x[1:])} of {buf.name!r} ({buf.dtype.name}) is number "
                f"{element}, which tilemem cannot prove a multiple of {step} (a box starts on "
                f"a byte, and element n of {bits}-bit values starts at bit {bits} n): write "
                f"the run-time index as a multiple of {step} (for example {step} * i) or index "
                f"whole boxes"
            )
    return shared_operand(x)


def _multiple_of(e, n: int) -> bool:
    """Whether integer expression ``e`` is a multiple of ``n`` (a power of two) for every value
    of its variables: it has at least ``log2 n`` low bits known to be zero
    (:func:`_zero_low_bits`)."""
    return _zero_low_bits(e) >= n.bit_length() - 1


_NO_BITS = 64  # a zero constant: every low bit is zero


def _zero_low_bits(e) -> int:
    """How many low bits of integer expression ``e`` are zero whatever its variables hold (a
    lower bound): a constant's trailing zeros; the fewer of two operands' for ``+ - ^ |``, the
    more for ``&``, their sum for ``*``; a constant shift moves the count; anything else
    (a variable, a division, a comparison) has none known."""
    if isinstance(e, Const):
        v = e.value
        if not isinstance(v, int) or isinstance(v, bool):
            return 0
        return _NO_BITS if v == 0 else (v & -v).bit_length() - 1
    if isinstance(e, Cast):
        return _zero_low_bits(e.a)
    if not isinstance(e, BinOp):
        return 0
    a = _zero_low_bits(e.a)
    if e.op in ("<<", ">>"):
        if not (isinstance(e.b, Const) and isinstance(e.b.value, int)):
            return 0
        return min(a + e.b.value, _NO_BITS) if e.op == "<<" else max(a - e.b.value, 0)
    b = _zero_low_bits(e.b)
    if e.op in ("+", "-", "^", "|"):
        return min(a, b)
    if e.op == "&":
        return max(a, b)
    if e.op == "*":
        return min(a + b, _NO_BITS)
    return 0


def _lower_load(call, gen) -> str:
    rank = call.attr("rank")
    tmap, dst, bar, *rest = call.args
    coords = rest[:rank]
    cs = ", ".join(f"%{3 + i}" for i in range(rank))
    ins = [f'"l"(&{tmap.name})', f'"r"({gen.expr(dst)})', f'"r"({gen.expr(bar)})']
    ins += [f'"r"((int32_t)({gen.expr(c)}))' for c in coords]
    if call.attr("multicast"):
        ins.append(f'"h"((uint16_t)({gen.expr(rest[rank])}))')
        text = (
            f"cp.async.bulk.tensor.{rank}d.shared::cluster.global"
            ".mbarrier::complete_tx::bytes.multicast::cluster"
            f" [%1], [%0, {{{cs}}}], [%2], %{3 + rank};"
        )
    else:
        text = (
            f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes"
            f" [%1], [%0, {{{cs}}}], [%2];"
        )
    return asm(text, "", ", ".join(ins))


@intrinsic(
    "ptx.tma.load",
    feature="tma",
    instruction="cp.async.bulk.tensor (TMA load)",
    lower=_lower_load,
    sim=_sim_load,
)
def tma_load(tmap: TensorMapVar, dst, bar, coords, multicast_mask=None):
    """``cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes``."""
    if not isinstance(tmap, TensorMapVar):
        raise IRError(f"tma_load reads through a T.TensorMap kernel parameter, got {tmap!r}")
    attrs: list[tuple] = [("rank", len(tuple(coords)))]
    args = [tmap, _box_operand(dst, "tma_load"), shared_operand(bar), *_coords(coords)]
    if multicast_mask is not None:
        current().target.require("cluster", "TMA multicast")
        attrs.append(("multicast", True))
        args.append(convert(multicast_mask))
    return args, attrs


def _lower_prefetch(call, gen) -> str:
    (tmap,) = call.args
    return asm("prefetch.tensormap [%0];", "", f'"l"(&{tmap.name})')


@intrinsic(
    "ptx.tma.prefetch_descriptor",
    feature="tma",
    instruction="prefetch.tensormap",
    lower=_lower_prefetch,
    sim=lambda ctx, call: None,  # a cache hint: nothing the kernel can observe changes
)
def tma_prefetch_descriptor(tmap: TensorMapVar):
    """``prefetch.tensormap [&tmap]`` (PTX ISA 9.0, "prefetch, prefetchu"; PTX 8.0, sm_90):
    bring a ``T.TensorMap`` parameter's 128-byte descriptor into the cache the TMA unit reads
    descriptors from, so the first ``cp.async.bulk.tensor`` through it does not wait for that
    fetch. The address is the parameter's generic address (a ``__grid_constant__`` kernel
    parameter), as the PTX ISA allows for the generic state space. Issue it once, early (one
    thread), before the loads. Nothing changes in the simulator: it has no descriptor cache."""
    if not isinstance(tmap, TensorMapVar):
        raise IRError(
            f"tma.prefetch_descriptor prefetches a T.TensorMap kernel parameter, got {tmap!r}"
        )
    return [tmap], []


def _lower_store(call, gen) -> str:
    rank = call.attr("rank")
    tmap, src, *coords = call.args
    cs = ", ".join(f"%{2 + i}" for i in range(rank))
    ins = [f'"l"(&{tmap.name})', f'"r"({gen.expr(src)})'] + [
        f'"r"((int32_t)({gen.expr(c)}))' for c in coords
    ]
    return asm(
        f"cp.async.bulk.tensor.{rank}d.global.shared::cta.bulk_group [%0, {{{cs}}}], [%1];",
        "",
        ", ".join(ins),
    )


@intrinsic(
    "ptx.tma.store",
    feature="tma",
    instruction="cp.async.bulk.tensor (TMA store)",
    lower=_lower_store,
    sim=_sim_store,
)
def tma_store(tmap: TensorMapVar, src, coords):
    if not isinstance(tmap, TensorMapVar):
        raise IRError(f"tma_store writes through a T.TensorMap kernel parameter, got {tmap!r}")
    return [tmap, _box_operand(src, "tma_store"), *_coords(coords)], [("rank", len(tuple(coords)))]


def _tile_fill(buf: Buffer) -> TMAFill:
    """How TMA fills ``buf`` (:func:`tilemem.layout.tma.tma_fill`, the same rule as the map)."""
    if not isinstance(buf, Buffer) or buf.scope != SMEM:
        raise IRError(f"a tile copy needs a shared-memory buffer of shape (..., R, K), got {buf!r}")
    return tma_fill(buf.layout, buf.dtype, buf.shape, buf.byte_offset)


@expose("ptx.tma.load_tile")
def tma_load_tile(tmap: TensorMapVar, buf: Buffer, bar, row, col, *lead) -> None:
    """Load the (R, K) tile at global (row, col) into ``buf[lead...]``, box by box as
    :func:`~tilemem.layout.tma.tma_fill` says."""
    fill = _tile_fill(buf)
    for b in range(fill.boxes):
        c = b * fill.box_cols
        tma_load(tmap, (buf, *lead, 0, c), bar, [binop("+", col, c), row])


@expose("ptx.tma.store_tile")
def tma_store_tile(tmap: TensorMapVar, buf: Buffer, row, col, *lead) -> None:
    """Store ``buf[lead...]`` to the global tile at (row, col), box by box."""
    fill = _tile_fill(buf)
    for b in range(fill.boxes):
        c = b * fill.box_cols
        tma_store(tmap, (buf, *lead, 0, c), [binop("+", col, c), row])


@intrinsic(
    "ptx.tma.commit_group",
    feature="tma",
    instruction="cp.async.bulk.commit_group",
    ptx="cp.async.bulk.commit_group;",
    sim=lambda ctx, call: ctx.commit_group("bulk"),
)
def bulk_commit_group():
    return (), ()


@intrinsic(
    "ptx.tma.wait_group_read",
    feature="tma",
    instruction="cp.async.bulk.wait_group.read",
    lower=lambda call, gen: asm(f"cp.async.bulk.wait_group.read {call.attr('n')};"),
    sim=lambda ctx, call: ctx.wait_group("bulk", call.attr("n"), reads_only=True),
)
def bulk_wait_group_read(n: int = 0):
    return (), (("n", pending_groups(n, "cp.async.bulk.wait_group.read")),)


@intrinsic(
    "ptx.tma.wait_group",
    feature="tma",
    instruction="cp.async.bulk.wait_group",
    lower=lambda call, gen: asm(f"cp.async.bulk.wait_group {call.attr('n')};"),
    sim=lambda ctx, call: ctx.wait_group("bulk", call.attr("n")),
)
def bulk_wait_group(n: int = 0):
    """At most ``n`` bulk groups pending, their writes to global memory done (not only read)."""
    return (), (("n", pending_groups(n, "cp.async.bulk.wait_group")),)
