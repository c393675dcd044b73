"""to_gluon against Triton's own linear-layout conversion, element by element.

Triton's C++ ``to_linear_layout`` (reached through Gluon's builder) says, for each bit of a
shared-memory element offset, which logical coordinate it moves to (XOR-combined), and for
each bit of a TMEM row and column, the same. Every offset / cell is compared with tilemem.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

pytest.importorskip("triton.experimental.gluon", reason="Triton Gluon (pip install triton)")

from tilemem.dtype import as_dtype
from tilemem.errors import LayoutError
from tilemem.interop.gluon import linear_layout, to_gluon
from tilemem.layout import (
    TileLayout,
    mma_shared_layout,
    sf_tmem_layout,
    tmem_datapath_layout,
)


def _xor_coords(bases, n: int, rank: int) -> np.ndarray:
    """coords[i] = XOR of bases[b] over the set bits b of i."""
    out = np.zeros((n, rank), dtype=np.int64)
    for b, basis in enumerate(bases):
        on = ((np.arange(n) >> b) & 1).astype(bool)
        out[on] ^= np.asarray(basis, dtype=np.int64)
    return out


def _shared_mismatches(layout, gluon_layout) -> int:
    """Offsets where Triton's element differs from tilemem's placement."""
    shape = list(layout.shape)
    size = int(np.prod(shape))
    triton_ll = linear_layout(gluon_layout, shape)
    coords = _xor_coords(triton_ll.offset_bases, size, len(shape))
    flat = np.ravel_multi_index(tuple(coords.T), shape)
    return int((layout.apply_flat(flat)["m"] != np.arange(size)).sum())


SHARED_CASES = [
    (dtype, mode, rows, k_mult)
    for dtype, mode in itertools.product(
        ["bfloat16", "float16", "float8_e4m3fn", "int8", "float32"], [1, 2, 3]
    )
    for rows, k_mult in ((8, 1), (64, 1), (128, 2), (32, 4))
]


@pytest.mark.parametrize(("dtype", "mode", "rows", "k_mult"), SHARED_CASES)
def test_mma_tiles_become_nvmma_shared_layouts_equal_to_triton(dtype, mode, rows, k_mult):
    cols = k_mult * (128 << mode) // as_dtype(dtype).bits
    layout = mma_shared_layout(dtype, mode, (rows, cols))
    gl = to_gluon(layout, dtype)
    assert type(gl).__name__ == "NVMMASharedLayout"
    assert (gl.swizzle_byte_width, gl.element_bitwidth) == (16 << mode, as_dtype(dtype).bits)
    assert _shared_mismatches(layout, gl) == 0


def test_one_k_block_stages_equal_tritons_rank3_nvmma():
    # stages x one 128-byte K block: Triton's rank-3 NVMMA and tilemem agree (the stage is
    # the outermost bit either way)
    import triton.experimental.gluon.language as ttgl

    layout = mma_shared_layout("bfloat16", "128B", (4, 64, 64))
    rank3 = ttgl.NVMMASharedLayout(128, 16, rank=3)
    assert _shared_mismatches(layout, rank3) == 0


def test_tritons_rank3_nvmma_orders_stages_below_k_blocks():
    import triton.experimental.gluon.language as ttgl

    layout = mma_shared_layout("bfloat16", "128B", (2, 64, 128))  # two K blocks per stage
    assert _shared_mismatches(layout, ttgl.NVMMASharedLayout(128, 16, rank=3)) > 0


@pytest.mark.parametrize(
    ("dtype", "mode", "shape"),
    [
        ("bfloat16", "128B", (2, 64, 128)),
        ("float8_e4m3fn", "64B", (4, 32, 128)),
        ("float16", "32B", (2, 16, 32)),
        ("bfloat16", "none", (2, 64, 32)),
    ],
)
def test_staged_tiles_give_the_layout_of_one_stage(dtype, mode, shape):
    # Gluon's allocate_shared_memory(dtype, [S, R, K], layout) takes a layout one rank
    # below the shape and stacks S whole tiles: stage s is Triton's tile moved by s*R*K
    layout = mma_shared_layout(dtype, mode, shape)
    gl = to_gluon(layout, dtype)
    stages, rows, cols = shape
    assert (type(gl).__name__ == "NVMMASharedLayout") == (mode != "none")
    triton_ll = linear_layout(gl, [rows, cols])
    coords = _xor_coords(triton_ll.offset_bases, rows * cols, 2)
    tile = rows * cols
    for s in range(stages):
        flat = s * tile + np.ravel_multi_index(tuple(coords.T), (rows, cols))
        assert np.array_equal(layout.apply_flat(flat)["m"], s * tile + np.arange(tile))


def test_linear_layouts_round_trip_through_triton():
    # unswizzled core-matrix tiles and strided tiles: Triton keeps a SharedLinearLayout as
    # given, so compare its bases, re-derived by Triton's layout, with tilemem at every offset
    for layout, dtype in [
        (mma_shared_layout("bfloat16", "none", (64, 32)), "bfloat16"),
        (TileLayout.of((16, 8), (1, 16)), "float32"),
    ]:
        gl = to_gluon(layout, dtype)
        assert type(gl).__name__ == "SharedLinearLayout"
        assert _shared_mismatches(layout, gl) == 0


def test_padded_layouts_have_no_linear_form():
    with pytest.raises(LayoutError, match="one element per offset"):
        to_gluon(TileLayout.of((8, 8), (16, 1)), "float32")


TMEM_CASES = [
    ("D", 128, 64, "float32", 1),
    ("D", 128, 256, "float32", 1),
    ("D", 128, 64, "float16", 2),
    ("F", 64, 32, "float32", 1),
    ("F", 64, 128, "float16", 2),
]


@pytest.mark.parametrize(("letter", "rows", "cols", "dtype", "col_stride"), TMEM_CASES)
def test_tmem_accumulators_equal_tritons_tensor_memory_layout(
    letter, rows, cols, dtype, col_stride
):
    layout = tmem_datapath_layout(letter, rows, cols, dtype=dtype)
    gl = to_gluon(layout, dtype)
    assert tuple(gl.block) == (rows, cols) and gl.col_stride == col_stride
    ll = linear_layout(gl, [rows, cols])
    # Triton's cells: (lane, column) -> logical (row, col); zero bases are unused bits
    lane_bits, col_bits = len(ll.rows), len(ll.cols)
    lanes = _xor_coords(ll.rows, 1 << lane_bits, 2)
    columns = _xor_coords(ll.cols, 1 << col_bits, 2)
    cells: dict[tuple[int, int], set[tuple[int, int]]] = {}
    for lane, col in itertools.product(range(1 << lane_bits), range(1 << col_bits)):
        r, c = lanes[lane] ^ columns[col]
        cells.setdefault((int(r), int(c)), set()).add((lane, col))
    assert len(cells) == rows * cols
    pos = layout.positions()
    mine = zip(pos["TLane"].tolist(), pos["TCol"].tolist())
    bad = [
        (rc, where)
        for rc, where in zip(itertools.product(range(rows), range(cols)), mine)
        if where not in cells[rc]
    ]
    assert bad == []


def test_packed_p_over_s_is_a_col_stride_1_layout():
    layout = TileLayout.of((128, 128), ("1@TLane", "1@TCol"))
    gl = to_gluon(layout, "bfloat16")
    assert gl.col_stride == 1


@pytest.mark.parametrize("letter", ["B", "E", "G"])
def test_folded_datapaths_are_a_layout_error(letter):
    rows = {"B": 64, "E": 64, "G": 32}[letter]
    with pytest.raises(LayoutError, match="data paths D"):
        to_gluon(tmem_datapath_layout(letter, rows, 64), "float32")


def test_scale_factors_are_a_layout_error():
    with pytest.raises(LayoutError):
        to_gluon(sf_tmem_layout(128, 8, 2), "float8_e8m0fnu")


def test_linear_layout_refuses_a_rank_mismatch_instead_of_aborting():
    import triton.experimental.gluon.language as ttgl

    with pytest.raises(LayoutError, match="rank"):
        linear_layout(ttgl.NVMMASharedLayout(128, 16, rank=2), [2, 64, 64])
    with pytest.raises(LayoutError, match="power-of-two"):
        linear_layout(ttgl.NVMMASharedLayout(128, 16, rank=2), [48, 64])
