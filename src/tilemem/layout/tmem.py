"""Tensor-memory layouts fixed by the tcgen05 data path (sm_100a; PTX ISA "Matrix fragments
for tcgen05.mma", data-path layouts A-G) and by block-scaled MMA scale factors.

Positions are ``TLane`` (0..127) and ``TCol`` counted in elements of the
buffer's dtype; a 32-bit physical column holds ``32 // bits`` of them.

MMA accumulators are the exception: every accumulator element takes a whole
32-bit cell, so a 16-bit (f16) accumulator sits at every other TCol and a
128 x N f16 accumulator takes N columns, not N/2. Source: CuTe's accumulator
fragments (cute/atom/mma_traits_sm100.hpp: every tcgen05 MMA's C is
``UMMA::tmem_frg_1sm<c_type>``, whose ``StorageType`` defaults to ``uint32_t``,
one value per 32-bit column, while A operands kept in TMEM use ``StorageType =
a_type``, packed); docs/HARDWARE-RULES.md says the same.
"""

from __future__ import annotations

from ..dtype import DTypeLike, as_dtype
from ..errors import LayoutError
from ..validate import MAX_ELEMENTS, check_int, is_int
from .core import Iter, TileLayout

# Tensor memory of one CTA (PTX ISA 9.0, "Tensor Memory"; docs/HARDWARE-RULES.md): 128 lanes x 512
# columns of 32-bit cells; tcgen05.alloc grants a power of two of columns in [32, 512].
TMEM_LANES = 128
TMEM_COLS = 512
TMEM_MIN_ALLOC_COLS = 32

# data-path letter -> rows (the CTA's share of M) and the MMA shape it serves
DATAPATH_ROWS = {"A": 128, "B": 64, "C": 64, "D": 128, "E": 64, "F": 64, "G": 32}
DATAPATH_SHAPES = {
    "A": "M=256 cta_group::2 (per-CTA view)",
    "B": "M=128 cta_group::2 dense",
    "C": "M=128 cta_group::2 sparse",
    "D": "M=128 cta_group::1",
    "E": "M=64 .ws",
    "F": "M=64",
    "G": "M=32 .ws",
}


def accumulator_cell(dtype: DTypeLike | None) -> int:
    """TCol positions (in ``dtype`` elements) per accumulator element: ``32 // bits``.

    1 for 32-bit accumulators (f32, s32) and when no dtype is given; 2 for f16.
    """
    if dtype is None:
        return 1
    dtype = as_dtype(dtype)
    if dtype.bits not in (16, 32):
        raise LayoutError(
            f"MMA accumulators are 32-bit (float32, int32) or 16-bit (float16) cells, got "
            f"{dtype.name}"
        )
    return 32 // dtype.bits


