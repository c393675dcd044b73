"""What the simulator's tcgen05.mma refuses to guess: scale factors at a TMEM address whose lane
field is not 0, and fp6/fp4 A kept in tensor memory. No source the simulator follows says
where the hardware reads them (CuTe allocates scale factors from lane 0, duplicated into every
lane quarter by tcgen05.cp .32x128b.warpx4; PTX ISA 9.0 "tcgen05.mma" gives no packing of
sub-byte A in TMEM columns): each is a SimError naming the address or the format, not a
result that looks right (docs/SIMULATOR.md, "Not modelled")."""

from __future__ import annotations

import numpy as np
import pytest

from tilemem.errors import SimError
from tilemem.ir.intrinsics.tcgen05 import _sim_mma, _sim_mma_block_scale
from tilemem.ir.nodes import UINT32, Const
from tilemem.layout.operand import instr_descriptor

from .hwfake import FakeContext, place, run

A_BASE, B_BASE, D_COL = 0x2000, 0xA000, 64


def _block_scaled(sfa_addr: int, sfb_addr: int) -> FakeContext:
    """kind::mxf4nvf4 .scale_vec::2X (UE8M0), M = 128, N = 64, K = 64 of zeros, issued."""
    ctx = FakeContext(warp=1)
    a_desc = place(ctx.smem, A_BASE, np.zeros((128, 64)), "float4_e2m1fn", "128B", "K", "sm_100a")
    b_desc = place(ctx.smem, B_BASE, np.zeros((64, 64)), "float4_e2m1fn", "128B", "K", "sm_100a")
    idesc = instr_descriptor(
        "mxf4nvf4", 128, 64, "float4_e2m1fn", "float4_e2m1fn", sf_dtype="float8_e8m0fnu",
        scale_vec=2,
    )  # fmt: skip
    run(
        _sim_mma_block_scale,
        ctx,
        "ptx.tcgen05.mma_block_scale",
        (None, None, None, Const(idesc, UINT32), None, None, None),
        [D_COL, a_desc, b_desc, idesc, sfa_addr, sfb_addr, 0],
        cta_group=1,
        kind="mxf4nvf4",
        scale_vec=2,
    )
    return ctx


def test_scale_factors_from_lane_0_run():
    ctx = _block_scaled(0, 16)
    ctx.tmem[:, :20] = 0x7F7F7F7F  # UE8M0 127: 2^0 = 1.0 in every byte
    ctx.complete_all()
    np.testing.assert_array_equal(ctx.tmem[:128, D_COL : D_COL + 64], 0)  # 0 x 1.0 = +0.0


@pytest.mark.parametrize(
    "operand, addresses",
    [("A", (1 << 16, 16)), ("A", (32 << 16, 16)), ("B", (0, 64 << 16 | 16))],
    ids=["A-lane-1", "A-lane-32", "B-lane-64"],
)
def test_scale_factors_at_another_lane_are_refused(operand, addresses):
    # 1 << 16 | 0 is lane 1, column 0; 64 << 16 | 16 lane 64, column 16 (TMEM addresses: lane
    # in bits 31-16, column in 15-0, PTX ISA 9.0 "Tensor Memory Addressing")
    ctx = _block_scaled(*addresses)
    address = addresses[0] if operand == "A" else addresses[1]
    with pytest.raises(SimError) as info:
        ctx.complete_all()
    assert str(info.value).startswith(
        f"tcgen05.mma scale factors at TMEM address {address:#010x} (lane {address >> 16}): "
        "only scale factors from lane 0 are modelled"
    )


@pytest.mark.parametrize(
    "fmt, bits", [("float4_e2m1fn", 4), ("float6_e2m3fn", 6), ("float6_e3m2fn", 6)]
)
def test_sub_byte_a_in_tensor_memory_is_refused(fmt, bits):
    ctx = FakeContext(warp=1)
    b_desc = place(ctx.smem, B_BASE, np.zeros((32, 32)), "float8_e4m3fn", "128B", "K", "sm_100a")
    idesc = instr_descriptor("f8f6f4", 128, 32, fmt, "float8_e4m3fn", "float32")
    run(
        _sim_mma,
        ctx,
        "ptx.tcgen05.mma",
        (None, None, None, Const(idesc, UINT32), None),
        [D_COL, 128, b_desc, idesc, 0],  # A at TMEM lane 0, column 128
        cta_group=1,
        a_tmem=True,
        kind="f8f6f4",
    )
    with pytest.raises(SimError) as info:
        ctx.complete_all()
    assert str(info.value).startswith(
        f"tcgen05.mma with A in tensor memory as {fmt}: how {bits}-bit A elements are packed "
        "into TMEM columns is not modelled"
    )


def test_8_bit_a_in_tensor_memory_runs():
    # e4m3 A in TMEM (4 per 32-bit column, low byte first) is modelled: 1.0 x 1.0 summed over
    # K = 32 gives 32 in every D cell
    ctx = FakeContext(warp=1)
    b_desc = place(ctx.smem, B_BASE, np.ones((32, 32)), "float8_e4m3fn", "128B", "K", "sm_100a")
    idesc = instr_descriptor("f8f6f4", 128, 32, "float8_e4m3fn", "float8_e4m3fn", "float32")
    ctx.tmem[:128, 128:136] = 0x38383838  # e4m3 1.0 is 0x38: four per column, 8 columns = K 32
    run(
        _sim_mma,
        ctx,
        "ptx.tcgen05.mma",
        (None, None, None, Const(idesc, UINT32), None),
        [D_COL, 128, b_desc, idesc, 0],
        cta_group=1,
        a_tmem=True,
        kind="f8f6f4",
    )
    ctx.complete_all()
    np.testing.assert_array_equal(ctx.tmem[:128, D_COL : D_COL + 32].view(np.float32), 32.0)
