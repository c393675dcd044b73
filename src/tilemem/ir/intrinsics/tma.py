"""TMA bulk tensor copies (PTX ISA 9.0: "cp.async.bulk.tensor", "cp.async.bulk.commit_group",
"cp.async.bulk.wait_group")."""

from __future__ import annotations

from ...layout.tma import TMAFill, tma_fill
from ...pool import SMEM, Buffer
from ..builder import current
from ..nodes import IRError, TensorMapVar, binop, convert
from .registry import asm, expose, intrinsic, pending_groups
from .thread import shared_operand


def _coords(coords) -> tuple:
    coords = tuple(convert(c) for c in coords)
    if not 1 <= len(coords) <= 5:
        raise IRError(f"a bulk tensor copy takes 1 to 5 coordinates, got {len(coords)}")
    return coords


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
)
def tma_load(tmap: TensorMapVar, dst, bar, coords, multicast_mask=None):
    """``cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes``."""
    if not isinstance(tmap, TensorMapVar):
        raise IRError(f"tma_load reads through a T.TensorMap kernel parameter, got {tmap!r}")
    attrs: list[tuple] = [("rank", len(tuple(coords)))]
    args = [tmap, shared_operand(dst), shared_operand(bar), *_coords(coords)]
    if multicast_mask is not None:
        current().target.require("cluster", "TMA multicast")
        attrs.append(("multicast", True))
        args.append(convert(multicast_mask))
    return args, attrs


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
)
def tma_store(tmap: TensorMapVar, src, coords):
    if not isinstance(tmap, TensorMapVar):
        raise IRError(f"tma_store writes through a T.TensorMap kernel parameter, got {tmap!r}")
    return [tmap, shared_operand(src), *_coords(coords)], [("rank", len(tuple(coords)))]


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
)
def bulk_commit_group():
    return (), ()


@intrinsic(
    "ptx.tma.wait_group_read",
    feature="tma",
    instruction="cp.async.bulk.wait_group.read",
    lower=lambda call, gen: asm(f"cp.async.bulk.wait_group.read {call.attr('n')};"),
)
def bulk_wait_group_read(n: int = 0):
    return (), (("n", pending_groups(n, "cp.async.bulk.wait_group.read")),)


@intrinsic(
    "ptx.tma.wait_group",
    feature="tma",
    instruction="cp.async.bulk.wait_group",
    lower=lambda call, gen: asm(f"cp.async.bulk.wait_group {call.attr('n')};"),
)
def bulk_wait_group(n: int = 0):
    """At most ``n`` bulk groups pending, their writes to global memory done (not only read)."""
    return (), (("n", pending_groups(n, "cp.async.bulk.wait_group")),)
