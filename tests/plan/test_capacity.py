"""Capacity errors, occupancy, stage solving and padding advice on real configurations.

Expected numbers are computed by hand in the comments from docs/HARDWARE-RULES.md's table
(sm_90a/sm_100a: 233,472 B per SM, 232,448 B per block; sm_120: 102,400 / 101,376).
"""

import pytest

from tilemem import SMEMPool
from tilemem.errors import CapacityError
from tilemem.examples import attention_fwd_fa4, hopper_gemm_bf16
from tilemem.plan import (
    BufferRequest,
    best_order,
    occupancy,
    padding_advice,
    solve_stages,
)

# 128x256x64 bf16 GEMM: per stage A 16,384 + B 32,768 + full/empty barriers 16; fixed epilogue
# 16,384
GEMM = [
    BufferRequest("A", (128, 64), "bfloat16", swizzle="128B", per_stage=True),
    BufferRequest("B", (256, 64), "bfloat16", swizzle="128B", per_stage=True),
    BufferRequest("C_epilogue", (128, 64), "bfloat16", swizzle="128B"),
    BufferRequest("full_bar", (), "uint64", per_stage=True),
    BufferRequest("empty_bar", (), "uint64", per_stage=True),
]


def test_gemm_stages_on_sm90a():
    # s stages: 49,152 s + 16,384 + 16 s. s = 4: 213,056 <= 232,448; s = 5: 262,224 > it.
    sol = solve_stages(GEMM, "sm_90a")
    assert (sol.stages, sol.bytes_used, sol.bytes_left) == (4, 213_056, 19_392)
    assert sol.per_stage_bytes == 49_168


def test_gemm_stages_on_sm120():
    # s = 1: 65,552 <= 101,376; s = 2: 114,720 > it.
    sol = solve_stages(GEMM, "sm_120")
    assert (sol.stages, sol.bytes_left) == (1, 101_376 - 65_552)


def test_gemm_stages_for_two_ctas_per_sm():
    # per CTA: 233,472 / 2 - 1,024 = 115,712; s = 2: 114,720 fits, s = 3: 163,904 does not
    sol = solve_stages(GEMM, "sm_90a", ctas_per_sm=2)
    assert (sol.stages, sol.limit, sol.bytes_left) == (2, 115_712, 992)


def test_solver_agrees_with_the_pool_it_predicts():
    sol = solve_stages(GEMM, "sm_90a")
    # the solver models bump placement; the example packs C over drained stages, below it
    assert hopper_gemm_bf16(sol.stages).plan().smem.bump == sol.bytes_used


def test_attention_kv_stages_on_sm100a():
    # Q 65,536 + KV 32,768 s + O 32,768 + barriers (16 + 8 s + 8 s + 48) + TMEM slot 4
    # = 98,372 + 32,784 s: s = 4 -> 229,508 <= 232,448; s = 5 -> 262,292 > it.
    requests = [
        BufferRequest("Q", (2, 128, 128), "bfloat16", swizzle="128B"),
        BufferRequest("KV", (128, 128), "bfloat16", swizzle="128B", per_stage=True),
        BufferRequest("O", (128, 128), "bfloat16", swizzle="128B"),
        BufferRequest("q_full", (2,), "uint64"),
        BufferRequest("kv_full", (), "uint64", per_stage=True),
        BufferRequest("kv_empty", (), "uint64", per_stage=True),
        BufferRequest("s_p_o_full", (6,), "uint64"),
        BufferRequest("tmem_addr", (1,), "uint32"),
    ]
    sol = solve_stages(requests, "sm_100a")
    assert (sol.stages, sol.bytes_used, sol.bytes_left) == (4, 229_508, 2_940)
    assert attention_fwd_fa4(kv_stages=4).plan().smem.bump == 229_508


def test_solver_says_when_nothing_fits():
    with pytest.raises(CapacityError) as exc:
        solve_stages([BufferRequest("huge", (512, 128), "float32", per_stage=True)], "sm_86")
    assert (
        "262144 bytes" in str(exc.value)
        and "101376" in str(exc.value)
        and "remove at least 160768" in str(exc.value)
    )


def test_overflowing_gemm_error_lists_buffers_padding_and_stages_that_fit():
    with pytest.raises(CapacityError) as exc:
        hopper_gemm_bf16(stages=6)  # 6 x 49,152 + 96 = 295,008 bytes (C packed over A)
    msg = str(exc.value)
    for fact in (
        "295008 bytes",
        "232448",
        "remove at least 62560 bytes",
        "A",
        "98304 B",
        "B",
        "196608 B",
        "padding lost to alignment: 0 bytes",
        "6 stages of 49168 bytes each; 4 stages would fit on sm_90a",
    ):
        assert fact in msg, fact


def test_overflow_on_sm120_says_two_stages_fit():
    # sm_120: 101,376 bytes per block. C_epilogue lies over the drained stages, so
    # 2 x 49,152 + 64 = 98,368 fits; 3 x 49,152 + 96 = 147,552 does not.
    with pytest.raises(
        CapacityError, match="4 stages of 49168 bytes each; 2 stages would fit on sm_120"
    ):
        hopper_gemm_bf16(stages=4, target="sm_120")


def test_occupancy_names_the_binding_limit():
    # 213,056 + 1,024 reserve: 233,472 // 214,080 = 1 CTA by shared memory
    occ = hopper_gemm_bf16().plan().occupancy(384)
    assert (occ.ctas_per_sm, occ.binding) == (1, "shared memory")
    assert occ.limits == {"shared memory": 1, "threads": 5, "block slots": 32}
    # 16 KiB blocks of 1024 threads: threads bind at 2
    occ = occupancy(16 * 1024, 1024, "sm_90a")
    assert (occ.ctas_per_sm, occ.binding, occ.limits["shared memory"]) == (2, "threads", 13)


def test_occupancy_of_sm86_counts_threads_per_sm_1536():
    occ = occupancy(0, 512, "sm_86")
    assert occ.limits["threads"] == 3 and occ.limits["block slots"] == 16


def test_padding_advice_finds_a_better_order():
    smem = SMEMPool()
    smem.alloc((1,), "uint8", name="flag")  # 1 byte, then 1023 bytes of padding
    smem.alloc_mma((64, 64), "bfloat16", name="A")
    smem.alloc((1,), "uint8", name="flag2")
    plan = smem.plan().smem
    assert plan.padding == 1023 and plan.high_water == 1024 + 8192 + 1
    lines = padding_advice(plan)
    assert lines[0] == "1023 bytes lost to alignment padding"
    assert (
        "allocating in the order A, flag, flag2 saves 1023 bytes (high-water 9217 -> 8194)"
        in lines[1]
    )


def test_padding_advice_when_the_order_is_already_best():
    plan = hopper_gemm_bf16().plan().smem
    assert padding_advice(plan)[1] == "no allocation order saves bytes"
    _order, total = best_order(plan.entries)
    assert total == plan.bump


def test_plan_prints_occupancy_and_padding(capsys):
    from tilemem.cli import main

    assert main(["plan", "--example", "attention-fwd"]) == 0
    out = capsys.readouterr().out
    assert "occupancy (512 threads per CTA)" in out and "bound by shared memory" in out
    assert (
        "tmem columns  512 per CTA x 1 = 512 of 512 (ok)" in out
        and "bytes lost to alignment padding" in out
    )
