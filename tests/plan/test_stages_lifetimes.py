"""The stage solver packs by lifetime when requests say when they are live."""

import pytest

from tilemem.errors import CapacityError
from tilemem.plan import BufferRequest, solve_stages

MAIN, EPI = frozenset({"mainloop"}), frozenset({"epilogue"})


def gemm(live: bool) -> list[BufferRequest]:
    """bf16 A and B stages of 128 x 64 (16,384 bytes each) and a 128 x 256 bf16 epilogue
    tile (65,536 bytes) that, with lifetimes, may lie over the drained stages."""
    return [
        BufferRequest("A", (128, 64), "bfloat16", swizzle="auto", per_stage=True,
                      live=MAIN if live else None),
        BufferRequest("B", (128, 64), "bfloat16", swizzle="auto", per_stage=True,
                      live=MAIN if live else None),
        BufferRequest("C", (128, 256), "bfloat16", live=EPI if live else None),
    ]  # fmt: skip


def test_epilogue_over_drained_stages_buys_two_stages():
    # sm_90a: 232,448 bytes of dynamic SMEM per block (CUDA C++ Programming Guide, compute
    # capability 9.0 table: 227 KB). Bump: 32,768 S + 65,536 <= 232,448 -> S = 5.
    # Lifetimes: C lies over the stages, 32,768 S <= 232,448 -> S = 7.
    assert solve_stages(gemm(live=False), "sm_90a").stages == 5
    packed = solve_stages(gemm(live=True), "sm_90a")
    assert (packed.stages, packed.bytes_used) == (7, 7 * 32768)


def test_co_live_requests_place_as_bump_does():
    both = frozenset({"mainloop", "epilogue"})
    requests = [
        BufferRequest(r.name, r.shape, r.dtype, r.swizzle, per_stage=r.per_stage, live=both)
        for r in gemm(live=False)
    ]
    assert solve_stages(requests, "sm_90a") == solve_stages(gemm(live=False), "sm_90a")


@pytest.mark.parametrize("live", ["mainloop", frozenset({"1st"}), 3])
def test_bad_live_sets_are_refused(live):
    with pytest.raises(CapacityError, match=r"live|phase"):
        BufferRequest("A", (8,), live=live)


def test_capacity_advice_counts_stages_with_lifetimes():
    from tilemem import SMEMPool

    smem = SMEMPool(name="smem", target="sm_90a", phases=("mainloop", "epilogue"))
    for name in ("A", "B"):
        smem.alloc_mma((8, 128, 64), "bfloat16", "128B", name=name, live="mainloop")
    smem.alloc((128, 256), "bfloat16", name="C", live="epilogue")
    with pytest.raises(CapacityError) as exc:
        smem.commit()  # 8 x 32,768 = 262,144 bytes > 232,448
    # the same sums as above: C over the drained stages leaves room for 7, not bump's 5
    assert "8 stages of 32768 bytes each; 7 stages would fit on sm_90a" in str(exc.value)
