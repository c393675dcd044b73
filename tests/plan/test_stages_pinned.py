"""Stage solver and per-CTA shared-memory limit, pinned at their exact boundaries.

Limits from docs/HARDWARE-RULES.md's table (CUDA C++ Programming Guide, compute capability
9.0/10.0): 228 KiB = 233,472 B of shared memory per SM, opt-in maximum 227 KiB = 232,448 B per
block, 1 KiB reserved by the system per resident block. MMA tiles default to 1024-byte alignment
(docs/DESIGN.md#smem-pools, ``alloc_mma(..., align=1024)``); a swizzled tile also needs its swizzle
period (256/512/1024 B for 32B/64B/128B, docs/HARDWARE-RULES.md#swizzle-modes).
"""

import numpy as np
import pytest

from tilemem.errors import AlignmentError, CapacityError, DTypeError, LayoutError, SwizzleError
from tilemem.plan import BufferRequest, smem_limit, solve_stages
from tilemem.plan.stages import bytes_for

SM90_BLOCK_MAX = 232_448
BARRIERS = BufferRequest("bars", (2,), "uint64")  # 16 bytes at offset 0


def test_smem_limit_defaults_to_one_cta_per_sm():
    # min(232,448, 233,472 // 1 - 1,024 = 232,448)
    assert smem_limit("sm_90a") == SM90_BLOCK_MAX