def tmem_datapath_layout(
    letter: str, rows: int, cols: int, sub_slab: int = 0, *, dtype: DTypeLike | None = None
) -> TileLayout:
    """Row ``r``, column ``c`` of an MMA accumulator to (TLane, TCol).

    - D, A (128 rows): ``lane = r, col = c``.
    - B, E (64 rows, even cols): ``lane = r + 64*(c // (cols/2)), col = c % (cols/2)``.
    - F, C (64 rows): ``lane = 32*(r // 16) + r % 16 + 16*sub_slab, col = c``.
    - G (32 rows, cols % 4 == 0): ``lane = r + 32*(c // (cols/4)), col = c % (cols/4)``.

    ``col`` counts 32-bit cells; with an accumulator ``dtype`` of 16 bits TCol is
    ``2 * col`` (one element per cell, module docstring). Without ``dtype``, TCol = col.
    """
    cell = accumulator_cell(dtype)
    if not isinstance(letter, str) or letter not in DATAPATH_ROWS:
        raise LayoutError(
            f"unknown TMEM data path {letter!r}; known: {', '.join(sorted(DATAPATH_ROWS))}"
        )
    want = DATAPATH_ROWS[letter]
    rows = check_int(rows, f"data path {letter} rows", minimum=1, error=LayoutError)
    if rows != want:
        raise LayoutError(
            f"data path {letter} ({DATAPATH_SHAPES[letter]}) holds {want} rows per CTA, got "
            f"rows={rows}"
        )
    cols = check_int(
        cols, f"data path {letter}: cols", minimum=1, maximum=MAX_ELEMENTS, error=LayoutError
    )
    if not is_int(sub_slab) or sub_slab not in (0, 1):
        raise LayoutError(f"sub_slab must be 0 or 1, got {sub_slab!r}")
    if sub_slab and letter not in ("F", "C"):
        raise LayoutError(
            f"sub_slab selects the upper 16 lanes of each warp's quarter and exists only for "
            f"data paths F and C; data path {letter} already covers its lanes, use sub_slab=0"
        )
    shape = (rows, cols)
    if letter in ("D", "A"):
        return TileLayout([Iter(rows, 1, "TLane"), Iter(cols, cell, "TCol")], shape=shape)
    if letter in ("B", "E", "G"):
        # the columns fold onto lane blocks: B/E two halves 64 lanes apart, G four quarters 32 apart
        parts = 4 if letter == "G" else 2
        if cols % parts:
            raise LayoutError(
                f"data path {letter} folds {parts} column blocks onto lanes "
                f"{TMEM_LANES // parts} apart: "
                f"cols must be a multiple of {parts}, got {cols}"
            )
        return TileLayout(
            [
                Iter(rows, 1, "TLane"),
                Iter(parts, TMEM_LANES // parts, "TLane"),
                Iter(cols // parts, cell, "TCol"),
            ],
            shape=shape,
        ).canonicalize()
    # F, C: 16 rows per warp quarter, in the lower or upper half of its 32 lanes
    return TileLayout(
        [Iter(4, 32, "TLane"), Iter(16, 1, "TLane"), Iter(cols, cell, "TCol")],
        offset={"TLane": 16 * sub_slab},
        shape=shape,
    ).canonicalize()


def sf_tmem_layout(
    rows: int, sf_k: int, sf_per_mma: int, sf_reuse: int = 1, pipe_depth: int | None = None
) -> TileLayout:
    """Block-scale factors (8-bit) in TMEM for tcgen05 block-scaled MMA.

    ``spm = sf_per_mma`` factors feed one MMA; ``K = sf_k // spm`` MMAs;
    ``M = rows // 32`` row groups; 4 factors per 32-bit column. ``pf = 4 // spm``
    MMAs share a column, halved until it divides K; ``Ko = K // pf``. For row
    ``r`` and factor ``k = (ko*pf + p)*spm + j``::

        TLane = r % 32            (copied to +32, +64, +96: every lane quarter)
        TCol  = 4*(r // 32) + ko*4*M + p*spm + j     (8-bit elements)

    ``sf_reuse`` appends a stride-0 dimension (each factor read sf_reuse times);
    ``pipe_depth`` prepends a stage dimension of stride one whole stage,
    ``4*M*Ko`` elements, so stages never overlap.
    """
    rows = check_int(rows, "scale-factor rows", minimum=1, error=LayoutError)
    sf_k = check_int(sf_k, "SF_K", minimum=1, error=LayoutError)
    sf_reuse = check_int(sf_reuse, "sf_reuse", minimum=1, error=LayoutError)
    if pipe_depth is not None:
        pipe_depth = check_int(pipe_depth, "pipe_depth", minimum=1, error=LayoutError)
    if not is_int(sf_per_mma) or sf_per_mma not in (1, 2, 4):
        raise LayoutError(f"sf_per_mma must be 1, 2 or 4 scale factors per MMA, got {sf_per_mma}")
    if rows < 32 or rows % 32:
        raise LayoutError(
            f"scale-factor rows must be a positive multiple of 32 (row groups of one 32-lane "
            f"quarter each), got {rows}"
        )
    if sf_k % sf_per_mma:
        raise LayoutError(
            f"SF_K={sf_k} scale factors per row must be a positive multiple of "
            f"sf_per_mma={sf_per_mma}"
        )
    spm, k_mmas, groups = sf_per_mma, sf_k // sf_per_mma, rows // 32
    per_col = 4 // spm
    while k_mmas % per_col:
        per_col //= 2
    k_outer = k_mmas // per_col
    iters = [
        Iter(groups, 4, "TCol"),
        Iter(32, 1, "TLane"),
        Iter(k_outer, 4 * groups, "TCol"),
        Iter(per_col, spm, "TCol"),
        Iter(spm, 1, "TCol"),
        Iter(sf_reuse, 0, "TCol"),
    ]
    shape = [rows, sf_k * sf_reuse]
    if pipe_depth is not None:
        iters.insert(0, Iter(pipe_depth, 4 * groups * k_outer, "TCol"))
        shape.insert(0, pipe_depth)
    return TileLayout(iters, replica=[Iter(4, 32, "TLane")], shape=shape)
