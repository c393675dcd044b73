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
    # the C slice is written after the last wgmma read the last stage: it lies over A
    assert plan.entry("C_epilogue").offset == 0
    assert plan.smem.committed == plan.lower_bound == 192 * KIB + 2 * 4 * 8
    assert plan.smem.bump == 208 * KIB + 2 * 4 * 8


def test_a_persistent_gemm_keeps_the_epilogue_tile_beside_the_stages():
    # tile i's epilogue runs while tile i+1's mainloop loads: C is live in both phases
    plan = hopper_gemm_bf16(persistent=True).plan()
    assert plan.entry("C_epilogue").overlaps == ()
    assert plan.smem.committed == plan.lower_bound == 208 * KIB + 2 * 4 * 8


def test_blackwell_gemm_epilogue_tile_over_drained_stages():
    plan = blackwell_gemm_bf16().plan()
    # A + B stages 192 KiB, 4 + 4 load barriers and 2 + 2 accumulator barriers, the TMEM slot
    assert plan.footprint == plan.lower_bound == 192 * KIB + 12 * 8 + 4
    persistent = blackwell_gemm_bf16(persistent=True).plan()
    assert persistent.footprint == 208 * KIB + 12 * 8 + 4


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


def test_nvfp4_epilogue_tile_over_drained_stages():
    plan = blockscaled_nvfp4_gemm().plan()
    # per stage: A 128 x 128 B + B 256 x 128 B (fp4 K=256) + SFA 128 x 16 + SFB 256 x 16 = 54 KiB
    stages = 4 * (16 + 32 + 2 + 4) * KIB
    assert plan.entry("C_epilogue").offset < stages
    assert plan.footprint == plan.lower_bound == stages + (4 + 4 + 1) * 8 + 4


def test_attention_aliases_p_over_the_upper_half_of_s():
    plan = attention_fwd_fa4().plan()
    tmem = plan.tmem[0]
    cols = {e.name: (e.offset, e.length) for e in tmem.entries}
    assert cols["S0"] == (0, 128) and cols["S1"] == (128, 128)
    assert cols["O0"] == (256, 128) and cols["O1"] == (384, 128)
    assert cols["P0"] == (64, 64) and cols["P1"] == (192, 64)
    assert plan.entry("P0").overlaps == ("S0",)
    assert plan.entry("P0").alias_of == "S0"


def test_attention_output_tile_over_q():
    plan = attention_fwd_fa4().plan()
    # Q 2 x 128 x 128 bf16 = 64 KiB, KV 3 x 32 KiB, 14 barriers, the TMEM slot; O (32 KiB) over Q
    assert plan.entry("O_epilogue").overlaps == ("Q",)
    assert plan.footprint == plan.lower_bound == 160 * KIB + 14 * 8 + 4
    assert plan.smem.bump == plan.footprint + 32 * KIB


def test_tilemem_plan_prints_the_phase_table(capsys):
    from tilemem.cli import main

    assert main(["plan", "--example", "attention-fwd"]) == 0
    out = capsys.readouterr().out
    assert "packed by lifetime: footprint 163956 bytes, lower bound 163956 bytes" in out
    assert "O_epilogue    .         #         [0, 32768)" in out
