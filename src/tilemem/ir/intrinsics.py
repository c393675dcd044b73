"""Intrinsic calls: synchronisation, mbarriers, TMA, wgmma and tcgen05.

Each function checks that the kernel's target has the instruction (a clear
error names both otherwise), then appends an ``ExprStmt(Call(...))`` or
returns a value-producing ``Call``. ``cuda/intrinsics.py`` lowers each op.
"""

from __future__ import annotations

from ..dtype import as_dtype
from ..errors import PoolStateError
from ..layout import layout_swizzle_mode
from ..layout.operand import (
    operand_byte_offset,
    operand_geometry,
    tcgen05_descriptor_high,
    wgmma_descriptor_high,
)
from ..pool import SMEM, TMEM, Buffer
from .builder import LocalArray, current, let, smem_addr, tmem_addr, warp_id
from .index import layout_index
from .nodes import (
    BOOL,
    INT32,
    UINT32,
    UINT64,
    Call,
    Cast,
    Comment,
    Const,
    Expr,
    ExprStmt,
    IfThenElse,
    IRError,
    Load,
    SeqStmt,
    TensorMapVar,
    Var,
    binop,
    convert,
)


def _emit(op: str, args=(), attrs=(), feature: str | None = None, instruction: str = "") -> None:
    builder = current()
    if feature:
        builder.require(feature, instruction or op)
    builder.emit(ExprStmt(Call(op, tuple(args), INT32, tuple(attrs))))


def _value(
    op: str, args, dtype, attrs=(), feature: str | None = None, instruction: str = ""
) -> Expr:
    if feature:
        current().require(feature, instruction or op)
    return Call(op, tuple(args), dtype, tuple(attrs))


def _addr(x) -> Expr:
    """A shared-memory operand: a pool Buffer (its first element) or a 32-bit address expression."""
    if isinstance(x, Buffer):
        return smem_addr(x)
    if isinstance(x, tuple) and x and isinstance(x[0], Buffer):
        return smem_addr(x[0], *x[1:])
    return convert(x)


def _cta_group(n: int) -> int:
    if n not in (1, 2):
        raise IRError(f"cta_group must be 1 or 2, got {n!r}")
    return n


# -- thread synchronisation -------------------------------------------------------------


def syncthreads() -> None:
    _emit("cuda.syncthreads")


def syncwarp(mask: int = 0xFFFFFFFF) -> None:
    _emit("cuda.syncwarp", (Const(mask, UINT32),))


def named_barrier(barrier_id: int, threads: int) -> None:
    """``bar.sync id, threads``: synchronise a subset of warps (``threads`` a multiple of 32)."""
    if not 0 <= barrier_id < 16 or threads % 32 or threads <= 0:
        raise IRError(
            "bar.sync takes an id in [0, 16) and a positive multiple of 32 threads, got "
            f"{barrier_id}, {threads}"
        )
    _emit("cuda.named_barrier", (), (("id", barrier_id), ("threads", threads)))


def pack_bf16x2(lo, hi) -> Expr:
    """Two floats rounded to bfloat16 and packed into one 32-bit word (``lo`` in the low half)."""
    return Call("cuda.pack_bf16x2", (convert(lo), convert(hi)), UINT32)


def elect_sync() -> Expr:
    """True in exactly one lane of the (fully active) warp."""
    return _value("ptx.elect_sync", (), BOOL, feature="elect.sync", instruction="elect.sync")


# -- mbarriers and fences -----------------------------------------------------------------


def mbarrier_init(bar, count) -> None:
    _emit(
        "ptx.mbarrier.init",
        (_addr(bar), convert(count)),
        feature="mbarrier",
        instruction="mbarrier.init",
    )


def mbarrier_arrive(bar) -> None:
    _emit("ptx.mbarrier.arrive", (_addr(bar),), feature="mbarrier", instruction="mbarrier.arrive")


def mbarrier_arrive_expect_tx(bar, tx_bytes) -> None:
    _emit(
        "ptx.mbarrier.arrive_expect_tx",
        (_addr(bar), convert(tx_bytes)),
        feature="mbarrier.tx",
        instruction="mbarrier.arrive.expect_tx",
    )


def mbarrier_try_wait_parity(bar, parity) -> Expr:
    return _value(
        "ptx.mbarrier.try_wait_parity",
        (_addr(bar), convert(parity)),
        BOOL,
        feature="mbarrier.tx",
        instruction="mbarrier.try_wait.parity",
    )


