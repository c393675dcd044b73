"""Blackwell tensor memory and MMA (PTX ISA 9.0: "tcgen05"), and the TMEM pool protocol.

A TMEM address is ``base + (lane << 16) + column`` where ``base`` is what
``tcgen05.alloc`` wrote to the pool's shared-memory slot (docs/DESIGN.md#tmem-pools).

Simulation (each instruction's ``sim=``): alloc / dealloc / relinquish go through the
simulator's TMEM protocol; mma, cp and commit are asynchronous operations of the issuing
warp on the in-order "tcgen05" queue (a commit arrives on its mbarrier after the MMAs before
it); ld and st are asynchronous on "tcgen05.ld" / "tcgen05.st", completed by wait::ld /
wait::st. MMA and cp operands are read by decoding the descriptors the kernel computed
(:mod:`tilemem.layout.decode`), never from tilemem's buffers.
"""

from __future__ import annotations

import numpy as np

from ...dtype import bits_to_float32, float32_to_bits
from ...errors import PoolStateError, SimError
from ...layout.decode import (
    decode_instr_descriptor,
    decode_tcgen05_descriptor,
    operand_addresses,
    operand_values,
)
from ...layout.fragments import lane_quarter, mma_result_cells, tmem_ld_cells
from ...layout.operand import MMA_K, tcgen05_descriptor_high
from ...pool import TMEM, Buffer
from ..builder import LocalArray, current, let
from ..nodes import (
    UINT32,
    Comment,
    Const,
    Expr,
    IfThenElse,
    IRError,
    Load,
    SeqStmt,
    Var,
    binop,
    convert,
)
from .descriptor import shared_descriptor
from .registry import asm, expose, intrinsic
from .thread import shared_operand, syncthreads, syncwarp, warp_id

_LD_NUMS = (1, 2, 4, 8, 16, 32, 64, 128)


def _cta_group(n: int) -> tuple:
    if n not in (1, 2):
        raise IRError(f"cta_group must be 1 or 2, got {n!r}")
    return ("cta_group", n)


def _sim_alloc(ctx, call):
    """Blocks until the columns are free on the SM, then writes the base to the slot."""
    yield from ctx.tmem_alloc(ctx.uniform(0), ctx.uniform(1), call.attr("cta_group"))


@intrinsic(
    "ptx.tcgen05.alloc",
    feature="tcgen05",
    sim=_sim_alloc,
    lower=lambda call, gen: asm(
        f"tcgen05.alloc.cta_group::{call.attr('cta_group')}.sync.aligned.shared::cta.b32 [%0], %1;",
        "",
        f'"r"({gen.expr(call.args[0])}), "r"({gen.expr(call.args[1])})',
    ),
)
def tcgen05_alloc(slot, ncols: int, *, cta_group: int = 1):
    return (shared_operand(slot), Const(int(ncols), UINT32)), (_cta_group(cta_group),)


@intrinsic(
    "ptx.tcgen05.dealloc",
    feature="tcgen05",
    sim=lambda ctx, call: ctx.tmem_dealloc(ctx.uniform(0), ctx.uniform(1), call.attr("cta_group")),
    lower=lambda call, gen: asm(
        f"tcgen05.dealloc.cta_group::{call.attr('cta_group')}.sync.aligned.b32 %0, %1;",
        "",
        f'"r"({gen.expr(call.args[0])}), "r"({gen.expr(call.args[1])})',
    ),
)
def tcgen05_dealloc(taddr, ncols: int, *, cta_group: int = 1):
    return (convert(taddr), Const(int(ncols), UINT32)), (_cta_group(cta_group),)


@intrinsic(
    "ptx.tcgen05.relinquish_alloc_permit",
    feature="tcgen05",
    sim=lambda ctx, call: ctx.tmem_relinquish(call.attr("cta_group")),
    lower=lambda call, gen: asm(
        f"tcgen05.relinquish_alloc_permit.cta_group::{call.attr('cta_group')}.sync.aligned;"
    ),
)
def tcgen05_relinquish(*, cta_group: int = 1):
    return (), (_cta_group(cta_group),)


@intrinsic(
    "ptx.tcgen05.fence_before_thread_sync",
    feature="tcgen05",
    instruction="tcgen05.fence::before_thread_sync",
    ptx="tcgen05.fence::before_thread_sync;",
    sim=lambda ctx, call: ctx.fence("tcgen05.before"),
)
def tcgen05_fence_before():
    return (), ()


@intrinsic(
    "ptx.tcgen05.fence_after_thread_sync",
    feature="tcgen05",
    instruction="tcgen05.fence::after_thread_sync",
    ptx="tcgen05.fence::after_thread_sync;",
    sim=lambda ctx, call: ctx.fence("tcgen05.after"),
)
def tcgen05_fence_after():
    return (), ()


def _check_registers(instruction: str, num: int, regs, into_or_from: str) -> None:
    """``.32x32b.x{num}`` moves ``num`` 32-bit columns to or from a T.alloc_local that holds
    them."""
    if (
        num not in _LD_NUMS
        or not isinstance(regs, LocalArray)
        or regs.shape[0] < num
        or regs.dtype.bits != 32
    ):
        raise IRError(
            f"{instruction} .32x32b.x{num}: num in {_LD_NUMS} {into_or_from} a 32-bit "
            "T.alloc_local of >= num elements"
        )


