"""tcgen05.cp's multicast shapes in the simulator (tilemem.ir.intrinsics.tcgen05), expected
values by hand from PTX ISA 9.0 "tcgen05.cp" (.64x128b with .warpx2::02_13 copies rows 0-31
into the lane quarters of warps 0 and 2 and rows 32-63 into those of warps 1 and 3;
.warpx2::01_23 rows 0-31 into warps 0 and 1, rows 32-63 into warps 2 and 3)."""

from __future__ import annotations

import numpy as np
import pytest

from tilemem.ir.intrinsics.tcgen05 import _sim_cp

from .hwfake import FakeContext, run

# lane quarters that rows 0-31 and rows 32-63 land in
QUARTERS = {"warpx2::02_13": ((0, 2), (1, 3)), "warpx2::01_23": ((0, 1), (2, 3))}


@pytest.mark.parametrize("multicast", sorted(QUARTERS))
def test_cp_64x128b_warpx2_sends_each_half_to_its_quarters(multicast):
    """64 rows of 16 bytes, no swizzle, K-major core matrices (row r at (r % 8) * 16 +
    (r // 8) * SBO): each row becomes 4 little-endian 32-bit columns from column 200."""
    ctx = FakeContext(warp=1)
    base, sbo = 0x3000, 128
    rows = (np.arange(64 * 16) * 7 % 251).astype(np.uint8).reshape(64, 16)
    for r in range(64):
        ctx.smem[base + (r % 8) * 16 + (r // 8) * sbo + np.arange(16)] = rows[r]
    # start address >> 4 in bits 0-13, LBO 16 bytes (>> 4) in 16-29, SBO >> 4 in 32-45,
    # version 0b001 in bits 46-48 ("Shared memory descriptor")
    desc = (base >> 4) | (1 << 16) | ((sbo >> 4) << 32) | (1 << 46)
    run(
        _sim_cp,
        ctx,
        "ptx.tcgen05.cp",
        (None, None),
        [200, desc],
        shape="64x128b",
        multicast=multicast,
        cta_group=1,
    )
    assert not ctx.tmem.any()  # asynchronous: nothing lands before completion
    ctx.complete_all()
    words = rows.view("<u4")  # (64, 4)
    for half, quarters in enumerate(QUARTERS[multicast]):
        for q in quarters:
            np.testing.assert_array_equal(
                ctx.tmem[32 * q : 32 * q + 32, 200:204], words[32 * half : 32 * half + 32]
            )
    assert not ctx.tmem[:, :200].any() and not ctx.tmem[:, 204:].any()