def mbarrier_wait(bar, parity) -> None:
    """Spin on ``mbarrier.try_wait.parity`` until the phase with ``parity`` completes."""
    _emit(
        "ptx.mbarrier.wait_parity",
        (_addr(bar), convert(parity)),
        feature="mbarrier.tx",
        instruction="mbarrier.try_wait.parity",
    )


def fence_proxy_async_shared_cta() -> None:
    _emit(
        "ptx.fence.proxy_async_shared_cta",
        feature="fence.proxy.async",
        instruction="fence.proxy.async.shared::cta",
    )


def fence_mbarrier_init() -> None:
    _emit(
        "ptx.fence.mbarrier_init",
        feature="mbarrier.tx",
        instruction="fence.mbarrier_init.release.cluster",
    )


# -- TMA -------------------------------------------------------------------------------------


def _coords(coords) -> tuple:
    coords = tuple(convert(c) for c in coords)
    if not 1 <= len(coords) <= 5:
        raise IRError(f"a bulk tensor copy takes 1 to 5 coordinates, got {len(coords)}")
    return coords


def tma_load(tmap: TensorMapVar, dst, bar, coords, multicast_mask=None) -> None:
    """``cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes``."""
    if not isinstance(tmap, TensorMapVar):
        raise IRError(f"tma_load reads through a T.TensorMap kernel parameter, got {tmap!r}")
    attrs = [("rank", len(tuple(coords)))]
    args = [tmap, _addr(dst), _addr(bar), *_coords(coords)]
    if multicast_mask is not None:
        current().require("cluster", "TMA multicast")
        attrs.append(("multicast", True))
        args.append(convert(multicast_mask))
    _emit("ptx.tma.load", args, attrs, feature="tma", instruction="cp.async.bulk.tensor (TMA load)")


def tma_store(tmap: TensorMapVar, src, coords) -> None:
    if not isinstance(tmap, TensorMapVar):
        raise IRError(f"tma_store writes through a T.TensorMap kernel parameter, got {tmap!r}")
    _emit(
        "ptx.tma.store",
        [tmap, _addr(src), *_coords(coords)],
        [("rank", len(tuple(coords)))],
        feature="tma",
        instruction="cp.async.bulk.tensor (TMA store)",
    )


def _tile_boxes(buf: Buffer):
    """(C, boxes): a tile (..., R, K) moves as K / C boxes one swizzle row (or 16 bytes) wide."""
    if not isinstance(buf, Buffer) or buf.scope != SMEM or len(buf.shape) < 2:
        raise IRError(f"a tile copy needs a shared-memory buffer of shape (..., R, K), got {buf!r}")
    per_box = layout_swizzle_mode(buf.layout).row_bytes * 8 // buf.dtype.bits
    if buf.shape[-1] % per_box:
        raise IRError(
            f"{buf.name}: K = {buf.shape[-1]} is not a multiple of the {per_box}-element TMA box "
            "row"
        )
    return per_box, buf.shape[-1] // per_box


def tma_load_tile(tmap: TensorMapVar, buf: Buffer, bar, row, col, *lead) -> None:
    """Load the (R, K) tile at global (row, col) into ``buf[lead...]``: one box per K column
    block."""
    per_box, boxes = _tile_boxes(buf)
    for b in range(boxes):
        tma_load(tmap, (buf, *lead, 0, b * per_box), bar, [binop("+", col, b * per_box), row])


def tma_store_tile(tmap: TensorMapVar, buf: Buffer, row, col, *lead) -> None:
    """Store ``buf[lead...]`` to the global tile at (row, col), box by box."""
    per_box, boxes = _tile_boxes(buf)
    for b in range(boxes):
        tma_store(tmap, (buf, *lead, 0, b * per_box), [binop("+", col, b * per_box), row])


def bulk_commit_group() -> None:
    _emit("ptx.bulk.commit_group", feature="tma", instruction="cp.async.bulk.commit_group")


def bulk_wait_group_read(n: int = 0) -> None:
    _emit(
        "ptx.bulk.wait_group_read",
        (),
        (("n", int(n)),),
        feature="tma",
        instruction="cp.async.bulk.wait_group.read",
    )


# -- wgmma (sm_90a) -----------------------------------------------------------------------