def _lower_ld(call, gen) -> str:
    dst, taddr = call.args
    num = call.attr("num")
    regs = ", ".join(f"%{i}" for i in range(num))
    kind = "f" if dst.dtype.name == "float32" else "r"
    outs = ", ".join(f'"={kind}"({dst.name}[{i}])' for i in range(num))
    return asm(
        f"tcgen05.ld.sync.aligned.32x32b.x{num}.b32 {{{regs}}}, [%{num}];",
        outs,
        f'"r"({gen.expr(taddr)})',
    )


def _tmem_cells(ctx, taddr: int, shape: str, num: int, what: str):
    """TMEM (lanes, cols) of each lane's registers for ``tcgen05.ld/st .{shape}.x{num}`` at
    ``taddr``, or None (after reporting it) when they leave the warp's lane quarter."""
    lanes, cols = tmem_ld_cells(shape, num)
    lanes, cols = lanes + (taddr >> 16), cols + (taddr & 0xFFFF)
    quarter = lane_quarter(ctx.warp)
    if lanes.min() < quarter.start or lanes.max() >= quarter.stop:
        ctx.hazard(
            "out-of-bounds",
            f"{what} at TMEM lane {taddr >> 16}: warp {ctx.warp} reaches only lanes "
            f"{quarter.start}-{quarter.stop - 1} (its quarter, warp % 4); address the lanes "
            f"with T.tmem_addr(buf, lane=(warp % 4) * 32, ...)",
            space="tmem",
            where=f"lanes {lanes.min()}-{lanes.max()}",
        )
        return None
    return lanes, cols


def _as_cells(values: np.ndarray) -> np.ndarray:
    """Register values as the 32-bit cells they are (float32 bits, int32 two's complement)."""
    return np.ascontiguousarray(values).view(np.uint32)


def _sim_ld(ctx, call) -> None:
    """Each lane's ``num`` registers get TMEM cells (lane, col .. col + num - 1) when the load
    completes, no later than ``tcgen05.wait::ld``; reading them before that wait is a race
    (PTX ISA 9.0, "tcgen05.wait")."""
    dst, num = call.args[0], call.attr("num")
    cells = _tmem_cells(ctx, ctx.uniform(1), "32x32b", num, f"tcgen05.ld.32x32b.x{num}")
    if cells is None:
        return

    def complete(actx) -> None:
        data = actx.tmem_read(*cells)  # (32, num) uint32
        regs = actx.regs_read(dst)
        regs[:, :num] = data.view(regs.dtype)
        actx.regs_write(dst, regs)

    ctx.issue("tcgen05.ld", complete, f"tcgen05.ld.32x32b.x{num}", writes=((dst, num),))


def _sim_st(ctx, call) -> None:
    """The source registers are read at issue; TMEM is written when the store completes, no
    later than ``tcgen05.wait::st``."""
    src, num = call.args[1], call.attr("num")
    cells = _tmem_cells(ctx, ctx.uniform(0), "32x32b", num, f"tcgen05.st.32x32b.x{num}")
    if cells is None:
        return
    data = _as_cells(ctx.regs_read(src)[:, :num])
    ctx.issue("tcgen05.st", lambda actx: actx.tmem_write(*cells, data), f"tcgen05.st.32x32b.x{num}")


@intrinsic("ptx.tcgen05.ld", feature="tcgen05", lower=_lower_ld, sim=_sim_ld)
def tcgen05_ld(dst: LocalArray, taddr, *, num: int):
    """``tcgen05.ld.sync.aligned.32x32b.x{num}.b32``: ``num`` consecutive columns of this thread's
    lane."""
    _check_registers("tcgen05.ld", num, dst, "into")
    return (dst.var, convert(taddr)), (("num", num),)


def _lower_st(call, gen) -> str:
    taddr, src = call.args
    num = call.attr("num")
    regs = ", ".join(f"%{i + 1}" for i in range(num))
    kind = "f" if src.dtype.name == "float32" else "r"
    ins = f'"r"({gen.expr(taddr)}), ' + ", ".join(f'"{kind}"({src.name}[{i}])' for i in range(num))
    return asm(f"tcgen05.st.sync.aligned.32x32b.x{num}.b32 [%0], {{{regs}}};", "", ins)


@intrinsic("ptx.tcgen05.st", feature="tcgen05", lower=_lower_st, sim=_sim_st)
def tcgen05_st(taddr, src: LocalArray, *, num: int):
    _check_registers("tcgen05.st", num, src, "from")
    return (convert(taddr), src.var), (("num", num),)


@intrinsic(
    "ptx.tcgen05.wait_ld",
    feature="tcgen05",
    instruction="tcgen05.wait::ld",
    ptx="tcgen05.wait::ld.sync.aligned;",
    sim=lambda ctx, call: ctx.wait_group("tcgen05.ld", None),
)
def tcgen05_wait_ld():
    return (), ()


