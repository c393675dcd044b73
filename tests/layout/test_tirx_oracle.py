"""Whole-layout agreement with TIRx (apache-tvm-tirx 0.1.0a4), an independent implementation.

TIRx's ``Layout.apply(flat_index)`` returns the physical position of the
element at that row-major index; we compare every element of every case.
"""

import numpy as np
import pytest

tirx = pytest.importorskip("tvm_tirx.backend.cuda.layout")

from tilemem.layout import DATAPATH_ROWS, mma_shared_layout, tmem_datapath_layout  # noqa: E402

DTYPES = ["float32", "float16", "bfloat16", "float8_e4m3fn", "uint8", "int8", "float4_e2m1fn"]
BITS = {
    "float32": 32,
    "float16": 16,
    "bfloat16": 16,
    "float8_e4m3fn": 8,
    "uint8": 8,
    "int8": 8,
    "float4_e2m1fn": 4,
}


def _shapes(dtype, mode):
    """2-D tiles and staged 3-D/4-D tiles whose K fits the mode's swizzle row."""
    row_elems = (16 << mode) * 8 // BITS[dtype] if mode else 128 // BITS[dtype]
    k = [row_elems, 2 * row_elems, 4 * row_elems]
    shapes = [(8, k[0]), (64, k[1]), (128, k[0]), (24, k[2])]
    shapes += [(2, 64, k[0]), (3, 128, k[1]), (4, 8, k[2])]
    shapes += [(2, 2, 16, k[1]), (3, 1, 64, k[0])]
    if mode == 0:
        shapes += [(16, row_elems // 2 or 1), (2, 8, 3)]  # K % e16 != 0: plain row-major
    return shapes


def _tirx_positions(layout, size, axes):
    out = {a: np.empty(size, dtype=np.int64) for a in axes}
    for x in range(size):
        pos = layout.apply(x)
        for a in axes:
            out[a][x] = int(pos[a])
    return out


CASES = [(d, m, s) for d in DTYPES for m in range(4) for s in _shapes(d, m)]


@pytest.mark.parametrize(
    "dtype,mode,shape", CASES, ids=[f"{d}-sw{m}-{'x'.join(map(str, s))}" for d, m, s in CASES]
)
def test_mma_shared_layout_matches_tirx(dtype, mode, shape):
    ours = mma_shared_layout(dtype, mode, shape)
    theirs = tirx.mma_shared_layout(dtype, mode, list(shape))
    size = int(np.prod(shape))
    got = ours.positions()["m"]
    want = _tirx_positions(theirs, size, ["m"])["m"]
    assert np.array_equal(got, want)


DP_CASES = [
    (letter, cols, sub)
    for letter in sorted(DATAPATH_ROWS)
    for cols in (4, 32, 64, 128, 256, 512)
    for sub in ((0, 1) if letter in "FC" else (0,))
]


@pytest.mark.parametrize("letter,cols,sub_slab", DP_CASES)
def test_tmem_datapath_layout_matches_tirx(letter, cols, sub_slab):
    rows = DATAPATH_ROWS[letter]
    ours = tmem_datapath_layout(letter, rows, cols, sub_slab)
    theirs = tirx.tmem_datapath_layout(letter, rows, cols, sub_slab)
    got = ours.positions()
    want = _tirx_positions(theirs, rows * cols, ["TLane", "TCol"])
    assert np.array_equal(got["TLane"], want["TLane"])
    assert np.array_equal(got["TCol"], want["TCol"])