def _descriptor(buf: Buffer, coords, high_fn) -> Expr:
    if not isinstance(buf, Buffer) or buf.scope != SMEM:
        raise IRError(f"an MMA descriptor describes a shared-memory buffer, got {buf!r}")
    coords = tuple(coords) if coords else (0,) * len(buf.shape)
    if len(coords) != len(buf.shape):
        raise IRError(
            f"{buf.name} has {len(buf.shape)} dimensions; give all of them (stage..., row, k)"
        )
    geometry = operand_geometry(buf.layout, buf.dtype)
    offset: int | Expr
    if all(isinstance(c, int) for c in coords):
        offset = operand_byte_offset(buf.layout, buf.dtype, coords)
    else:  # run-time coordinates: the unswizzled tile offset as arithmetic
        tile = getattr(buf.layout, "tile", buf.layout)
        elements = layout_index(tile, coords)["m"]
        offset = binop("//", binop("*", elements, buf.dtype.bits), 8)
    start = binop("+", smem_addr(buf), offset)
    low = Cast(binop("&", binop(">>", start, 4), 0x3FFF), UINT64)
    return binop("|", Const(high_fn(geometry), UINT64), low)


def wgmma_desc(buf: Buffer, *coords) -> Expr:
    """wgmma shared-memory descriptor of ``buf`` starting at ``coords`` (stage..., row, k)."""
    current().require("wgmma", "wgmma descriptor")
    return _descriptor(buf, coords, wgmma_descriptor_high)


_WGMMA_N = set(range(8, 257, 8))


def wgmma_fence() -> None:
    _emit("ptx.wgmma.fence", feature="wgmma", instruction="wgmma.fence")


def wgmma_commit_group() -> None:
    _emit("ptx.wgmma.commit_group", feature="wgmma", instruction="wgmma.commit_group")


def wgmma_wait_group(n: int = 0) -> None:
    _emit(
        "ptx.wgmma.wait_group",
        (),
        (("n", int(n)),),
        feature="wgmma",
        instruction="wgmma.wait_group",
    )


def wgmma_mma_async(
    acc: LocalArray, a_desc, b_desc, *, n: int, dtype="bfloat16", scale_d=1
) -> None:
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
    _emit(
        "ptx.wgmma.mma_async",
        (acc.var, convert(a_desc), convert(b_desc), convert(scale_d)),
        (("n", n), ("dtype", dtype.name)),
        feature="wgmma",
        instruction="wgmma.mma_async",
    )


# -- tcgen05 (sm_100a) ---------------------------------------------------------------------


def tcgen05_alloc(slot, ncols: int, *, cta_group: int = 1) -> None:
    _emit(
        "ptx.tcgen05.alloc",
        (_addr(slot), Const(int(ncols), UINT32)),
        (("cta_group", _cta_group(cta_group)),),
        feature="tcgen05",
        instruction="tcgen05.alloc",
    )


def tcgen05_dealloc(taddr, ncols: int, *, cta_group: int = 1) -> None:
    _emit(
        "ptx.tcgen05.dealloc",
        (convert(taddr), Const(int(ncols), UINT32)),
        (("cta_group", _cta_group(cta_group)),),
        feature="tcgen05",
        instruction="tcgen05.dealloc",
    )


def tcgen05_relinquish(*, cta_group: int = 1) -> None:
    _emit(
        "ptx.tcgen05.relinquish",
        (),
        (("cta_group", _cta_group(cta_group)),),
        feature="tcgen05",
        instruction="tcgen05.relinquish_alloc_permit",
    )


def tcgen05_fence_before() -> None:
    _emit(
        "ptx.tcgen05.fence_before",
        feature="tcgen05",
        instruction="tcgen05.fence::before_thread_sync",
    )


def tcgen05_fence_after() -> None:
    _emit(
        "ptx.tcgen05.fence_after", feature="tcgen05", instruction="tcgen05.fence::after_thread_sync"
    )


_LD_NUMS = (1, 2, 4, 8, 16, 32, 64, 128)


def tcgen05_ld(dst: LocalArray, taddr, *, num: int) -> None:
    """``tcgen05.ld.sync.aligned.32x32b.x{num}.b32``: ``num`` consecutive columns of this thread's
    lane."""
    if (
        num not in _LD_NUMS
        or not isinstance(dst, LocalArray)
        or dst.shape[0] < num
        or dst.dtype.bits != 32
    ):
        raise IRError(
            f"tcgen05.ld .32x32b.x{num}: num in {_LD_NUMS} into a 32-bit T.alloc_local of >= num "
            "elements"
        )
    _emit(
        "ptx.tcgen05.ld",
        (dst.var, convert(taddr)),
        (("num", num),),
        feature="tcgen05",
        instruction="tcgen05.ld",
    )


