"""Laws of the hardware layouts, checked by hypothesis."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tilemem.layout import (
    DATAPATH_ROWS,
    SwizzleLayout,
    mma_shared_layout,
    sf_tmem_layout,
    tmem_datapath_layout,
)


@given(
    pe=st.integers(0, 5), length=st.integers(0, 3), atom=st.integers(1, 4), block=st.integers(0, 7)
)
def test_swizzle_is_a_bijection_on_each_period(pe, length, atom, block):
    swz = SwizzleLayout(pe, length, atom)
    xs = np.arange(swz.period, dtype=np.int64) + block * swz.period
    image = swz.swizzle(xs)
    assert np.array_equal(np.sort(image), xs)


@given(
    dtype=st.sampled_from(["float32", "bfloat16", "int8", "float4_e2m1fn"]),
    mode=st.integers(0, 3),
    stages=st.integers(1, 3),
    rows8=st.integers(1, 8),
    kmul=st.integers(1, 3),
)
@settings(max_examples=60, deadline=None)
def test_mma_layouts_are_bijections_onto_the_tile(dtype, mode, stages, rows8, kmul):
    bits = {"float32": 32, "bfloat16": 16, "int8": 8, "float4_e2m1fn": 4}[dtype]
    row = (16 << mode) * 8 // bits if mode else 128 // bits
    shape = (stages, 8 * rows8, kmul * row)
    m = mma_shared_layout(dtype, mode, shape).positions()["m"]
    assert np.array_equal(np.sort(m), np.arange(int(np.prod(shape))))


@given(
    letter=st.sampled_from(sorted(DATAPATH_ROWS)),
    cols4=st.integers(1, 128),
    sub=st.integers(0, 1),
)
@settings(max_examples=80, deadline=None)
def test_datapath_never_maps_two_elements_to_one_cell(letter, cols4, sub):
    sub = sub if letter in "FC" else 0
    layout = tmem_datapath_layout(letter, DATAPATH_ROWS[letter], 4 * cols4, sub)
    pos = layout.positions()
    cells = pos["TLane"] * 4096 + pos["TCol"]
    assert len(np.unique(cells)) == layout.size()
    assert pos["TLane"].max() < 128


@given(
    groups=st.integers(1, 8),
    spm=st.sampled_from([1, 2, 4]),
    kmmas=st.integers(1, 12),
    depth=st.integers(2, 4),
)
@settings(max_examples=80, deadline=None)
def test_sf_stages_never_overlap(groups, spm, kmmas, depth):
    layout = sf_tmem_layout(32 * groups, spm * kmmas, spm, pipe_depth=depth)
    cols = layout.positions()["TCol"].reshape(depth, -1)
    lanes = layout.positions()["TLane"].reshape(depth, -1)
    cells = [set(zip(lanes[s].tolist(), cols[s].tolist())) for s in range(depth)]
    for a in range(depth):
        for b in range(a + 1, depth):
            assert not cells[a] & cells[b]
    # within a stage every factor has its own cell
    assert all(len(c) == cols.shape[1] for c in cells)
