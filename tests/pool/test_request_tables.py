"""The pools keep what a request determines (layout, bytes, columns) per request of checked
values: a repeated request must give what the first gave, and a value that only compares
equal to an accepted one (a float, a bool) must still be refused."""

import pytest

from tilemem.errors import AlignmentError, AllocationError, SwizzleError
from tilemem.pool import SMEMPool, TMEMPool


def smem() -> SMEMPool:
    return SMEMPool(name="smem")


def test_a_repeated_default_request_gives_the_same_buffer_facts():
    pool = smem()
    first = pool.alloc((128, 4), "uint8", align=128)
    again = pool.alloc((128, 4), "uint8", align=128)
    # 128 x 4 one-byte elements = 512 bytes, aligned to 128: the second starts at 512
    assert (first.nbytes, first.align, first.byte_offset) == (512, 128, 0)
    assert (again.nbytes, again.align, again.byte_offset) == (512, 128, 512)
    assert again.layout is first.layout


def test_a_float_shape_equal_to_an_accepted_one_is_still_refused():
    pool = smem()
    pool.alloc((128, 4), "uint8")
    with pytest.raises(AllocationError, match="is not an integer"):
        pool.alloc((128.0, 4), "uint8")


def test_a_bool_alignment_equal_to_an_accepted_one_is_still_refused():
    pool = smem()
    pool.alloc((4,), "uint8", align=1)
    with pytest.raises(AlignmentError, match="power of two"):
        pool.alloc((4,), "uint8", align=True)


def test_a_refused_mma_request_is_refused_every_time():
    pool = smem()
    for _ in range(2):  # 8 fp16 = 16-byte rows: no 128-byte swizzle row fits
        with pytest.raises(SwizzleError, match="16-byte rows"):
            pool.alloc_mma((128, 8), "float16", "128B")
    assert pool.buffers == ()


def tmem() -> TMEMPool:
    return TMEMPool(smem(), 512, name="tmem")


def test_a_repeated_data_path_request_gives_the_same_columns():
    pool = tmem()
    first = pool.alloc((128, 16), "float32", datapath="D")
    again = pool.alloc((128, 16), "float32", datapath="D")
    # data path D: row i on lane i, one 32-bit element per column: 16 columns
    assert (first.cols, first.col_offset) == (16, 0)
    assert (again.cols, again.col_offset) == (16, 16)
    assert again.layout is first.layout and again.layout_name == first.layout_name


def test_a_refused_data_path_request_is_refused_every_time():
    pool = tmem()
    for _ in range(2):
        with pytest.raises(AllocationError, match="needs a 2-D shape"):
            pool.alloc((2, 128, 16), "float32", datapath="D")


def test_scale_factor_requests_repeat_and_refusals_stay_refusals():
    pool = tmem()
    first = pool.alloc_sf((128, 4), "float8_e4m3fn", sf_per_mma=4)
    again = pool.alloc_sf((128, 4), "float8_e4m3fn", sf_per_mma=4)
    assert again.cols == first.cols and again.col_offset == first.col_offset + first.cols
    assert again.layout is first.layout
    for _ in range(2):
        with pytest.raises(AllocationError, match="positive divisor"):
            pool.alloc_sf((128, 4), "float8_e4m3fn", sf_per_mma=4, sf_reuse=3)
    with pytest.raises(AllocationError, match="got True"):  # equal to the accepted 1
        pool.alloc_sf((128, 4), "float8_e4m3fn", sf_per_mma=4, sf_reuse=True)
    assert len(pool.buffers) == 2
