"""The persistent GEMM's kernel names, defaults, schedule defaults, the small-M zero fill and
two boundaries of ``launch_config``, each worked out by hand from the docstrings of
``gemm/hopper.py`` (and docs/PERFORMANCE.md, which reads profiles by these kernel names:
``..._a16/_a32/_a64``, ``hopper_gemm_splitk_reduce``)."""

from __future__ import annotations

import re

import pytest
from csource import evaluate, lets

from tilemem import T
from tilemem.gemm import plan as gemm_plan
from tilemem.gemm.hopper import Schedule, hopper_gemm_persistent, launch_config, splitk_reduce


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        # the defaults: CTAs alone, bf16, 256 wide, 128 rows of A, no promotion: no suffix
        ({}, "hopper_gemm_persistent"),
        ({"cluster_m": 2}, "hopper_gemm_persistent_cluster2"),
        ({"cluster_m": 4}, "hopper_gemm_persistent_cluster4"),
        ({"dtype": "float8_e4m3fn"}, "hopper_gemm_persistent_e4m3"),
        ({"tile_n": 128}, "hopper_gemm_persistent_n128"),
        ({"a_rows": 64}, "hopper_gemm_persistent_a64"),
        ({"split_k": True}, "hopper_gemm_persistent_splitk"),
        (
            {"dtype": "float8_e4m3fn", "tile_n": 192, "promote": True},
            "hopper_gemm_persistent_e4m3_n192_promote",
        ),
    ],
)
def test_kernel_name_has_a_suffix_for_each_setting_off_its_default(kwargs, name):
    assert hopper_gemm_persistent(**kwargs).name == name


def test_reduction_kernel_runs_256_threads_a_block():
    # splitk_reduce's docstring: grid ceil(M N / 256) of 256 threads, one an element
    program = splitk_reduce()
    assert program.name == "hopper_gemm_splitk_reduce" and program.ir.block == (256, 1, 1)
    (index,) = lets(program.source, "i")
    assert evaluate(index, bx=3, tx=5) == 3 * 256 + 5  # element of thread 5 of block 3


def test_a_schedule_without_split_k_has_one_k_range_of_index_zero():
    # Schedule: splits defaults to 1 (one K range per tile); tile() returns K range 0 (all
    # of K) when splits is a Python int
    seen = []

    @T.kernel(target="sm_90a", grid=(1,), block=(32,), name="schedule_probe")
    def probe(m_tiles: T.int32, n_tiles: T.int32, out: T.Buffer((2,), "int32")):
        sched = Schedule(m_tiles, n_tiles, 4, 8, 1, 0)
        seen.append(sched.splits)
        m_tile, n_tile, split = sched.tile(0, sched.units())
        seen.append(split)
        out[0] = m_tile
        out[1] = n_tile

    assert probe.name == "schedule_probe"
    assert seen == [1, 0] and all(type(v) is int for v in seen)


@pytest.mark.parametrize(
    ("a_rows", "dtype", "passes", "guarded"),
    [
        (32, "bfloat16", 2, 0),  # rows 32..63: two passes of 16 rows (4 warps x 4 rows)
        (16, "bfloat16", 3, 0),  # rows 16..63
        (8, "float8_e4m3fn", 4, 1),  # rows 8..63: the fourth pass covers 56..63, warps 0-1
    ],
)
def test_the_idle_consumer_zeroes_exactly_rows_a_rows_to_63(a_rows, dtype, passes, guarded):
    # _zero_a_rows: stmatrix.x4 of four zero words, 16 rows of 128 bytes a warpgroup pass,
    # once per pass and stage; a pass reaching past row 63 runs only in the warps below it
    src = hopper_gemm_persistent(1, dtype, 64, a_rows=a_rows).source
    stages = gemm_plan.hopper_gemm_persistent_plan(dtype, "sm_90a", 64, a_rows).buffer("A")
    start = src.index("int32_t z_row = ")
    branch = src[start : src.index("fence.proxy.async.shared::cta", start)]
    assert f"int32_t z_row = (({a_rows} + " in branch
    stores = re.findall(r"stmatrix[^\n]*", branch)
    assert len(stores) == passes * stages.shape[0]
    assert all(s.count('"r"((uint32_t)(0))') == 4 for s in stores)
    assert branch.count(f"((z_row + {16 * (passes - 1)}) < 64)") == guarded


def test_launch_config_takes_one_row():
    # M = 1, N = 64: one tile for every width, one round each; cost tile_n x WIDTH_COST:
    # 64 x 1.9 = 121.6 the cheapest (128 x 1.40 = 179.2, 192 x 1.03 = 197.8, ...), alone
    assert launch_config(1, 64, 132) == (64, 1)


def test_launch_config_pairs_two_rows_of_m_tiles():
    # M = 256 (2 M tiles), N = 512 on 2 SMs: 256 wide, 2 x 2 = 4 tiles > 2 SMs and two rows:
    # pairs, 1 x 2 = 2 units on 1 pair slot: 2 rounds, cost 512; 240: 3 N tiles, 3 rounds
    # (727.2); 192: 3 (593.3); 128: 4 (716.8); 64: 8 (972.8): (256, 2)
    assert launch_config(256, 512, 2) == (256, 2)
