"""Occupancy and the TMEM residency rule, pinned with hand-computed numbers.

CTAs per SM = min(smem_per_SM // (block bytes + 1 KB), threads_per_SM // threads, block
slots) (docs/HARDWARE-RULES.md, CUDA C++ Programming Guide occupancy rules); sm_90a / sm_100a:
233,472 B per SM, 232,448 B per block, 2,048 threads and 32 blocks per SM. TMEM residency:
docs/DESIGN.md#capacity-and-residency (512 columns per SM; the pools of one CTA must fit;
over-subscription is an error only for CTAs that wait on each other).
"""

import inspect
import warnings

import pytest

from tilemem import SMEMPool, TMEMPool
from tilemem.errors import CapacityError, TilememWarning
from tilemem.plan import Target, check_tmem_residency, occupancy
from tilemem.plan.occupancy import check_tmem_per_cta


def test_threads_bind_small_blocks():
    # smem 233,472 // 1,024 = 228; threads 2,048 // 128 = 16; slots 32
    occ = occupancy(0, 128, "sm_90a")
    assert occ.limits == {"shared memory": 228, "threads": 16, "block slots": 32}
    assert (occ.ctas_per_sm, occ.binding) == (16, "threads")


def test_shared_memory_binds_big_blocks():
    # 233,472 // (100,000 + 1,024) = 2
    occ = occupancy(100_000, 256, "sm_90a")
    assert (occ.ctas_per_sm, occ.binding, occ.limits["shared memory"]) == (2, "shared memory", 2)


def test_block_slots_bind_tiny_blocks():
    # threads 2,048 // 32 = 64 > 32 slots
    occ = occupancy(0, 32, "sm_90a")
    assert (occ.ctas_per_sm, occ.binding) == (32, "block slots")


def test_a_tie_names_the_first_limit():
    # sm_86: threads 1,536 // 96 = 16 = its 16 block slots
    occ = occupancy(0, 96, "sm_86")
    assert (occ.ctas_per_sm, occ.binding) == (16, "threads")


def test_the_largest_block_fits_once():
    # 232,448 + 1,024 = 233,472: exactly one block per SM
    occ = occupancy(232_448, 1024, "sm_90a")
    assert (occ.ctas_per_sm, occ.binding) == (1, "shared memory")
    assert occ.limits["threads"] == 2


def test_one_byte_more_is_refused():
    with pytest.raises(CapacityError) as exc:
        occupancy(232_449, 128, "sm_90a")
    assert str(exc.value) == (
        "232449 bytes of shared memory per block exceed sm_90a's 232448: remove at least 1 bytes"
    )


@pytest.mark.parametrize("threads", [0, 1025])
def test_threads_per_block_lie_in_1_to_1024(threads):
    with pytest.raises(CapacityError) as exc:
        occupancy(0, threads, "sm_90a")
    assert str(exc.value) == f"{threads} threads per block; sm_90a allows 1 to 1024"


def test_one_thread_is_a_block():
    assert occupancy(0, 1, "sm_90a").limits["threads"] == 2048


@pytest.mark.parametrize(
    ("args", "what"), [((-1, 128), "smem_bytes"), ((0, 2.0), "threads"), ((0, 128, -1), "tmem")]
)
def test_occupancy_arguments_are_integers(args, what):
    smem, threads, *tmem = args
    with pytest.raises(CapacityError, match=what):
        occupancy(smem, threads, "sm_100a", *tmem)


def test_lines_show_every_limit():
    assert occupancy(0, 128, "sm_90a").lines() == [
        "16 CTA(s) per SM on sm_90a with 128 threads, bound by threads",
        "shared memory allows 228",
        "threads       allows 16",
        "block slots   allows 32",
    ]


def test_lines_show_tmem_at_exactly_512_as_ok():
    lines = occupancy(0, 128, "sm_100a", tmem_cols=32).lines()
    assert lines[-1] == "tmem columns  32 per CTA x 16 = 512 of 512 (ok)"


def test_lines_show_tmem_over_512_as_blocking():
    lines = occupancy(0, 128, "sm_100a", tmem_cols=64).lines()
    assert lines[-1] == (
        "tmem columns  64 per CTA x 16 = 1024 of 512 (tcgen05.alloc would block: see "
        "check_tmem_residency)"
    )


# -- TMEM residency ------------------------------------------------------------------------


def test_pools_of_one_cta_may_fill_512_columns():
    assert check_tmem_per_cta([("a", 256), ("b", 256)]) == 512
    assert check_tmem_per_cta([]) == 0


def test_pools_of_one_cta_above_512_are_refused():
    with pytest.raises(CapacityError) as exc:
        check_tmem_per_cta([("a", 256), ("b", 512)])
    assert str(exc.value).startswith(
        "TMEM pools a (256) + b (512) = 768 columns in one CTA, but tensor memory has 512"
    )


