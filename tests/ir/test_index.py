"""Generated index arithmetic equals layout.apply at every coordinate (the IR's own interpreter)."""

import itertools

import pytest

from tilemem.ir import interpret, layout_index
from tilemem.ir.nodes import Var
from tilemem.layout import TileLayout, mma_shared_layout, sf_tmem_layout, tmem_datapath_layout

CASES = [
    mma_shared_layout("bfloat16", "128B", (2, 16, 128)),
    mma_shared_layout("float32", "64B", (3, 8, 32)),
    mma_shared_layout("int8", "32B", (2, 2, 8, 64)),
    mma_shared_layout("bfloat16", "none", (2, 16, 24)),
    mma_shared_layout("float16", "none", (8, 6)),
    TileLayout.of((4, 9), (10, 1)),
    tmem_datapath_layout("B", 64, 16),
    tmem_datapath_layout("F", 64, 8, 1),
    sf_tmem_layout(64, 8, 2, pipe_depth=2),
]


@pytest.mark.parametrize("layout", CASES, ids=[repr(c)[:40] for c in CASES])
def test_index_expression_matches_apply_everywhere(layout):
    names = [f"c{d}" for d in range(len(layout.shape))]
    exprs = layout_index(layout, [Var(n) for n in names])
    for coord in itertools.product(*(range(n) for n in layout.shape)):
        env = dict(zip(names, coord))
        got = {axis: interpret(e, env) for axis, e in exprs.items()}
        assert got == layout.apply(*coord), coord


def test_constant_coordinates_fold_to_constants():
    layout = mma_shared_layout("bfloat16", "128B", (64, 64))
    (m,) = layout_index(layout, [3, 17]).values()
    assert m.value == layout.apply(3, 17)["m"]
