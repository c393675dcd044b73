"""A bulk tensor copy's shared-memory box starts on a byte.

PTX ISA "cp.async.bulk.tensor": the shared-memory operand is a byte address, so a box
of 4-bit elements cannot start at an odd element. tilemem addresses a sub-byte element by the
byte that holds it, which for a TMA destination would silently move the box half a byte back:
such a constant index is refused instead.
"""

from __future__ import annotations

import pytest

from tilemem import T
from tilemem.errors import IRError


def _kernel(op: str, col: int):
    @T.kernel(target="sm_100a", block=128)
    def k(tmap: T.TensorMap):
        smem = T.SMEMPool()
        tile = smem.alloc((64, 256), "float4_e2m1fn", name="tile")
        bar = smem.alloc((1,), "uint64", name="bar")
        smem.commit()
        if op == "load":
            T.ptx.tma.load(tmap, (tile, 0, col), bar, [0, 0])
        else:
            T.ptx.tma.store(tmap, (tile, 0, col), [0, 0])

    return k


@pytest.mark.parametrize("op", ["load", "store"])
@pytest.mark.parametrize("col", [1, 3, 255])
def test_a_box_at_an_odd_fp4_element_is_refused(op, col):
    # element col of row 0 (row-major 64 x 256): bit 4 * col = 4 (mod 8) of its byte
    want = rf"tma_{op}: element \(0, {col}\) of 'tile' .* starts at bit 4"
    with pytest.raises(IRError, match=want):
        _kernel(op, col)


@pytest.mark.parametrize("op", ["load", "store"])
@pytest.mark.parametrize("col", [0, 2, 128])
def test_a_box_at_an_even_fp4_element_is_accepted(op, col):
    # 4 * col / 8 = col / 2 bytes into the row: a whole byte
    src = _kernel(op, col).source
    assert "cp.async.bulk.tensor.2d" in src