def _quietly(**kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return check_tmem_residency(**kwargs)


def test_two_ctas_of_256_columns_fit_exactly():
    # 233,472 // 101,024 = 2 CTAs x 256 = 512
    pools = [("acc", 256)]
    assert (
        _quietly(pools=pools, smem_bytes=100_000, threads=128, target="sm_100a", cooperative=True)
        is None
    )


def test_no_tmem_is_never_a_hazard():
    assert _quietly(pools=[], smem_bytes=0, threads=32, target="sm_100a", cooperative=True) is None


# 4 CTAs (233,472 // 51,024) x 256 = 1,024 > 512. Fixes: 512 // 4 = 128 columns; shared memory
# 233,472 // 3 + 1 - 1,024 = 76,801 bytes (2 CTAs); threads align_up(2,048 // 3 + 1, 32) = 704
OVERSUBSCRIBED = {"pools": [("acc", 256)], "smem_bytes": 50_000, "target": "sm_100a"}
PROBLEM = (
    "4 CTAs of this kernel fit on one sm_100a SM (bound by shared memory) and each allocates "
    "256 TMEM columns: 4 x 256 = 1024 > 512. tcgen05.alloc blocks until another CTA frees "
    "columns"
)
FIXES = (
    "allocate at most 128 columns per CTA; use at least 76801 bytes of shared memory per CTA; "
    "use at least 704 threads per CTA"
)


def test_cooperative_ctas_over_512_columns_are_refused():
    with pytest.raises(CapacityError) as exc:
        check_tmem_residency(**OVERSUBSCRIBED, threads=128, cooperative=True)
    assert str(exc.value) == (
        f"{PROBLEM}, and these CTAs wait on each other (cluster launch or cta_group::2), so a "
        f"CTA holding columns can wait forever for a peer that cannot get any. Fix: {FIXES}"
    )


def test_independent_ctas_over_512_columns_are_a_warning():
    with pytest.warns(TilememWarning) as record:
        check_tmem_residency(**OVERSUBSCRIBED, threads=128, cooperative=False)
    assert str(record[0].message) == (
        f"{PROBLEM}: the kernel runs, with fewer CTAs active than occupancy suggests. To keep "
        f"them all active: {FIXES}"
    )


def test_unknown_threads_assume_the_fewest_and_only_warn():
    with pytest.warns(TilememWarning) as record:
        check_tmem_residency(**OVERSUBSCRIBED, threads=None, cooperative=True)
    assert "(threads unknown: at least 32 assumed)" in str(record[0].message)


def test_fixes_skip_allocations_below_32_columns():
    # 32 columns x 32 CTAs (block slots) = 1,024: 512 // 32 = 16 columns is no allocation;
    # fit 16: shared memory 233,472 // 17 + 1 - 1,024 = 12,710; threads
    # align_up(2,048 // 17 + 1, 32) = 128
    with pytest.raises(CapacityError) as exc:
        check_tmem_residency(
            pools=[("acc", 32)], smem_bytes=0, threads=32, target="sm_100a", cooperative=True
        )
    assert str(exc.value).endswith(
        "Fix: use at least 12710 bytes of shared memory per CTA; use at least 128 threads per CTA"
    )


def test_the_column_fix_may_be_exactly_32():
    # 16 CTAs (2,048 // 128 threads) x 64 columns = 1,024 > 512: 512 // 16 = 32 columns is the
    # smallest allocation. fit = 512 // 64 = 8: shared memory 233,472 // 9 + 1 - 1,024 = 24,918
    # (233,472 // 25,942 = 8); threads align_up(2,048 // 9 + 1, 32) = 256 (2,048 // 256 = 8)
    with pytest.raises(CapacityError) as exc:
        check_tmem_residency(
            pools=[("acc", 64)], smem_bytes=0, threads=128, target="sm_100a", cooperative=True
        )
    assert str(exc.value).endswith(
        "Fix: allocate at most 32 columns per CTA; use at least 24918 bytes of shared memory per "
        "CTA; use at least 256 threads per CTA"
    )


def test_the_thread_fix_is_the_smallest_whole_warp_block():
    # a target with 2,046 threads per SM: 2,046 // 128 = 15 CTAs x 512 columns. fit 1: the
    # smallest block with 2,046 // t <= 1 is t = 1,024 = align_up(2,046 // 2 + 1, 32) exactly
    target = Target("sm_t", 228 * 1024, 227 * 1024, 2046, 32, tmem_cols=512)
    with pytest.raises(CapacityError) as exc:
        check_tmem_residency(
            pools=[("acc", 512)], smem_bytes=0, threads=128, target=target, cooperative=True
        )
    assert str(exc.value).endswith(
        "Fix: allocate at most 32 columns per CTA; use at least 115713 bytes of shared memory per "
        "CTA; use at least 1024 threads per CTA"
    )


def test_the_residency_warning_points_at_the_callers_line():
    # 16 CTAs x 256 columns; whichever pool commits last triggers the check
    for smem_first in (True, False):
        smem = SMEMPool(target="sm_100a", threads=128)
        tmem = TMEMPool(smem, 256)
        first, last = (smem, tmem) if smem_first else (tmem, smem)
        first.commit()
        with pytest.warns(TilememWarning) as record:
            line = inspect.currentframe().f_lineno + 1
            last.commit()
        assert (record[0].filename, record[0].lineno) == (__file__, line)
