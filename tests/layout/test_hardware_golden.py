"""Golden checks against the byte-address rules of docs/HARDWARE-RULES.md, derived here
independently.

The hardware (TMA, wgmma, tcgen05) applies ``Swizzle<B, 4, 3>`` to the absolute
shared-memory byte address: bits [4, 4+B) ^= bits [7, 7+B). A K-major operand
tile loaded by TMA with a box one swizzle row wide lands as consecutive boxes
along K, each box an R x row_bytes row-major block. So element (r, k) of stage
s sits at the swizzle of::

    base + s * tile_bytes + (k // C) * R * row_bytes + r * row_bytes + (k % C) * elem_bytes

With no swizzle the MMA reads 8-row x 16-byte core matrices, K-adjacent ones
R * 16 bytes apart (LBO), row-adjacent 16 bytes apart.
"""

import itertools

import pytest

from tilemem import SMEMPool
from tilemem.layout import sf_tmem_layout, tmem_datapath_layout

SWIZZLE_BITS = {"32B": 1, "64B": 2, "128B": 3}
ROW_BYTES = {"32B": 32, "64B": 64, "128B": 128}
BITS = {
    "float32": 32,
    "bfloat16": 16,
    "float16": 16,
    "float8_e4m3fn": 8,
    "int8": 8,
    "float4_e2m1fn": 4,
}


def cute_swizzle(addr: int, b: int, m: int = 4, s: int = 3) -> int:
    """CuTe Swizzle<B, M, S> on a byte address (docs/HARDWARE-RULES.md)."""
    mask = ((1 << b) - 1) << (m + s)
    return addr ^ ((addr & mask) >> s)


