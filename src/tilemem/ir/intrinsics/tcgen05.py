"""Blackwell tensor memory and MMA (PTX ISA 9.0: "tcgen05"), and the TMEM pool protocol.

A TMEM address is ``base + (lane << 16) + column`` where ``base`` is what
``tcgen05.alloc`` wrote to the pool's shared-memory slot (docs/DESIGN.md#tmem-pools).
"""

from __future__ import annotations

from ...errors import PoolStateError
from ...layout.operand import tcgen05_descriptor_high
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


@intrinsic(
    "ptx.tcgen05.alloc",
    feature="tcgen05",
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
)
def tcgen05_fence_before():
    return (), ()


@intrinsic(
    "ptx.tcgen05.fence_after_thread_sync",
    feature="tcgen05",
    instruction="tcgen05.fence::after_thread_sync",
    ptx="tcgen05.fence::after_thread_sync;",
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


@intrinsic("ptx.tcgen05.ld", feature="tcgen05", lower=_lower_ld)
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


@intrinsic("ptx.tcgen05.st", feature="tcgen05", lower=_lower_st)
def tcgen05_st(taddr, src: LocalArray, *, num: int):
    _check_registers("tcgen05.st", num, src, "from")
    return (convert(taddr), src.var), (("num", num),)


@intrinsic(
    "ptx.tcgen05.wait_ld",
    feature="tcgen05",
    instruction="tcgen05.wait::ld",
    ptx="tcgen05.wait::ld.sync.aligned;",
)
def tcgen05_wait_ld():
    return (), ()


@intrinsic(
    "ptx.tcgen05.wait_st",
    feature="tcgen05",
    instruction="tcgen05.wait::st",
    ptx="tcgen05.wait::st.sync.aligned;",
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


@intrinsic("ptx.tcgen05.mma", feature="tcgen05", lower=_lower_mma)
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


@intrinsic(
    "ptx.tcgen05.cp",
    feature="tcgen05",
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


@intrinsic(
    "ptx.tcgen05.commit",
    feature="tcgen05",
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
