"""A sub-byte TMA box at a run-time element number: the low-bit analysis behind the refusal
(``tilemem.ir.intrinsics.tma._box_operand``) on the expressions no other test gives it.

PTX ISA "cp.async.bulk.tensor": the shared-memory operand is a byte address, so a box of
4-bit elements starts at an even element number. tilemem accepts a run-time element number
only when it can prove it even, and refuses it otherwise. Each refused index below is odd
for some column (worked out in the comments), so accepting it could move a box half a byte;
each accepted one is even for every column.
"""

from __future__ import annotations

import pytest
from test_tma_box_start import _runtime_kernel  # tests/ir: the same run-time fp4 box kernel

from tilemem import T
from tilemem.errors import IRError

REFUSED = r"tma_load: element .* cannot prove a multiple of 2"


@pytest.mark.parametrize(
    "index",
    [
        # through a float: col = 3 gives int(7.5) = 7 (a float constant's bits say nothing)
        lambda c: T.cast(T.cast(c, "float32") * 2.5, "int32"),
        # a shift by a run-time amount: col = 3 gives 12 >> 3 = 1
        lambda c: (c * 4) >> c,
        # a right shift past the known zero bits: col = 1 gives 2 >> 1 = 1
        lambda c: (c * 2) >> 1,
    ],
    ids=["float-product", "variable-shift", "shift-past-the-zeros"],
)
def test_an_index_odd_for_some_column_is_refused(index):
    with pytest.raises(IRError, match=REFUSED):
        _runtime_kernel(index)


@pytest.mark.parametrize(
    "index",
    [
        lambda c: T.cast(c * 2, "int32"),  # a cast keeps the value: 2 col
        lambda c: T.cast(c * 4, "int32") >> 1,  # 4 col >> 1 = 2 col
    ],
    ids=["cast", "cast-then-shift"],
)
def test_an_index_even_for_every_column_is_accepted(index):
    src = _runtime_kernel(index).source
    # element 2 col of 4-bit values is byte col of the row: the box's byte address
    assert "cp.async.bulk.tensor.2d.shared::cluster.global" in src
