"""docs/DESIGN.md#capacity-and-residency's TMEM residency rule, plan-only: per CTA always, across
CTAs by launch kind.

Numbers by hand from docs/HARDWARE-RULES.md (sm_100a: 233,472 B SMEM per SM, 1 KiB reserved per
block, 2048 threads and 32 blocks per SM; TMEM 512 columns).
"""

import warnings

import pytest

from tilemem import SMEMPool, TMEMPool
from tilemem.errors import CapacityError, TilememWarning
from tilemem.plan import check_tmem_residency


def test_two_full_pools_in_one_cta_are_refused():
    smem = SMEMPool(target="sm_100a")
    TMEMPool(smem, 512)
    with pytest.raises(CapacityError, match=r"tmem \(512\) \+ tmem1 \(512\) = 1024 columns"):
        TMEMPool(smem, 512)
    assert len(smem.tmem_pools) == 1 and [b.name for b in smem.buffers] == ["tmem_addr"]


def test_pools_of_one_cta_are_summed_when_auto_resolves():
    smem = SMEMPool()
    TMEMPool(smem, 256)
    auto = TMEMPool(smem, "auto")
    auto.alloc((128, 300))  # auto -> 512 at commit; 256 + 512 > 512
    with pytest.raises(CapacityError, match=r"= 768 columns in one CTA"):
        auto.commit()
    assert not auto.committed


def test_oversubscription_without_cooperation_warns():
    # 48 KiB blocks, 128 threads: 233,472 // 50,176 = 4 CTAs x 256 columns = 1024 > 512
    smem = SMEMPool(target="sm_100a", threads=128)
    tmem = TMEMPool(smem, 256)
    smem.commit(48 * 1024)
    with pytest.warns(TilememWarning) as record:
        tmem.commit()
    msg = str(record[0].message)
    for fact in (
        "4 CTAs",
        "4 x 256 = 1024 > 512",
        "fewer CTAs active",
        "at most 128 columns per CTA",
        # two CTAs at most: b + 1,024 > 233,472 / 3 = 77,824, so b >= 76,801
        "at least 76801 bytes of shared memory",
        # 2048 // t <= 2 needs t >= 683, in whole warps 704
        "at least 704 threads per CTA",
    ):
        assert fact in msg, fact


def test_oversubscription_with_cta_group_2_is_an_error():
    smem = SMEMPool(target="sm_100a", threads=128)
    tmem = TMEMPool(smem, 256, cta_group=2)
    smem.commit(48 * 1024)
    with pytest.raises(CapacityError, match="wait on each other"):
        tmem.commit()


def test_exactly_512_over_all_ctas_is_fine():
    # 100,000 B blocks: 233,472 // 101,024 = 2 CTAs x 256 = 512
    smem = SMEMPool(target="sm_100a", threads=128)
    tmem = TMEMPool(smem, 256, cta_group=2)
    smem.commit(100_000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tmem.commit() == 256


@pytest.mark.parametrize("tmem_first", [True, False])
def test_the_verdict_does_not_depend_on_the_order_of_commits(tmem_first):
    smem = SMEMPool(target="sm_100a", threads=128)
    tmem = TMEMPool(smem, 256, cta_group=2)
    first, second = (tmem.commit, smem.commit) if tmem_first else (smem.commit, tmem.commit)
    first()  # nothing is known yet about the other: no verdict
    with pytest.raises(CapacityError, match=r"\d+ x 256 = \d+ > 512"):
        second()


def test_unknown_threads_still_warn_from_the_fewest_threads_that_reach_the_warps():
    # alloc_warp 3 -> at least 128 threads; 0 B SMEM: 2048 // 128 = 16 CTAs x 512 columns
    smem = SMEMPool(target="sm_100a")
    tmem = TMEMPool(smem, 512, alloc_warp=3)
    smem.commit()
    with pytest.warns(TilememWarning, match=r"threads unknown: at least 128 assumed"):
        tmem.commit()


def test_advice_never_asks_for_the_impossible():
    # 32 threads, 4 B of SMEM: 32 CTAs (block slots) x 512. 512 // 32 = 16 columns is below
    # tcgen05.alloc's minimum of 32, and 2048 // t <= 1 needs t > 1024: neither is offered.
    with pytest.warns(TilememWarning) as record:
        check_tmem_residency(
            [("tmem", 512)], smem_bytes=4, threads=32, target="sm_100a", cooperative=False
        )
    msg = str(record[0].message)
    assert "at most 16 columns" not in msg and "threads per CTA" not in msg
    assert "at most 0" not in msg and "at least 115713 bytes of shared memory" in msg


def test_a_warp_outside_the_block_is_refused():
    smem = SMEMPool(target="sm_100a", threads=64)
    with pytest.raises(ValueError, match=r"alloc_warp=2 is outside the block: 64 threads"):
        TMEMPool(smem, 32, alloc_warp=2)


def test_a_refused_commit_changes_nothing():
    smem = SMEMPool(target="sm_100a", threads=128)
    tmem = TMEMPool(smem, 256, cta_group=2)
    tmem.commit()
    with pytest.raises(CapacityError):
        smem.commit(48 * 1024)  # 4 CTAs x 256 columns, cooperative
    assert not smem.committed
    smem.commit(100_000)  # 2 CTAs x 256 = 512: fine
    assert smem.committed_bytes == 100_000
