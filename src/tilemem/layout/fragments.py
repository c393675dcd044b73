"""Which thread's which register holds which matrix element: the wgmma accumulator fragment,
the tcgen05.ld / st shapes, and where tcgen05.mma leaves its result in tensor memory.

Every function is vectorised: it answers for all threads and registers at once as numpy
arrays, the form a simulator moving a whole warp's registers needs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..errors import LayoutError
from .tmem import TMEM_LANES, tmem_datapath_layout

_WGMMA_N = range(8, 257, 8)


def wgmma_accumulator(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of accumulator register ``i`` of thread ``t`` of the warpgroup, for
    ``wgmma .m64n{n}`` with 32-bit accumulators (f32, s32): arrays of shape (128, n // 2).

    PTX ISA 9.0, "wgmma: Register Fragments", the D matrix figure: warp ``w = t // 32``
    owns rows ``16 w .. 16 w + 15``; with ``lane = t % 32``::

        row = 16 w + lane // 4 + 8 * ((i // 2) % 2)
        col = 8 * (i // 4) + 2 * (lane % 4) + i % 2

    (CuTe's ``CLayout_64xN``: ``((4,8,4),(2,2,N/8)) : ((128,1,16),(64,8,512))``.)
    """
    if n not in _WGMMA_N:
        raise LayoutError(f"wgmma N is a multiple of 8 in [8, 256], got {n!r}")
    t = np.arange(128)[:, None]
    i = np.arange(n // 2)[None, :]
    lane, warp = t % 32, t // 32
    row = 16 * warp + lane // 4 + 8 * ((i // 2) % 2)
    col = 8 * (i // 4) + 2 * (lane % 4) + i % 2
    return np.broadcast_to(row, (128, n // 2)).copy(), np.broadcast_to(col, (128, n // 2)).copy()


# -- tcgen05.ld / tcgen05.st --------------------------------------------------------------


@dataclass(frozen=True)
class TmemShape:
    """A ``tcgen05.ld/st`` shape: the lanes it touches, the 32-bit columns and registers of one
    repetition (``.num`` repeats it along the columns), the largest ``.num``."""

    name: str
    lanes: int
    cols_per_rep: int
    regs_per_rep: int
    max_num: int


TMEM_SHAPES = {
    s.name: s
    for s in (
        TmemShape("32x32b", 32, 1, 1, 128),
        TmemShape("16x64b", 16, 2, 1, 128),
        TmemShape("16x128b", 16, 4, 2, 64),
        TmemShape("16x256b", 16, 8, 4, 32),
        TmemShape("16x32bx2", 16, 1, 1, 128),
    )
}


def tmem_shape(shape: str, num: int) -> TmemShape:
    if shape not in TMEM_SHAPES:
        raise LayoutError(
            f"tcgen05.ld/st shape must be one of {', '.join(TMEM_SHAPES)}, got {shape!r}"
        )
    s = TMEM_SHAPES[shape]
    if num not in [1 << k for k in range(s.max_num.bit_length())]:
        raise LayoutError(
            f"tcgen05.ld/st .{shape}: .num is a power of two in [1, {s.max_num}], got {num!r}"
        )
    return s


def tmem_ld_cells(shape: str, num: int, half_split: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(lane offset, column offset) from the instruction's TMEM address of register ``r`` of
    lane ``t``, for ``tcgen05.ld/st .{shape}.x{num}``: arrays of shape (32, regs).

    Registers are repetition-major (``r = rep * regs_per_rep + j``); repetition ``rep``
    adds ``rep * cols_per_rep`` columns. Per repetition (PTX ISA 9.0, "tcgen05 Matrix
    fragments" for each shape; the same maps as CuTe's ``SM100_TMEM_LOAD_*`` copy traits,
    ``cute/atom/copy_traits_sm100.hpp``):

    - 32x32b: lane ``t``, column 0.
    - 16x64b: lane ``t // 4 + 8 (t % 2)``, column ``(t // 2) % 2``.
    - 16x128b: register j in 0..1: lane ``t // 4 + 8 j``, column ``t % 4``.
    - 16x256b: register j in 0..3: lane ``t // 4 + 8 (j // 2)``, column ``2 (t % 4) + j % 2``.
    - 16x32bx2: lane ``t % 16``, column ``(t // 16) * half_split`` (the instruction's
      ``immHalfSplitoff``: the upper 16 threads read that many columns further).
    """
    s = tmem_shape(shape, num)
    if shape == "16x32bx2" and not (isinstance(half_split, int) and half_split >= 0):
        raise LayoutError(
            f"16x32bx2 needs a column offset immHalfSplitoff >= 0, got {half_split!r}"
        )
    t = np.arange(32)[:, None]
    r = np.arange(s.regs_per_rep * num)[None, :]
    rep, j = r // s.regs_per_rep, r % s.regs_per_rep
    if shape == "32x32b":
        lane, col = t + 0 * j, 0 * j + 0 * t
    elif shape == "16x64b":
        lane, col = t // 4 + 8 * (t % 2) + 0 * j, (t // 2) % 2 + 0 * j
    elif shape == "16x128b":
        lane, col = t // 4 + 8 * j, t % 4 + 0 * j
    elif shape == "16x256b":
        lane, col = t // 4 + 8 * (j // 2), 2 * (t % 4) + j % 2
    else:
        lane, col = t % 16 + 0 * j, (t // 16) * half_split + 0 * j
    col = col + rep * s.cols_per_rep
    full = (32, s.regs_per_rep * num)
    return np.broadcast_to(lane, full).copy(), np.broadcast_to(col, full).copy()


def lane_quarter(warp: int) -> range:
    """TMEM lanes warp ``warp`` of a CTA may access with tcgen05.ld/st: ``32 (warp % 4)`` to
    ``32 (warp % 4) + 31`` (PTX ISA 9.0, "Tensor Memory": access restrictions)."""
    q = warp % 4
    return range(32 * q, 32 * q + 32)


# -- tcgen05.mma results in tensor memory ------------------------------------------------------

_DATAPATHS = {(64, 1): "F", (128, 1): "D", (128, 2): "B", (256, 2): "A"}


@functools.lru_cache(maxsize=64)
def mma_result_cells(m: int, n: int, cta_group: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(lane, column offset) in one CTA's TMEM of the accumulator element (row, col) that CTA
    holds, for dense ``tcgen05.mma.cta_group::{cta_group}`` of shape M x N: arrays of shape
    (M / cta_group, N); the column adds to the instruction's D address.

    cta_group::1: M=128 data path D (row r in lane r), M=64 data path F (16 rows per lane
    quarter). cta_group::2: each CTA of the pair holds M/2 rows (the even CTA rows 0..M/2-1,
    its peer the rest), M=256 through data path A (128 lanes), M=128 through B (64 lanes,
    the right half of N folded onto lanes 64-127) (PTX ISA 9.0, "Data path layout
    organization"; :func:`tilemem.layout.tmem_datapath_layout`).
    """
    key = (m, cta_group)
    if key not in _DATAPATHS:
        raise LayoutError(
            f"tcgen05.mma M={m} with cta_group::{cta_group}: dense shapes are M 64/128 "
            "(cta_group::1) and 128/256 (cta_group::2)"
        )
    rows = m // cta_group
    pos = tmem_datapath_layout(_DATAPATHS[key], rows, n).positions()  # row-major (rows, n)
    lanes, cols = pos["TLane"].reshape(rows, n), pos["TCol"].reshape(rows, n)
    assert lanes.max() < TMEM_LANES
    lanes.flags.writeable = cols.flags.writeable = False  # cached: shared by every caller
    return lanes, cols
