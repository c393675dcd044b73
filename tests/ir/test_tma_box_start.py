"""A bulk tensor copy's shared-memory box starts on a byte.

PTX ISA "cp.async.bulk.tensor": the shared-memory operand is a byte address, so a box
of 4-bit elements cannot start at an odd element. tilemem addresses a sub-byte element by the
byte that holds it, which for a TMA destination would silently move the box half a byte back:
such a constant index is refused instead.
"""

from __future__ import annotations

import pytest

from tilemem import T
from tilemem.dtype import DataType
from tilemem.errors import IRError


def _kernel(op: str, col: int, dtype: str = "float4_e2m1fn", cols: int = 256):
    """A TMA load or store of a row-major 64 x ``cols`` tile of ``dtype`` at (0, ``col``)."""

    @T.kernel(target="sm_100a", block=128)
    def k(tmap: T.TensorMap):
        smem = T.SMEMPool()
        tile = smem.alloc((64, cols), dtype, name="tile")
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


def _runtime_kernel(index):
    """A TMA load into row 0 of a 64 x 256 fp4 tile at column ``index(col)``, ``col`` a
    run-time kernel parameter."""

    @T.kernel(target="sm_100a", block=128)
    def k(tmap: T.TensorMap, col: T.int32):
        smem = T.SMEMPool()
        tile = smem.alloc((64, 256), "float4_e2m1fn", name="tile")
        bar = smem.alloc((1,), "uint64", name="bar")
        smem.commit()
        T.ptx.tma.load(tmap, (tile, 0, index(col)), bar, [0, 0])

    return k


@pytest.mark.parametrize(
    "index",
    [
        lambda c: c,  # any column
        lambda c: c * 4 + 1,  # always odd
        lambda c: c * 2 + 3,
        lambda c: c // 2,  # a quotient's low bits are not known
        lambda c: (c * 8) // 4,  # even, but a division is not analysed: refused, never rounded
        lambda c: (c << 1) | 1,
    ],
)
def test_a_box_at_a_run_time_fp4_element_not_provably_even_is_refused(index):
    with pytest.raises(IRError, match=r"tma_load: element .* cannot prove a multiple of 2"):
        _runtime_kernel(index)


@pytest.mark.parametrize(
    "index",
    [
        lambda c: c * 2,
        lambda c: 2 * c + 64,
        lambda c: c << 3,
        lambda c: (c * 4) ^ 8,
        lambda c: (c & 7) * 16 - 2,
        lambda c: c // 2 * 2,  # a product with 2, whatever the quotient
    ],
)
def test_a_box_at_a_run_time_even_fp4_element_is_accepted(index):
    assert "cp.async.bulk.tensor.2d" in _runtime_kernel(index).source


def test_zero_low_bits_of_a_swizzled_stage_offset():
    # the 128B swizzle's element number of (stage, 0, 0) in a stage of 32768 fp4 elements:
    # ((s * 32768 >> 5) ^ ((s * 32768 >> 5) & 56)) >> 3 << 5 | (s * 32768 & 31); by hand:
    # s * 32768 has 15 zero low bits; >> 5: 10; & 56: 10; ^: 10; >> 3: 7; << 5: 12;
    # s * 32768 & 31: 15; |: min(12, 15) = 12
    from tilemem.ir.intrinsics.tma import _zero_low_bits
    from tilemem.ir.nodes import Var, binop

    s = Var("s", DataType("int32"))
    word = binop(">>", binop("*", s, 32768), 5)
    e = binop(
        "|",
        binop("<<", binop(">>", binop("^", word, binop("&", word, 56)), 3), 5),
        binop("&", binop("*", s, 32768), 31),
    )
    assert _zero_low_bits(e) == 12
    assert _zero_low_bits(binop("+", binop("*", s, 6), 4)) == 1  # 6 s + 4 = 2 (3 s + 2)
    assert _zero_low_bits(s) == 0


@pytest.mark.parametrize(("col", "bit"), [(1, 6), (2, 4), (3, 2), (6, 4)])
def test_a_box_at_an_fp6_element_off_a_byte_is_refused(col, bit):
    # element n of 6-bit values starts at bit 6 n: on a byte only when n is a multiple of 4
    with pytest.raises(IRError, match=rf"starts at bit {bit} of a byte.*multiple of 4"):
        _kernel("load", col, "float6_e2m3fn", 128)


@pytest.mark.parametrize("col", [0, 4, 8, 124])
def test_a_box_at_an_fp6_element_on_a_byte_is_accepted(col):
    assert "cp.async.bulk.tensor.2d" in _kernel("load", col, "float6_e2m3fn", 128).source