def tcgen05_st(taddr, src: LocalArray, *, num: int) -> None:
    if (
        num not in _LD_NUMS
        or not isinstance(src, LocalArray)
        or src.shape[0] < num
        or src.dtype.bits != 32
    ):
        raise IRError(
            f"tcgen05.st .32x32b.x{num}: num in {_LD_NUMS} from a 32-bit T.alloc_local of >= num "
            "elements"
        )
    _emit(
        "ptx.tcgen05.st",
        (convert(taddr), src.var),
        (("num", num),),
        feature="tcgen05",
        instruction="tcgen05.st",
    )


def tcgen05_wait_ld() -> None:
    _emit("ptx.tcgen05.wait_ld", feature="tcgen05", instruction="tcgen05.wait::ld")


def tcgen05_wait_st() -> None:
    _emit("ptx.tcgen05.wait_st", feature="tcgen05", instruction="tcgen05.wait::st")


def tcgen05_desc(buf: Buffer, *coords) -> Expr:
    """tcgen05 shared-memory descriptor of ``buf`` starting at ``coords`` (stage..., row, k)."""
    current().require("tcgen05", "tcgen05 shared-memory descriptor")
    return _descriptor(buf, coords, tcgen05_descriptor_high)


def tcgen05_mma(d_tmem, a, b_desc, idesc, *, accumulate=1, cta_group: int = 1) -> None:
    """``tcgen05.mma.cta_group::N.kind::f16 [d], a, bdesc, idesc, enable_input_d``.

    ``d_tmem`` is a TMEM buffer or address; ``a`` is a shared-memory descriptor
    (``T.ptx.tcgen05.desc``) or a TMEM buffer (A read from tensor memory, ``[a]``).
    """
    if isinstance(d_tmem, Buffer) and d_tmem.scope == TMEM:
        d_tmem = tmem_addr(d_tmem)
    a_in_tmem = isinstance(a, Buffer) and a.scope == TMEM
    if a_in_tmem:
        a = tmem_addr(a)
    _emit(
        "ptx.tcgen05.mma",
        (
            convert(d_tmem),
            convert(a),
            convert(b_desc),
            Const(int(idesc), UINT32),
            convert(accumulate),
        ),
        (("cta_group", _cta_group(cta_group)), ("a_tmem", a_in_tmem)),
        feature="tcgen05",
        instruction="tcgen05.mma",
    )


def tcgen05_commit(bar, *, cta_group: int = 1) -> None:
    """``tcgen05.commit...mbarrier::arrive::one``: arrive on ``bar`` when prior MMAs complete."""
    _emit(
        "ptx.tcgen05.commit",
        (_addr(bar),),
        (("cta_group", _cta_group(cta_group)),),
        feature="tcgen05",
        instruction="tcgen05.commit",
    )


# -- the TMEM protocol (SPEC section 4) ------------------------------------------------------


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
        base = Load(builder.smem_vars[id(pool.slot)], convert(0), UINT32)
        tcgen05_relinquish(cta_group=pool.cta_group)
        tcgen05_dealloc(base, pool.total_cols, cta_group=pool.cta_group)
    builder.emit(Comment(f"TMEM: warp {pool.dealloc_warp} gives back {pool.total_cols} columns"))
    builder.emit(IfThenElse(warp_id() == pool.dealloc_warp, SeqStmt(tuple(body))))


def tmem_base(pool) -> Var:
    """Read the TMEM base that ``tcgen05.alloc`` wrote, after the fence / barrier / fence handshake.

    Every thread of the block must reach this call (it contains ``__syncthreads``).
    """
    builder = current()
    if id(pool) in builder.tmem_bases:
        return builder.tmem_bases[id(pool)]
    if not pool.committed:
        raise PoolStateError(
            f"TMEM pool {pool.name!r}: commit() it (which emits tcgen05.alloc) before reading its "
            "base"
        )
    builder.emit(Comment(f"TMEM: publish the base address of {pool.name} to every warp"))
    tcgen05_fence_before()
    syncthreads()
    tcgen05_fence_after()
    var = let(
        f"{pool.name}_base", Load(builder.smem_vars[id(pool.slot)], convert(0), UINT32), "uint32"
    )
    builder.tmem_bases[id(pool)] = var
    return var