def hardware_bit_address(mode, bits, shape, base, coord):
    """Bit address the hardware uses for element ``coord`` of a K-major tile at byte ``base``."""
    *lead, rows, cols = shape
    tile_bits = rows * cols * bits
    stage = 0
    for extent, c in zip(lead, coord[:-2]):
        stage = stage * extent + c
    r, k = coord[-2:]
    if mode == "none":
        per16 = 128 // bits
        linear_bits = stage * tile_bits + (k // per16) * rows * 128 + r * 128 + (k % per16) * bits
        return base * 8 + linear_bits
    per_row = ROW_BYTES[mode] * 8 // bits
    linear_bits = (
        stage * tile_bits + ((k // per_row) * rows + r) * ROW_BYTES[mode] * 8 + (k % per_row) * bits
    )
    byte, sub = divmod(base * 8 + linear_bits, 8)
    return cute_swizzle(byte, SWIZZLE_BITS[mode]) * 8 + sub


def tilemem_bit_address(buf, coord):
    return buf.byte_offset * 8 + buf.layout.apply(*coord)["m"] * buf.dtype.bits


CASES = [
    ("128B", "bfloat16", (128, 64)),
    ("128B", "bfloat16", (3, 64, 128)),
    ("128B", "float32", (2, 2, 8, 64)),
    ("128B", "float8_e4m3fn", (64, 256)),
    ("128B", "float4_e2m1fn", (2, 32, 256)),
    ("64B", "bfloat16", (2, 64, 32)),
    ("64B", "int8", (128, 128)),
    ("64B", "float32", (16, 32)),
    ("32B", "float16", (4, 32, 16)),
    ("32B", "float8_e4m3fn", (64, 64)),
    ("none", "bfloat16", (2, 64, 32)),
    ("none", "float32", (16, 8)),
    ("none", "int8", (8, 48)),
]


@pytest.mark.parametrize("mode,dtype,shape", CASES)
def test_buffers_after_other_allocations_match_hardware_addresses(mode, dtype, shape):
    smem = SMEMPool()
    smem.alloc((3,), "uint64", name="bars")  # pushes the cursor off the period
    smem.alloc((100,), "uint8", name="junk")
    period = 8 * ROW_BYTES.get(mode, 2)
    buf = smem.alloc_mma(shape, dtype, mode, align=max(period, 128), name="tile")
    assert buf.byte_offset > 0 and buf.byte_offset % period == 0
    for coord in itertools.product(*(range(n) for n in shape)):
        assert tilemem_bit_address(buf, coord) == hardware_bit_address(
            mode, BITS[dtype], shape, buf.byte_offset, coord
        ), coord


def test_known_128b_addresses_of_a_bf16_tile():
    # Row 1 of a 128B-swizzled bf16 tile: its 16-byte chunks are XORed with 1,
    # so element (1, 0) sits in chunk 1 of row 1: byte 128 + 16.
    smem = SMEMPool()
    buf = smem.alloc_mma((8, 64), "bfloat16", "128B")
    assert buf.layout.apply(1, 0)["m"] * 2 == 144
    assert buf.layout.apply(7, 8)["m"] * 2 == 7 * 128 + (1 ^ 7) * 16
    assert buf.layout.apply(0, 63)["m"] * 2 == 126


# --- TMEM layouts against the formulas of docs/DESIGN.md#named-layouts / PTX data paths ---


def datapath_formula(letter, rows, cols, sub_slab, r, c):
    if letter in "AD":
        return r, c
    if letter in "BE":
        return r + 64 * (c // (cols // 2)), c % (cols // 2)
    if letter in "FC":
        return 32 * (r // 16) + r % 16 + 16 * sub_slab, c
    return r + 32 * (c // (cols // 4)), c % (cols // 4)


@pytest.mark.parametrize(
    "letter,rows", [("A", 128), ("B", 64), ("C", 64), ("D", 128), ("E", 64), ("F", 64), ("G", 32)]
)
@pytest.mark.parametrize("cols", [8, 64, 256])
def test_datapath_layouts_follow_the_formulas(letter, rows, cols):
    for sub in (0, 1) if letter in "FC" else (0,):
        layout = tmem_datapath_layout(letter, rows, cols, sub)
        for r, c in itertools.product(range(rows), range(cols)):
            lane, col = datapath_formula(letter, rows, cols, sub, r, c)
            assert layout.apply(r, c) == {"TLane": lane, "TCol": col}


def sf_formula(rows, sf_k, spm, r, k, pipe=None, stage=0):
    kmma, groups = sf_k // spm, rows // 32
    pf = 4 // spm
    while kmma % pf:
        pf //= 2
    ko = kmma // pf
    ki, j = divmod(k, spm)
    kout, p = divmod(ki, pf)
    col = 4 * (r // 32) + kout * 4 * groups + p * spm + j
    return r % 32, col + stage * 4 * groups * ko


@pytest.mark.parametrize(
    "rows,sf_k,spm", [(128, 16, 4), (128, 8, 2), (64, 12, 1), (256, 16, 4), (32, 6, 2), (128, 4, 4)]
)
def test_sf_layout_follows_the_formula(rows, sf_k, spm):
    layout = sf_tmem_layout(rows, sf_k, spm, pipe_depth=3)
    for s, r, k in itertools.product(range(3), range(rows), range(sf_k)):
        lane, col = sf_formula(rows, sf_k, spm, r, k, stage=s)
        assert layout.apply(s, r, k) == {"TLane": lane, "TCol": col}
        copies = layout.replica_positions(s, r, k)
        assert sorted(p["TLane"] for p in copies) == [lane, lane + 32, lane + 64, lane + 96]


def test_sf_reuse_reads_each_factor_several_times():
    layout = sf_tmem_layout(128, 16, 4, sf_reuse=2)
    for k in range(16):
        assert (
            layout.apply(5, 2 * k)
            == layout.apply(5, 2 * k + 1)
            == dict(zip(("TLane", "TCol"), sf_formula(128, 16, 4, 5, k)))
        )


def test_sf_stage_stride_is_one_whole_stage_not_tirx_4m():
    # rows 128 (M = 4 groups), SF_K = 16, 4 per MMA: K = 4 MMAs, pf = 1, Ko = 4.
    # A stage spans 4*M*Ko = 64 TCol elements (16 columns); TIRx's 4*M = 16 would overlap.
    layout = sf_tmem_layout(128, 16, 4, pipe_depth=2)
    assert layout.shard[0].stride == 64
    assert layout.apply(1, 0, 0)["TCol"] == 64