@pytest.mark.parametrize(
    ("target", "ctas", "limit"),
    [
        ("sm_90a", 2, 233_472 // 2 - 1_024),  # 115,712
        ("sm_90a", 3, 233_472 // 3 - 1_024),  # 76,800
        ("sm_86", 2, 102_400 // 2 - 1_024),  # 50,176
        ("sm_86", 1, 101_376),  # 102,400 - 1,024 = the 99 KiB block maximum
    ],
)
def test_smem_limit_shares_the_sm_between_ctas(target, ctas, limit):
    assert smem_limit(target, ctas) == limit


def test_smem_limit_at_the_most_resident_blocks():
    # sm_90a holds at most 32 blocks per SM: 233,472 // 32 - 1,024 = 6,272
    assert smem_limit("sm_90a", 32) == 6_272


@pytest.mark.parametrize("ctas", [0, -1, 33])
def test_smem_limit_refuses_cta_counts_outside_one_to_the_block_limit(ctas):
    with pytest.raises(CapacityError, match=rf"ctas_per_sm .*\[1, 32\], got {ctas}"):
        smem_limit("sm_90a", ctas)


def test_one_stage_filling_the_block_exactly_fits():
    # (1, 232,448) uint8 = exactly the sm_90a block maximum: fits, 0 bytes left
    sol = solve_stages([BufferRequest("x", (SM90_BLOCK_MAX,), "uint8", per_stage=True)], "sm_90a")
    assert (sol.stages, sol.bytes_used, sol.bytes_left) == (1, SM90_BLOCK_MAX, 0)


def test_one_byte_over_the_block_is_refused():
    request = BufferRequest("x", (SM90_BLOCK_MAX + 1,), "uint8", per_stage=True)
    with pytest.raises(CapacityError, match=r"needs 232449 bytes .* remove at least 1 bytes"):
        solve_stages([request], "sm_90a")


def test_two_stages_filling_the_block_exactly_are_both_taken():
    # 2 x 116,224 = 232,448: the second stage fits with 0 bytes left
    request = BufferRequest("x", (SM90_BLOCK_MAX // 2,), "uint8", per_stage=True)
    sol = solve_stages([request], "sm_90a")
    assert (sol.stages, sol.bytes_left, sol.per_stage_bytes) == (2, 0, 116_224)


def test_stage_count_stops_at_64_by_default():
    # 8 bytes per stage: 64 stages = 512 bytes, far below the limit; the cap decides
    sol = solve_stages([BufferRequest("bar", (), "uint64", per_stage=True)], "sm_90a")
    assert (sol.stages, sol.bytes_used) == (64, 512)


@pytest.mark.parametrize("cap", [1, 2, 7])
def test_stage_count_stops_at_max_stages(cap):
    request = BufferRequest("bar", (), "uint64", per_stage=True)
    sol = solve_stages([request], "sm_90a", max_stages=cap)
    assert (sol.stages, sol.bytes_used) == (cap, 8 * cap)


def test_solver_needs_a_per_stage_buffer():
    with pytest.raises(CapacityError, match=r"at least one per_stage=True buffer"):
        solve_stages([BARRIERS], "sm_90a")


def test_swizzled_tile_defaults_to_1024_byte_alignment():
    # a 32B-swizzled (8, 16) bf16 tile is 256 bytes with a 256-byte period, but an MMA tile
    # starts on 1024 bytes unless told otherwise: 16 B of barriers, tile at 1024
    tile = BufferRequest("A", (8, 16), "bfloat16", swizzle="32B", per_stage=True)
    sol = solve_stages([BARRIERS, tile], "sm_90a", max_stages=1)
    assert sol.bytes_used == 1024 + 256


def test_explicit_alignment_is_raised_to_the_swizzle_period():
    # align=16 asked, 128B swizzle needs 1024: the tile still starts at 1024
    tile = BufferRequest("A", (8, 64), "bfloat16", swizzle="128B", align=16, per_stage=True)
    assert solve_stages([BARRIERS, tile], "sm_90a", max_stages=1).bytes_used == 1024 + 1024


def test_explicit_alignment_above_the_period_is_kept():
    # 32B period 256 < align 2048: the tile starts at 2048
    tile = BufferRequest("A", (8, 16), "bfloat16", swizzle="32B", align=2048, per_stage=True)
    assert solve_stages([BARRIERS, tile], "sm_90a", max_stages=1).bytes_used == 2048 + 256


@pytest.mark.parametrize(
    ("shape", "period"),
    [
        ((8, 64), 1024),  # 128-byte rows -> 128B swizzle, period 1024
        ((8, 32), 512),  # 64-byte rows -> 64B, period 512
        ((8, 16), 256),  # 32-byte rows -> 32B, period 256
        ((8, 8), 16),  # 16-byte rows -> no swizzle, 16-byte core matrices
    ],
)
def test_auto_swizzle_follows_the_row_width(shape, period):
    # align=16 leaves the period as the only alignment above 16: it shows the mode picked
    tile = BufferRequest("A", shape, "bfloat16", swizzle="auto", align=16, per_stage=True)
    sol = solve_stages([BARRIERS, tile], "sm_90a", max_stages=1)
    assert sol.bytes_used == max(16, period) + shape[0] * shape[1] * 2


def test_auto_swizzle_reads_the_row_of_a_staged_tile():
    # (stages, 128, 32) bf16: rows of 64 bytes -> 64B; reading 128 as the row would pick
    # 128B and then refuse the 64-byte rows
    tile = BufferRequest("A", (128, 32), "bfloat16", swizzle="auto", per_stage=True)
    sol = solve_stages([tile], "sm_90a", max_stages=2)
    assert (sol.stages, sol.bytes_used) == (2, 2 * 128 * 32 * 2)


@pytest.mark.parametrize(
    ("shape", "mode", "words"),
    [
        ((100, 64), "128B", "multiple of 8"),  # rows not in 8-row atoms
        ((128, 48), "128B", "multiple of 128 bytes"),  # 96-byte rows
    ],
)
def test_explicit_swizzle_is_checked_by_the_solver(shape, mode, words):
    tile = BufferRequest("A", shape, "bfloat16", swizzle=mode, per_stage=True)
    with pytest.raises(SwizzleError, match=words):
        solve_stages([tile], "sm_90a")


def test_solution_text_names_stages_and_bytes():
    # 4 x 49,168 + 16,384 + padding of the GEMM in test_capacity: numbers from there
    sol = solve_stages(
        [
            BufferRequest("A", (128, 64), "bfloat16", swizzle="128B", per_stage=True),
            BufferRequest("B", (256, 64), "bfloat16", swizzle="128B", per_stage=True),
            BufferRequest("C_epilogue", (128, 64), "bfloat16", swizzle="128B"),
            BufferRequest("full_bar", (), "uint64", per_stage=True),
            BufferRequest("empty_bar", (), "uint64", per_stage=True),
        ],
        "sm_90a",
    )
    assert str(sol) == ("4 stages: 213056 of 232448 bytes used, 19392 left (49168 bytes per stage)")


def test_solution_text_for_one_stage_is_singular():
    sol = solve_stages([BufferRequest("x", (SM90_BLOCK_MAX,), "uint8", per_stage=True)], "sm_90a")
    assert str(sol) == "1 stage: 232448 of 232448 bytes used, 0 left (232448 bytes per stage)"


# -- requests are checked where they are written ----------------------------------------------


def test_request_shape_is_normalised_to_python_ints():
    request = BufferRequest("A", [np.int64(128), 64], "bfloat16")
    assert request.shape == (128, 64)
    assert all(type(s) is int for s in request.shape)


def test_request_with_an_empty_shape_is_one_element():
    assert BufferRequest("bar", (), "uint64").placement(1) == (8, 8)


@pytest.mark.parametrize("shape", [(0, 64), (128, 0), (-1,), (2.0, 4), (True, 4), "128", 128, None])
def test_request_refuses_bad_shapes(shape):
    with pytest.raises(
        CapacityError, match=r"BufferRequest 'A': shape must be a tuple of positive"
    ):
        BufferRequest("A", shape)


@pytest.mark.parametrize("name", ["", "1st", "a-b", 3, "for"])
def test_request_refuses_bad_names(name):
    with pytest.raises(CapacityError, match="BufferRequest name"):
        BufferRequest(name, (1,))


def test_request_refuses_an_unknown_dtype():
    with pytest.raises(DTypeError, match="float7"):
        BufferRequest("A", (1,), "float7")


def test_request_refuses_a_bad_alignment():
    with pytest.raises(AlignmentError, match="got 48; use 64"):
        BufferRequest("A", (1,), align=48)


@pytest.mark.parametrize("per_stage", [1, 0, "yes", None])
def test_request_per_stage_must_be_a_bool(per_stage):
    with pytest.raises(CapacityError, match=r"per_stage must be True or False"):
        BufferRequest("A", (1,), per_stage=per_stage)


def test_request_refuses_an_unknown_swizzle():
    with pytest.raises(LayoutError, match="unknown swizzle mode '256B'"):
        BufferRequest("A", (8, 64), "bfloat16", swizzle="256B")


def test_request_alignment_is_at_least_the_element_size():
    # float32 natural alignment 4; align=2 asked: 4 wins (docs/DESIGN.md#smem-pools)
    assert BufferRequest("A", (3,), "float32", align=2).placement(1) == (12, 4)
    assert BufferRequest("A", (3,), "float32", align=64).placement(1) == (12, 64)


@pytest.mark.parametrize("requests", [[("A", (1,))], [BufferRequest("A", (1,), per_stage=True), 3]])
def test_solver_takes_only_requests(requests):
    with pytest.raises(CapacityError, match="solve_stages takes BufferRequest objects"):
        solve_stages(requests, "sm_90a")


@pytest.mark.parametrize("cap", [0, -1, (1 << 20) + 1, 2.0, True])
def test_max_stages_must_be_between_1_and_2_20(cap):
    with pytest.raises(CapacityError, match=r"max_stages must be an integer in \[1, 1048576\]"):
        solve_stages([BufferRequest("bar", (), "uint64", per_stage=True)], "sm_90a", max_stages=cap)


def test_max_stages_of_2_20_is_accepted_and_the_limit_decides():
    # 8 bytes per stage: 232,448 / 8 = 29,056 stages fill sm_90a's block exactly
    request = BufferRequest("bar", (), "uint64", per_stage=True)
    sol = solve_stages([request], "sm_90a", max_stages=1 << 20)
    assert (sol.stages, sol.bytes_left) == (29_056, 0)


@pytest.mark.parametrize("stages", [31, 32, 33, 63, 64])
def test_exactly_n_stages_fill_the_block(stages):
    # a per-stage tile of 232,448 // n bytes: n stages fit (n * size <= 232,448), n + 1 do not
    size = SM90_BLOCK_MAX // stages
    sol = solve_stages([BufferRequest("x", (size,), "uint8", per_stage=True)], "sm_90a")
    assert (sol.stages, sol.bytes_used) == (stages, stages * size)


@pytest.mark.parametrize(
    "requests", ["AB", b"AB", 5, None, BufferRequest("A", (1,), per_stage=True)]
)
def test_solver_takes_a_list(requests):
    with pytest.raises(CapacityError, match="solve_stages takes a list of BufferRequest, got"):
        solve_stages(requests, "sm_90a")


def test_solver_takes_any_iterable_of_requests():
    requests = (r for r in [BufferRequest("bar", (), "uint64", per_stage=True)])
    assert solve_stages(requests, "sm_90a", max_stages=3).stages == 3


def test_request_phases_become_a_frozen_set():
    request = BufferRequest("A", (8,), "uint8", live=["load", "store", "load"])
    assert request.live == frozenset({"load", "store"})
    assert isinstance(request.live, frozenset)


def test_one_request_with_live_makes_the_solver_pack_them_all():
    # load 1,024 B and store 1,024 B never live together: they share bytes [0, 1,024); the
    # request without live= is live in both phases and takes 256 B of its own:
    # 1,024 + 256 = 1,280 (bump placement would need 1,024 + 1,024 + 256 = 2,304)
    requests = [
        BufferRequest("load", (1024,), "uint8", live={"load"}),
        BufferRequest("store", (1024,), "uint8", live={"store"}),
        BufferRequest("always", (256,), "uint8"),
    ]
    assert bytes_for(requests, 1) == 1_280
