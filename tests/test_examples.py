"""The built-in examples hold the numbers a kernel author would compute by hand."""

from tilemem.examples import (
    attention_fwd_fa4,
    blackwell_gemm_bf16,
    blockscaled_nvfp4_gemm,
    hopper_gemm_bf16,
)

KIB = 1024


def test_hopper_gemm_stage_bytes():
    plan = hopper_gemm_bf16().plan()
    # A: 4 x 128 x 64 bf16 = 64 KiB; B: 4 x 256 x 64 bf16 = 128 KiB; C slice 128 x 64 bf16 = 16 KiB
    assert [plan.entry(n).length for n in ("A", "B", "C_epilogue")] == [
        64 * KIB,
        128 * KIB,
        16 * KIB,
    ]
    assert plan.smem.committed == 208 * KIB + 2 * 4 * 8


def test_blackwell_gemm_double_buffers_the_accumulator():
    smem = blackwell_gemm_bf16()
    tmem = smem.tmem_pools[0]
    (acc,) = tmem.buffers
    assert acc.cols == 512 and tmem.total_cols == 512
    views = tmem.stage_views[0]
    assert [views[s].col_offset for s in range(2)] == [0, 256]


def test_nvfp4_scale_factor_columns():
    tmem = blockscaled_nvfp4_gemm().tmem_pools[0]
    sizes = {b.name: (b.col_offset, b.cols) for b in tmem.buffers}
    # SFA: 2 stages x (128/32 groups) x (16 factors / 4 per column) = 32 columns; SFB with 256 rows:
    # 64
    assert sizes == {"acc": (0, 256), "SFA": (256, 32), "SFB": (288, 64)}
    assert tmem.total_cols == 512  # "auto" over 352 columns


def test_attention_aliases_p_over_the_upper_half_of_s():
    plan = attention_fwd_fa4().plan()
    tmem = plan.tmem[0]
    cols = {e.name: (e.offset, e.length) for e in tmem.entries}
    assert cols["S0"] == (0, 128) and cols["S1"] == (128, 128)
    assert cols["O0"] == (256, 128) and cols["O1"] == (384, 128)
    assert cols["P0"] == (64, 64) and cols["P1"] == (192, 64)
    assert plan.entry("P0").overlaps == ("S0",)