@intrinsic(
    "ptx.tcgen05.wait_st",
    feature="tcgen05",
    instruction="tcgen05.wait::st",
    ptx="tcgen05.wait::st.sync.aligned;",
    sim=lambda ctx, call: ctx.wait_group("tcgen05.st", None),
)
def tcgen05_wait_st():
    return (), ()


@expose("ptx.tcgen05.desc")
def tcgen05_desc(buf: Buffer, *coords, major: str = "K") -> Expr:
    """tcgen05 shared-memory descriptor of ``buf`` starting at ``coords`` (stage..., row, col).

    ``major="MN"`` reads a (..., K, MN) tile MN-major (the instruction descriptor's
    a/b major bit must say so too).
    """
    current().target.require("tcgen05", "tcgen05 shared-memory descriptor")
    return shared_descriptor(buf, coords, tcgen05_descriptor_high, major)


def _tmem_operand(x) -> Expr:
    return tmem_addr(x) if isinstance(x, Buffer) and x.scope == TMEM else convert(x)


_DENSE_KINDS = ("f16", "tf32", "f8f6f4", "i8")

# -- MMA semantics ---------------------------------------------------------------------------

# container bits of each operand format in shared memory per kind: the mx fp4 kinds pack two
# e2m1 per byte; kind::f8f6f4 / mxf8f6f4 give every element 8 bits of the layout (16 per
# 16-byte chunk) and pack fp6 and fp4 inside each chunk (_chunk_packed_values)
_OPERAND_BITS = {"bfloat16": 16, "float16": 16, "tf32": 32}
_PACKED_FP4_KINDS = ("mxf4", "mxf4nvf4")
_CHUNK_PACKED_KINDS = ("f8f6f4", "mxf8f6f4")
_CHUNK_PACKED_BITS = {"float6_e2m3fn": 6, "float6_e3m2fn": 6, "float4_e2m1fn": 4}


def _operand_bits(fmt: str, kind: str) -> int:
    if fmt == "float4_e2m1fn" and kind in _PACKED_FP4_KINDS:
        return 4
    return _OPERAND_BITS.get(fmt, 8)


