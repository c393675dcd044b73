"""16-bit accumulators in TMEM take one 32-bit cell per element.

Golden rule, from CuTe (cute/atom/mma_traits_sm100.hpp): every dense tcgen05
MMA's accumulator fragment is ``UMMA::tmem_frg_1sm<c_type>`` whose
``StorageType`` defaults to ``uint32_t``, so N-adjacent f16 accumulator values
are ``sizeof_bits<uint32_t> / sizeof_bits<half_t> = 2`` 16-bit positions apart
(one per 32-bit column); A operands kept in TMEM use ``tmem_frg_1sm<a_type,
a_type>`` and are packed two 16-bit values per column. A 128 x N f16
accumulator therefore takes N columns, the same as f32.
"""

import pytest

from tilemem import SMEMPool, TMEMPool
from tilemem.errors import LayoutError
from tilemem.layout import tmem_datapath_layout
from tilemem.layout.tmem import accumulator_cell


def _tmem():
    smem = SMEMPool(name="smem", target="sm_100a")
    return TMEMPool(smem, 512, name="tmem")


@pytest.mark.parametrize("n", [8, 64, 128, 256])
def test_f16_accumulator_takes_n_columns(n):
    tmem = _tmem()
    f16 = tmem.alloc((128, n), "float16", datapath="D", name="acc16")
    f32 = tmem.alloc((128, n), "float32", datapath="D", name="acc32")
    assert (f16.cols, f32.cols) == (n, n)
    assert f32.col_offset == n  # the f16 accumulator really holds n columns


def test_f16_accumulator_element_per_cell():
    layout = tmem_datapath_layout("D", 128, 64, dtype="float16")
    assert [layout.apply(5, c)["TCol"] for c in range(4)] == [0, 2, 4, 6]  # 16-bit units
    assert layout.apply(5, 3)["TLane"] == 5
    folded = tmem_datapath_layout("B", 64, 64, dtype="float16")
    assert folded.apply(0, 32) == {"TLane": 64, "TCol": 0}
    assert folded.apply(0, 31)["TCol"] == 62


def test_packed_16bit_operand_takes_half():
    """P (bf16, the A operand of O += P V) stays packed: two values per column."""
    tmem = _tmem()
    p = tmem.alloc((128, 128), "bfloat16", name="P")
    assert p.cols == 64


@pytest.mark.parametrize("dtype, cell", [("float32", 1), ("int32", 1), ("float16", 2)])
def test_accumulator_cell(dtype, cell):
    assert accumulator_cell(dtype) == cell


def test_accumulator_of_8_bits_is_an_error():
    with pytest.raises(LayoutError, match="float8_e4m3fn"):
        tmem_datapath_layout("D", 128, 64, dtype="float8_e4m3fn")
