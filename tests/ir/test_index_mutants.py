"""Index arithmetic of layouts with offsets, and the inputs it refuses."""

import itertools

import pytest

from tilemem.errors import LayoutError
from tilemem.ir import interpret, layout_index
from tilemem.ir.nodes import Var
from tilemem.layout import TileLayout
from tilemem.layout.core import SwizzleLayout

CASES = [
    TileLayout.of((4, 3), (3, 1), offset={"m": 7}),  # an offset on the strided axis
    TileLayout.of((4, 3), (3, 1), offset={"TCol": 5}),  # an axis with an offset alone
]


@pytest.mark.parametrize("layout", CASES, ids=["m", "TCol"])
def test_offsets_reach_the_index_expressions(layout):
    exprs = layout_index(layout, [Var("i"), Var("j")])
    for i, j in itertools.product(range(4), range(3)):
        got = {axis: interpret(e, {"i": i, "j": j}) for axis, e in exprs.items()}
        assert got == layout.apply(i, j)
    # by hand at (1, 2): 1 * 3 + 2 * 1 = 5 on m, plus its offset
    at = {axis: interpret(e, {"i": 1, "j": 2}) for axis, e in exprs.items()}
    assert at == ({"m": 12} if "m" in layout.offset else {"m": 5, "TCol": 5})


def test_the_number_of_indices_must_match_the_shape():
    with pytest.raises(LayoutError, match=r"1 indices for a buffer of shape \(4, 3\)"):
        layout_index(TileLayout.of((4, 3), (3, 1)), [Var("i")])


def test_a_bare_swizzle_has_no_index_arithmetic():
    # a swizzle alone permutes offsets; index arithmetic needs a tile layout under it
    with pytest.raises(LayoutError, match="no index arithmetic for SwizzleLayout"):
        layout_index(SwizzleLayout(3, 4, 3), [Var("i")], (8,))