def _chunk_packed_values(read, d, rows: int, cols: int, fmt: str, width: int):
    """fp6 / fp4 operands of kind::f8f6f4: each 16-byte chunk of the 8-bit layout holds its
    16 elements packed from the chunk's first bit, element j at bits ``[width j, width j +
    width)`` (little-endian), then padding: 12 bytes + 4 for fp6, 8 + 8 for fp4. It is what
    TMA writes for CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B / 16U4_ALIGN16B (CUDA driver API,
    cuTensorMapEncodeTiled), the types CUTLASS loads these MMA operands with
    (``float_e2m3_unpacksmem_t`` and friends, cute/arch/copy_sm90_desc.hpp). Padding bytes
    are never read. K-major only: fp6 and fp4 cannot be read MN-major (``_smem_operand``)."""
    addrs = operand_addresses(d, rows, cols, 8, "K")  # the chunk of element j starts at -j
    j = np.arange(cols) % 16
    first = addrs - j[None, :] + (width * j // 8)[None, :]
    shift = (width * j % 8).astype(np.uint32)
    word = read(first, 1)[..., 0].astype(np.uint32)
    spill = shift + width > 8  # elements that reach into the next byte
    if spill.any():
        word[:, spill] |= read(first[:, spill] + 1, 1)[..., 0].astype(np.uint32) << 8
    return bits_to_float32((word >> shift[None, :]) & np.uint32((1 << width) - 1), fmt)


def _checked_descriptor(desc: int):
    """The decoded descriptor; one the hardware would reject (version bits 46-48 not 0b001)
    or that tilemem does not model (LBO mode 1) is a SimError.

    LBO mode 1 (bit 52) makes bits 16-29 a leading-dimension byte *address* instead of an
    offset; the PTX ISA ("Shared memory descriptor") allows it on sm_103a only and says no
    more; the other descriptions found (Mojo's MMASmemDescriptor: "only used for 48B K
    tile") do not say how the hardware walks a K tile with it, and CuTe only names the bit
    (``lbo_mode_``), so there is nothing to check a model against."""
    d = decode_tcgen05_descriptor(desc)
    if d.version != 1:
        raise SimError(
            f"tcgen05 shared-memory descriptor {desc:#018x}: version bits 46-48 are {d.version}, "
            "must be 0b001 (T.ptx.tcgen05.desc sets them)"
        )
    if d.lbo_mode:
        raise SimError(
            f"tcgen05 descriptor {desc:#018x}: LBO mode 1 (bit 52, the leading dimension as an "
            "absolute byte address, sm_103a) is not simulated: no source says how the hardware "
            "walks a K tile with it; clear bit 52 and give LBO as an offset"
        )
    return d


def _smem_operand(actx, desc: int, mn: int, k: int, fmt: str, kind: str, major: str, rank=None):
    """An MN x K operand read through its shared-memory descriptor (of cluster CTA ``rank``)."""

    def read(addrs, nbytes):
        return (
            actx.smem_read(addrs, nbytes)
            if rank is None
            else actx.smem_read(addrs, nbytes, rank=rank)
        )

    d = _checked_descriptor(desc)
    width = _CHUNK_PACKED_BITS.get(fmt) if kind in _CHUNK_PACKED_KINDS else None
    if width is not None:
        if major != "K":
            raise SimError(
                f"tcgen05.mma reads a {fmt} operand MN-major (its transpose bit, 15 for A or 16 "
                "for B, is set in the instruction descriptor): only E4M3, E5M2, 8-bit integer, "
                "F16, BF16 and TF32 operands can be MN-major (CuTe UMMA::InstrDescriptor, "
                "a_major_ / b_major_), fp6 and fp4 are read K-major; clear the bit and store the "
                "operand K-major"
            )
        return _chunk_packed_values(read, d, mn, k, fmt, width)
    bits = _operand_bits(fmt, kind)
    if major == "K":
        return operand_values(read, d, mn, k, fmt, bits, "K")
    return operand_values(read, d, k, mn, fmt, bits, "MN").T


def _tmem_operand_a(actx, taddr: int, d_lanes: np.ndarray, k: int, fmt: str, extra: dict):
    """A kept in TMEM, read where the hardware reads it: the A row that D cell (r, c) takes
    lives in the same lane as that cell (CuTe's "DP-address equivalence in TMEM-A and TMEM-C"
    of its ``SM100_MMA_*_TS`` atoms, whose ``tmem_frg`` lays A out as D: M=128 row r in lane
    r, M=64 16 rows per lane quarter, cta_group::2 M=128 each CTA's 64 rows twice, in lanes
    0-63 and again in 64-127 for N's right half, the ``Duplicated`` allocation). ``d_lanes``
    (rows, N) are D's lanes relative to its address; K is packed into 32-bit columns from
    ``taddr``'s, low bits first (two 16-bit values per column). Returns the A rows of the
    lanes used (L x K) and, per D cell, the index of its row among them."""
    if fmt in _CHUNK_PACKED_BITS:
        raise SimError(
            f"tcgen05.mma with A in tensor memory as {fmt}: how {_CHUNK_PACKED_BITS[fmt]}-bit A "
            "elements are packed into TMEM columns is not modelled (no source the simulator "
            "follows says; in shared memory they are packed per 16-byte chunk)"
        )
    used, index = np.unique(d_lanes, return_inverse=True)
    bits = _operand_bits(fmt, "f16")
    per = 32 // bits
    kk = np.arange(k)
    lanes = (taddr >> 16) + used[:, None]
    cols = (taddr & 0xFFFF) + (kk // per)[None, :]
    cells = actx.tmem_read(lanes, cols, **extra).astype(np.uint32)
    shift = ((kk % per) * bits).astype(np.uint32)[None, :]
    rows = bits_to_float32((cells >> shift) & np.uint32((1 << bits) - 1), fmt)
    return rows, index.reshape(d_lanes.shape)


def _d_bits(values: np.ndarray, d_fmt: str) -> np.ndarray:
    if d_fmt == "float32":
        return values.astype(np.float32).view(np.uint32)
    if d_fmt == "int32":
        return values.astype(np.int64).astype(np.int32).view(np.uint32)
    return float32_to_bits(values.astype(np.float32), "float16").astype(np.uint32)  # low half


def _d_values(cells: np.ndarray, d_fmt: str) -> np.ndarray:
    if d_fmt == "float32":
        return cells.astype(np.uint32).view(np.float32).astype(np.float64)
    if d_fmt == "int32":
        return cells.astype(np.uint32).view(np.int32).astype(np.int64)
    return bits_to_float32(cells & np.uint32(0xFFFF), "float16").astype(np.float64)


def _scales(
    actx, taddr: int, rows: int, sf_fmt: str | None, per_mma: int, sf_id: int, extra: dict
) -> np.ndarray:
    """Scale factors (rows x per_mma) from TMEM: row r's are bytes ``sf_id + j`` of
    the cell (lane r % 128, column r // 32) from ``taddr`` (the layout ``sf_tmem_layout``
    describes and ``tcgen05.cp .32x128b.warpx4`` fills: each 32-row group its own column,
    copied into every lane quarter)."""
    if taddr >> 16:
        raise SimError(
            f"tcgen05.mma scale factors at TMEM address {taddr:#010x} (lane {taddr >> 16}): only "
            "scale factors from lane 0 are modelled (row r in lane r % 128, as tcgen05.cp "
            ".32x128b.warpx4 copies them into every lane quarter); where the hardware reads "
            "them from another lane is not"
        )
    r = np.arange(rows)
    lanes = r % 128
    cols = taddr + r // 32
    cells = actx.tmem_read(lanes, cols, **extra).astype(np.uint32)  # (rows,)
    j = np.arange(per_mma)
    # the id is the byte slot where this MMA's factors start (hence 2X takes ids 0 and 2)
    if sf_id % per_mma:
        raise SimError(
            f"scale-factor id {sf_id} with scale_vec::{per_mma}X: the ids are "
            f"{', '.join(str(i) for i in range(0, 4, per_mma))} (the byte where the factors start)"
        )
    byte = (sf_id + j).astype(np.uint32)
    codes = (cells[:, None] >> (8 * byte)[None, :]) & np.uint32(0xFF)
    return bits_to_float32(codes.astype(np.uint8), sf_fmt or "ue4m3").astype(np.float64)


def _issuing_pair(ctx, cta_group: int, what: str) -> tuple | None:
    """The cluster ranks an operation of ``cta_group`` acts on: ``(None,)`` (this CTA) for
    cta_group::1, the pair ``(rank, rank + 1)`` for cta_group::2 issued by the even CTA; None
    (after reporting it) when the odd CTA issues."""
    if cta_group == 1:
        return (None,)
    if ctx.rank % 2:
        ctx.hazard(
            "tmem-protocol",
            f"{what}.cta_group::2 issued by the odd CTA (rank {ctx.rank}) of its pair; the "
            "even CTA issues for both",
        )
        return None
    return (ctx.rank, ctx.rank + 1)


def _sim_mma_common(ctx, call, scale_vec: int | None) -> None:
    d_addr, a_arg, b_desc = ctx.uniform(0), ctx.uniform(1), ctx.uniform(2)
    kind, cta_group = call.attr("kind"), call.attr("cta_group")
    idesc_value = int(call.args[3].value)
    idesc = decode_instr_descriptor(idesc_value, kind)
    enable_input = ctx.uniform(len(call.args) - 1) != 0
    sf_addrs = (ctx.uniform(4), ctx.uniform(5)) if scale_vec else None
    k = MMA_K[kind]
    a_in_tmem = bool(call.attr("a_tmem"))
    if idesc.sparse:  # the IR emits no tcgen05.mma.sp (it has no metadata operand)
        raise SimError(
            f"tcgen05.mma instruction descriptor {idesc_value:#010x} has the sparsity bit (2) set, "
            "but the instruction is the dense tcgen05.mma (no .sp, no metadata operand); "
            "tilemem emits no sparse MMA and the simulator does not model one"
        )
    pair = _issuing_pair(ctx, cta_group, "tcgen05.mma")
    if pair is None:
        return
    m_cta, n_cta = idesc.m // cta_group, idesc.n // cta_group

    def complete(actx) -> None:
        b = np.concatenate(
            [
                _smem_operand(actx, b_desc, n_cta, k, idesc.b, kind, idesc.b_major, rank)
                for rank in pair
            ]
        ).astype(np.float64)
        if idesc.negate_b:
            b = -b
        if sf_addrs is not None:
            per = scale_vec or 1
            sfb = _scales(actx, sf_addrs[1], idesc.n, idesc.scale_format, per, idesc.sfb_id, {})
            b = b * np.repeat(sfb, k // per, axis=1)
        rel_lanes, rel_cols = mma_result_cells(idesc.m, idesc.n, cta_group)
        lanes, cols = rel_lanes + (d_addr >> 16), rel_cols + (d_addr & 0xFFFF)
        integer = idesc.d == "int32"
        for rank in pair:
            extra = {} if rank is None else {"rank": rank}  # the pair's CTA receiving D
            if a_in_tmem:
                a, row_of = _tmem_operand_a(actx, a_arg, rel_lanes, k, idesc.a, extra)
            else:
                a = _smem_operand(actx, a_arg, m_cta, k, idesc.a, kind, idesc.a_major, rank)
            a = a.astype(np.float64)
            if idesc.negate_a:
                a = -a
            if sf_addrs is not None:
                per = scale_vec or 1
                sfa = _scales(
                    actx, sf_addrs[0], m_cta, idesc.scale_format, per, idesc.sfa_id, extra
                )
                a = a * np.repeat(sfa, k // per, axis=1)
            prod = a.astype(np.int64) @ b.astype(np.int64).T if integer else a @ b.T
            if a_in_tmem:  # each D cell from the A row of its own lane
                prod = prod[row_of, np.arange(idesc.n)[None, :]]
            if enable_input:
                prod = prod + _d_values(actx.tmem_read(lanes, cols, **extra), idesc.d)
            actx.tmem_write(lanes, cols, _d_bits(prod, idesc.d), **extra)

    ctx.issue("tcgen05", complete, f"tcgen05.mma.cta_group::{cta_group}.kind::{kind}")


def _sim_mma(ctx, call) -> None:
    """``D (+)= A @ B^T`` (M x N, fp32 / f16 / int32 accumulators in TMEM) from the decoded
    instruction descriptor (M, N, formats, majors, negation) and operand descriptors; A from
    shared memory or TMEM. cta_group::2: the even CTA of the pair issues; each CTA's TMEM gets
    its M/2 rows, B's N/2-row halves come from both CTAs' shared memory."""
    _sim_mma_common(ctx, call, None)


def _sim_mma_block_scale(ctx, call) -> None:
    """As :func:`_sim_mma`, each K block of ``K / scale_vec`` elements of A's row r and B's row
    n multiplied by its scale factor (UE8M0 or UE4M3, from the instruction descriptor) read
    from TMEM at ``sfa`` / ``sfb``."""
    _sim_mma_common(ctx, call, call.attr("scale_vec"))


def _lower_mma(call, gen) -> str:
    d, a, b, idesc, acc = call.args
    g, kind = call.attr("cta_group"), call.attr("kind")
    a_operand, a_input = (
        ("[%1]", f'"r"({gen.expr(a)})')
        if call.attr("a_tmem")
        else ("%1", f'"l"((uint64_t)({gen.expr(a)}))')
    )
    text = (
        "{\\n.reg .pred p;\\n"
        "setp.ne.b32 p, %4, 0;\\n"
        f"tcgen05.mma.cta_group::{g}.kind::{kind} [%0], {a_operand}, %2, %3, p;\\n}}"
    )
    ins = (
        f'"r"({gen.expr(d)}), {a_input}, "l"((uint64_t)({gen.expr(b)})), '
        f'"r"({gen.expr(idesc)}), "r"((int32_t)({gen.expr(acc)}))'
    )
    return asm(text, "", ins)


@intrinsic("ptx.tcgen05.mma", feature="tcgen05", lower=_lower_mma, sim=_sim_mma)
def tcgen05_mma(
    d_tmem,
    a,
    b_desc,
    idesc,
    *,
    accumulate=1,
    cta_group: int = 1,
    kind: str = "f16",
    a_col=0,
):
    """``tcgen05.mma.cta_group::N.kind::{kind} [d], a, bdesc, idesc, enable_input_d``.

    ``d_tmem`` is a TMEM buffer or address; ``a`` is a shared-memory descriptor
    (``T.ptx.tcgen05.desc``) or a TMEM buffer (A read from tensor memory, ``[a]``,
    starting ``a_col`` 32-bit columns into it: K step k of packed 16-bit A is at
    ``a_col = k * K / 2``); ``idesc`` is :func:`tilemem.layout.operand.instr_descriptor`
    of the same kind.
    """
    if kind not in _DENSE_KINDS:
        raise IRError(
            f"tcgen05.mma kind::{kind}: dense kinds are {', '.join(_DENSE_KINDS)}; block-scaled "
            "ones go through T.ptx.tcgen05.mma_block_scale"
        )
    a_in_tmem = isinstance(a, Buffer) and a.scope == TMEM
    if a_in_tmem:
        a = tmem_addr(a, col=a_col)
    elif not (isinstance(a_col, int) and a_col == 0):
        raise IRError(
            "a_col offsets an A operand in TMEM; a shared-memory A moves by its descriptor"
        )
    args = (
        _tmem_operand(d_tmem),
        convert(a),
        convert(b_desc),
        Const(int(idesc), UINT32),
        convert(accumulate),
    )
    return args, (_cta_group(cta_group), ("a_tmem", a_in_tmem), ("kind", kind))


def _lower_mma_block_scale(call, gen) -> str:
    d, a, b, idesc, sfa, sfb, acc = call.args
    g, kind, vec = call.attr("cta_group"), call.attr("kind"), call.attr("scale_vec")
    text = (
        "{\\n.reg .pred p;\\n"
        "setp.ne.b32 p, %6, 0;\\n"
        f"tcgen05.mma.cta_group::{g}.kind::{kind}.block_scale.scale_vec::{vec}X "
        "[%0], %1, %2, %3, [%4], [%5], p;\\n}"
    )
    ins = (
        f'"r"({gen.expr(d)}), "l"((uint64_t)({gen.expr(a)})), "l"((uint64_t)({gen.expr(b)})), '
        f'"r"({gen.expr(idesc)}), "r"({gen.expr(sfa)}), "r"({gen.expr(sfb)}), '
        f'"r"((int32_t)({gen.expr(acc)}))'
    )
    return asm(text, "", ins)


_SCALE_VECS = {"mxf8f6f4": (1,), "mxf4": (2,), "mxf4nvf4": (2, 4)}


@intrinsic(
    "ptx.tcgen05.mma_block_scale",
    feature="tcgen05",
    instruction="tcgen05.mma.block_scale",
    lower=_lower_mma_block_scale,
    sim=_sim_mma_block_scale,
)
def tcgen05_mma_block_scale(
    d_tmem,
    a_desc,
    b_desc,
    idesc,
    sfa_tmem,
    sfb_tmem,
    *,
    kind: str,
    scale_vec: int,
    accumulate=1,
    cta_group: int = 1,
):
    """``tcgen05.mma.cta_group::N.kind::{kind}.block_scale.scale_vec::{V}X [d], adesc, bdesc,
    idesc, [sfa], [sfb], enable_input_d`` (PTX ISA 9.0, "tcgen05.mma").

    A and B come from shared memory; the scale factors from TMEM (``sfa_tmem`` /
    ``sfb_tmem``: TMEM buffers or addresses, e.g. ``T.tmem_addr(sfa, col=...)``).
    mxf8f6f4 scales with 1X, mxf4 with 2X, mxf4nvf4 with 2X (UE8M0) or 4X (UE4M3).
    """
    if kind not in _SCALE_VECS:
        raise IRError(
            f"block-scaled tcgen05.mma kinds are {', '.join(_SCALE_VECS)}, got kind::{kind}"
        )
    if scale_vec not in _SCALE_VECS[kind]:
        raise IRError(
            f"kind::{kind} takes scale_vec::{'X/'.join(map(str, _SCALE_VECS[kind]))}X, got "
            f"scale_vec {scale_vec!r}"
        )
    args = (
        _tmem_operand(d_tmem),
        convert(a_desc),
        convert(b_desc),
        Const(int(idesc), UINT32),
        _tmem_operand(sfa_tmem),
        _tmem_operand(sfb_tmem),
        convert(accumulate),
    )
    return args, (_cta_group(cta_group), ("kind", kind), ("scale_vec", scale_vec))


# tcgen05.cp shapes and the multicast each needs (PTX ISA 9.0, "tcgen05.cp")
_CP_SHAPES = {
    "128x256b": (None,),
    "4x256b": (None,),
    "128x128b": (None,),
    "64x128b": ("warpx2::02_13", "warpx2::01_23"),
    "32x128b": ("warpx4",),
}


def _cp_lanes(shape: str, multicast: str) -> np.ndarray:
    """TMEM lanes (relative to the address's lane) that each source row of a ``tcgen05.cp``
    lands in: ``(rows, copies)`` (PTX ISA 9.0, "tcgen05.cp", and CuTe's ``SM100_UTCCP_*``
    copy traits).

    ``128x256b`` / ``128x128b``: row r to lane r. ``4x256b``: row i to lane 32 i (one lane in
    each quarter). ``32x128b.warpx4``: row r to lane r of every quarter, 32 q + r.
    ``64x128b.warpx2::02_13``: row r to lanes r and r + 64 (rows 0-31 in quarters 0 and 2,
    32-63 in 1 and 3). ``64x128b.warpx2::01_23``: row r to 64 (r // 32) + r % 32 and 32
    lanes further (rows 0-31 in quarters 0 and 1, 32-63 in 2 and 3).
    """
    rows = int(shape.split("x")[0])
    r = np.arange(rows)[:, None]
    if shape == "4x256b":
        return 32 * r
    if multicast == "warpx4":
        return r + 32 * np.arange(4)[None, :]
    if multicast == "warpx2::02_13":
        return r + 64 * np.arange(2)[None, :]
    if multicast == "warpx2::01_23":
        return 64 * (r // 32) + r % 32 + 32 * np.arange(2)[None, :]
    return r


def _sim_cp(ctx, call) -> None:
    """Copy a rows x bits matrix from shared memory (through its descriptor, K-major: row r
    of the core-matrix layout, its 16-byte chunks ``LBO`` apart; ``4x256b`` reads the first
    4 rows of one) into TMEM: each row to the lanes :func:`_cp_lanes` gives (from the
    address's lane), its bytes to 32-bit columns from the address's column, low byte
    first. ``cta_group::2``: the even CTA of the pair issues, and each CTA of the pair copies
    from its own shared memory (same descriptor) into its own TMEM (CuTe's ``_2cta`` UTCCP
    atoms: the same source and destination layout for both peers)."""
    taddr, s_desc = ctx.uniform(0), ctx.uniform(1)
    shape, multicast = call.attr("shape"), call.attr("multicast")
    rows, row_bits = (int(x) for x in shape.rstrip("b").split("x"))
    lanes = (taddr >> 16) + _cp_lanes(shape, multicast)
    col0 = taddr & 0xFFFF
    ranks = _issuing_pair(ctx, call.attr("cta_group"), "tcgen05.cp")
    if ranks is None:
        return

    def complete(actx) -> None:
        addrs = operand_addresses(_checked_descriptor(s_desc), max(rows, 8), row_bits // 8, 8)
        for rank in ranks:
            extra = {} if rank is None else {"rank": rank}
            raw = actx.smem_read(addrs[:rows], 1, **extra)[..., 0].astype(np.uint32)
            cells = raw.reshape(rows, -1, 4) << (8 * np.arange(4, dtype=np.uint32))
            words = np.bitwise_or.reduce(cells, axis=2)  # (rows, columns)
            cols = col0 + np.arange(words.shape[1])[None, :]
            for copy in range(lanes.shape[1]):
                actx.tmem_write(lanes[:, copy : copy + 1], cols, words, **extra)

    ctx.issue("tcgen05", complete, f"tcgen05.cp.{shape}")


@intrinsic(
    "ptx.tcgen05.cp",
    feature="tcgen05",
    sim=_sim_cp,
    lower=lambda call, gen: asm(
        f"tcgen05.cp.cta_group::{call.attr('cta_group')}.{call.attr('shape')}"
        + (f".{call.attr('multicast')}" if call.attr("multicast") else "")
        + " [%0], %1;",
        "",
        f'"r"({gen.expr(call.args[0])}), "l"((uint64_t)({gen.expr(call.args[1])}))',
    ),
)
def tcgen05_cp(taddr, s_desc, *, shape: str, multicast: str | None = None, cta_group: int = 1):
    """``tcgen05.cp.cta_group::N.{shape}{.multicast} [taddr], sdesc``: copy a matrix from shared
    memory (described by ``s_desc``, ``T.ptx.tcgen05.desc``) into TMEM at ``taddr``.

    ``32x128b`` with ``warpx4`` copies 32 rows of 16 bytes into every lane quarter (how
    block-scale factors reach TMEM, ``sf_tmem_layout``); ``64x128b`` needs a ``warpx2``
    multicast; ``128x256b``, ``4x256b`` and ``128x128b`` take none.
    """
    if shape not in _CP_SHAPES:
        raise IRError(f"tcgen05.cp shape must be one of {', '.join(_CP_SHAPES)}, got {shape!r}")
    if multicast not in _CP_SHAPES[shape]:
        allowed = " or ".join(str(m) for m in _CP_SHAPES[shape])
        raise IRError(f"tcgen05.cp .{shape} takes multicast {allowed}, got {multicast!r}")
    return (_tmem_operand(taddr), convert(s_desc)), (
        _cta_group(cta_group),
        ("shape", shape),
        ("multicast", multicast or ""),
    )


def _sim_commit(ctx, call) -> None:
    """Arrive once on the mbarrier when every tcgen05 operation the warp issued before has
    completed (the in-order queue runs it after them)."""
    bar = ctx.uniform(0)
    ctx.issue("tcgen05", lambda actx: actx.mbarrier_arrive(bar), "tcgen05.commit")


@intrinsic(
    "ptx.tcgen05.commit",
    feature="tcgen05",
    sim=_sim_commit,
    lower=lambda call, gen: asm(
        f"tcgen05.commit.cta_group::{call.attr('cta_group')}.mbarrier::arrive::one"
        ".shared::cluster.b64 [%0];",
        "",
        f'"r"({gen.expr(call.args[0])})',
    ),
)
def tcgen05_commit(bar, *, cta_group: int = 1):
    """``tcgen05.commit...mbarrier::arrive::one``: arrive on ``bar`` when prior MMAs complete."""
    return (shared_operand(bar),), (_cta_group(cta_group),)


# -- TMEM addresses and the pool protocol (docs/DESIGN.md#tmem-pools) ---


def tmem_addr(buf: Buffer, lane=0, col=0) -> Expr:
    """``base + (lane << 16) + col_offset + col``; ``col`` counts 32-bit columns from the buffer's
    start."""
    if not isinstance(buf, Buffer) or buf.scope != TMEM:
        raise IRError(f"tmem_addr takes a TMEM buffer, got {buf!r}")
    builder = current()
    if buf.pool not in builder.tmem_bases:
        raise IRError(
            f"TMEM buffer {buf.name!r}: read the pool's base first with T.tmem_base(pool) "
            "(after its commit), so addresses use what tcgen05.alloc returned rather than 0"
        )
    base = builder.tmem_bases[buf.pool]
    lane_part = binop("<<", lane, 16)
    return binop("+", binop("+", base, lane_part), binop("+", convert(buf.col_offset), col))


def tmem_alloc_protocol(pool) -> None:
    """Warp ``alloc_warp`` allocates ``total_cols`` into the pool's slot, then ``__syncwarp``."""
    builder = current()
    with builder.frame() as body:
        tcgen05_alloc(pool.slot, pool.total_cols, cta_group=pool.cta_group)
        if pool.sync_after_alloc:
            syncwarp()
    builder.emit(
        Comment(
            f"TMEM: warp {pool.alloc_warp} allocates {pool.total_cols} columns "
            f"(cta_group::{pool.cta_group}); the base address lands in {pool.slot.name}"
        )
    )
    builder.emit(IfThenElse(warp_id() == pool.alloc_warp, SeqStmt(tuple(body))))


def tmem_dealloc_protocol(pool) -> None:
    """Warp ``dealloc_warp`` relinquishes the allocation permit and frees the columns."""
    builder = current()
    with builder.frame() as body:
        base = Load(builder.smem_vars[pool.slot], convert(0), UINT32)
        tcgen05_relinquish(cta_group=pool.cta_group)
        tcgen05_dealloc(base, pool.total_cols, cta_group=pool.cta_group)
    builder.emit(Comment(f"TMEM: warp {pool.dealloc_warp} gives back {pool.total_cols} columns"))
    builder.emit(IfThenElse(warp_id() == pool.dealloc_warp, SeqStmt(tuple(body))))


def tmem_base(pool) -> Var:
    """Read the TMEM base that ``tcgen05.alloc`` wrote, after the fence / barrier / fence handshake.

    Every thread of the block must reach this call (it contains ``__syncthreads``).
    """
    builder = current()
    if pool in builder.tmem_bases:
        return builder.tmem_bases[pool]
    if not pool.committed:
        raise PoolStateError(
            f"TMEM pool {pool.name!r}: commit() it (which emits tcgen05.alloc) before reading its "
            "base"
        )
    builder.emit(Comment(f"TMEM: publish the base address of {pool.name} to every warp"))
    tcgen05_fence_before()
    syncthreads()
    tcgen05_fence_after()
    var = let(f"{pool.name}_base", Load(builder.smem_vars[pool.slot], convert(0), UINT32), "uint32")
    builder.tmem_bases[pool] = var
    return var
