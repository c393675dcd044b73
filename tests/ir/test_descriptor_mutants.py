"""A descriptor's constant column obeys the slice-start rule when its row is a run-time value."""

import pytest

from tilemem import T
from tilemem.errors import LayoutError


def _desc_kernel(col):
    @T.kernel(target="sm_90a", block=256)
    def k(x: T.Buffer((32,), "float32")):
        smem = T.SMEMPool()
        a = smem.alloc_mma((2, 128, 64), "bfloat16", "128B", name="a")
        smem.commit()
        row0 = (T.warp_id() // 4) * 64  # known only at run time
        T.ptx.wgmma.desc(a, 0, row0, col)

    return k


def test_a_misaligned_constant_column_is_refused_beside_a_run_time_row():
    # column 17 of bf16 starts at byte 34, not on a 16-byte chunk; the descriptor's >> 4
    # would silently read column 16 instead
    with pytest.raises(LayoutError, match=r"16-byte chunk of its contiguous dimension.*column 17"):
        _desc_kernel(17)


def test_an_aligned_constant_column_is_accepted_beside_a_run_time_row():
    assert _desc_kernel(16).name == "k"  # column 16 starts byte 32: a chunk
