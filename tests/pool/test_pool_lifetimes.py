"""Pools with phases (docs/DESIGN.md#lifetimes): live=, packing at commit, alias_of= views, the
alias check, lower bound and footprint in the plan, and kernels that use the packed offsets.

Sizes are hand-computed: a 128 x 64 bf16 tile is 16,384 bytes; a 128 x 128 fp32 accumulator
in data path D is 128 TMEM columns (one 32-bit column per element column, PTX ISA "Tensor
Memory" data path layouts); a bf16 P over it needs half of them.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tilemem import SMEMPool, T, TMEMPool
from tilemem.errors import (
    AliasError,
    AlignmentError,
    AllocationError,
    PoolStateError,
    TMEMOverflowError,
)
from tilemem.layout import tmem_datapath_layout
from tilemem.plan.model import MemoryPlan

PHASES = ("load", "mma", "epilogue")
TILE = 128 * 64 * 2  # bytes of a 128 x 64 bf16 tile


def gemm_pool(target="sm_90a") -> SMEMPool:
    smem = SMEMPool(target=target, phases=PHASES)
    smem.alloc_mma((4, 128, 64), "bfloat16", name="A", live={"load", "mma"})
    smem.alloc_mma((4, 256, 64), "bfloat16", name="B", live={"load", "mma"})
    smem.alloc_mma((128, 64), "bfloat16", name="C", live="epilogue")
    smem.alloc((8,), "uint64", name="bars")
    return smem


def test_the_epilogue_tile_is_packed_over_drained_stages():
    smem = gemm_pool()
    assert smem.commit() == 12 * TILE + 64
    assert smem.buffer("C").byte_offset == 0
    plan = smem.plan()
    assert plan.footprint == plan.lower_bound == 12 * TILE + 64
    assert plan.smem.bump == 13 * TILE + 64


def test_offsets_are_unreadable_before_commit():
    smem = gemm_pool()
    with pytest.raises(PoolStateError, match=r"'A' has no byte_offset yet.*after commit\(\)"):
        _ = smem.buffer("A").byte_offset


def test_buffers_live_together_never_overlap():
    smem = SMEMPool(phases=PHASES)
    q = smem.alloc((1000,), "uint8", live={"load", "mma"})
    o = smem.alloc((600,), "uint8", live={"mma", "epilogue"})
    smem.commit()
    assert q.byte_offset + 1000 <= o.byte_offset or o.byte_offset + 600 <= q.byte_offset


def test_every_buffer_is_live_everywhere_by_default():
    smem = SMEMPool(phases=PHASES)
    smem.alloc((100,), "uint8", name="x")
    smem.alloc((50,), "uint8", name="y", live="load")
    smem.commit()
    assert smem.plan().entry("x").phases == PHASES
    assert smem.plan().entry("y").phases == ("load",)
    assert smem.committed_bytes == 150


def test_unknown_phases_are_named():
    smem = SMEMPool(phases=PHASES)
    with pytest.raises(AllocationError, match=r"unknown phases \['drain'\].*'load', 'mma'"):
        smem.alloc((4,), "uint8", live="drain")
    assert smem.buffers == ()


def test_live_needs_a_pool_with_phases():
    with pytest.raises(AllocationError, match="needs a pool with phases"):
        SMEMPool().alloc((4,), "uint8", live="load")


def test_a_manual_overlay_of_live_buffers_raises_alias_error():
    smem = SMEMPool(phases=PHASES)
    smem.alloc((1024,), "uint8", name="Q", live={"load", "mma"})
    smem.move_base_to(512)
    smem.alloc((1024,), "uint8", name="O", live={"mma", "epilogue"})
    with pytest.raises(AliasError, match=r"'Q' and 'O' share bytes \[512, 1024\) in phases mma"):
        smem.commit()
    assert not smem.committed


def test_a_manual_overlay_of_disjoint_lifetimes_passes():
    smem = SMEMPool(phases=PHASES)
    smem.alloc((1024,), "uint8", name="Q", live="load")
    smem.move_base_to(0)
    o = smem.alloc((1024,), "uint8", name="O", live="epilogue")
    assert smem.commit() == 1024
    assert o.byte_offset == 0


def test_an_explicit_offset_is_checked():
    smem = SMEMPool(phases=PHASES)
    smem.alloc((256,), "uint8", name="a", live="mma", offset=0)
    smem.alloc((256,), "uint8", name="b", live="mma", offset=128)
    with pytest.raises(AliasError, match=r"'a' and 'b' share bytes \[128, 256\)"):
        smem.commit()


def test_a_view_lies_inside_its_parent_and_takes_no_space():
    smem = SMEMPool(phases=PHASES)
    big = smem.alloc((4096,), "uint8", name="big", live="mma")
    view = smem.alloc((1024,), "uint8", name="view", live="epilogue", alias_of=big, offset=2048)
    assert smem.commit() == 4096
    assert view.byte_offset == big.byte_offset + 2048
    assert smem.plan().entry("view").alias_of == "big"


def test_a_view_must_fit_inside_its_parent():
    smem = SMEMPool(phases=PHASES)
    big = smem.alloc((4096,), "uint8", name="big")
    with pytest.raises(AllocationError, match=r"\[3072, 5120\) does not fit inside its 4096"):
        smem.alloc((2048,), "uint8", alias_of=big, offset=3072)


def test_two_views_of_one_parent_still_conflict():
    smem = SMEMPool(phases=PHASES)
    s = smem.alloc((256,), "uint8", name="S", live="mma")
    smem.alloc((128,), "uint8", name="P", live="mma", alias_of=s, offset=0)
    smem.alloc((128,), "uint8", name="R", live="mma", alias_of=s, offset=64)
    with pytest.raises(AliasError, match=r"'P' and 'R' share bytes \[64, 128\)"):
        smem.commit()


def tmem_pool(phases=PHASES):
    smem = SMEMPool(target="sm_100a", phases=phases)
    return smem, TMEMPool(smem, "auto")


def test_p_over_s_in_tmem_via_alias_of():
    smem, tmem = tmem_pool()
    s = tmem.alloc((128, 128), "float32", datapath="D", name="S", live="mma")
    p = tmem.alloc((128, 128), "bfloat16", name="P", live="epilogue", alias_of=s,
                   offset=64)  # fmt: skip
    o = tmem.alloc((128, 128), "float32", datapath="D", name="O", live={"mma", "epilogue"})
    smem.commit()
    assert tmem.commit() == 256
    assert p.col_offset == s.col_offset + 64
    assert {s.col_offset, o.col_offset} == {0, 128}


def test_tmem_buffers_on_disjoint_lanes_share_columns():
    smem, tmem = tmem_pool()
    # data path F, sub-slabs 0 and 1: lanes 0-15, 32-47, ... and 16-31, 48-63, ... (PTX ISA)
    for slab in (0, 1):
        tmem.alloc((64, 128), "float32", layout=tmem_datapath_layout("F", 64, 128, slab),
                   name=f"acc{slab}", live="mma")  # fmt: skip
    smem.commit()
    assert tmem.commit() == 128
    assert tmem.buffer("acc0").col_offset == tmem.buffer("acc1").col_offset == 0


def test_tmem_overlays_on_shared_lanes_name_the_lanes():
    smem, tmem = tmem_pool()
    tmem.alloc((128, 64), "float32", datapath="D", name="x", live="mma")
    tmem.move_base_to(32)
    tmem.alloc((128, 64), "float32", datapath="D", name="y", live="mma")
    smem.commit()
    with pytest.raises(AliasError, match=r"'x' and 'y' share columns \[32, 64\) on lanes 0..127"):
        tmem.commit()


def test_tmem_packed_beyond_total_cols_overflows_at_commit():
    smem = SMEMPool(target="sm_100a", phases=PHASES)
    tmem = TMEMPool(smem, 256)
    tmem.alloc((128, 256), "float32", name="a", live="mma")
    tmem.alloc((128, 128), "float32", name="b", live={"mma", "epilogue"})
    smem.commit()
    with pytest.raises(TMEMOverflowError, match=r"need 384 columns .* total_cols is 256"):
        tmem.commit()


def test_the_plan_lists_phases_and_round_trips():
    smem = gemm_pool()
    smem.commit()
    plan = smem.plan()
    assert plan.smem.phases == PHASES
    assert plan.entry("A").phases == ("load", "mma")
    assert MemoryPlan.from_dict(plan.to_dict()) == plan


def test_the_report_shows_footprint_bound_and_a_phase_table():
    smem = gemm_pool()
    smem.commit()
    text = str(smem.plan())
    assert "footprint 196672 bytes, lower bound 196672 bytes, bump placement 213056 bytes" in text
    assert "buffer  load  mma  epilogue  bytes" in text
    assert "C       .     .    #         [0, 16384)" in text


def test_same_calls_give_the_same_plan():
    plans = []
    for _ in range(2):
        smem = gemm_pool()
        smem.commit()
        plans.append(smem.plan().to_dict())
    assert plans[0] == plans[1]


def test_a_kernel_declares_buffers_at_their_packed_offsets():
    @T.kernel(target="sm_90a", block=128)
    def k(x: T.Buffer((128,), "float32")):
        smem = T.SMEMPool(phases=PHASES)
        a = smem.alloc((1024,), "float32", name="a", live="load")
        c = smem.alloc((512,), "float32", name="c", live="epilogue")
        smem.commit()
        a[T.thread_id()] = x[T.thread_id()]
        c[T.thread_id()] = a[T.thread_id()]

    assert k.dyn_smem_bytes == 4096
    assert "reinterpret_cast<float*>(smem + 0);" in k.source
    assert k.source.count("smem + 0)") == 2  # c over a: their phases are disjoint


def test_without_phases_a_view_is_placed_at_once():
    smem = SMEMPool()
    smem.alloc((100,), "uint8", name="pad")
    big = smem.alloc((4096,), "uint8", name="big")
    view = smem.alloc((16,), "float32", name="view", alias_of=big, offset=64)
    assert view.byte_offset == big.byte_offset + 64 == 164
    assert smem.offset == 100 + 4096  # a view takes no space
    assert smem.plan().entry("view").overlaps == ("big",)


def test_without_phases_an_explicit_offset_leaves_the_cursor():
    smem = SMEMPool()
    smem.alloc((256,), "uint8", name="a")
    pinned = smem.alloc((64,), "uint8", name="pinned", offset=1024)
    assert pinned.byte_offset == 1024 and smem.offset == 256
    assert smem.commit() == 1088


def test_an_explicit_offset_must_keep_the_alignment():
    smem = SMEMPool(phases=PHASES)
    with pytest.raises(AlignmentError, match=r"offset=100 bytes is not a multiple of .* 1024"):
        smem.alloc_mma((128, 64), "bfloat16", offset=100)
    assert smem.buffers == ()


@given(
    st.lists(
        st.tuples(
            st.integers(1, 3000),
            st.sampled_from([0, 8, 16, 128, 1024]),
            st.sets(st.sampled_from(PHASES), min_size=1),
        ),
        min_size=1,
        max_size=8,
    )
)
@settings(max_examples=40, deadline=None)
def test_a_committed_pool_keeps_co_live_buffers_apart(requests):
    smem = SMEMPool(phases=PHASES)
    for n, (nbytes, align, live) in enumerate(requests):
        smem.alloc((nbytes,), "uint8", align=align, live=live, name=f"b{n}")
    size = smem.commit()
    spans = [(b.byte_offset, b.byte_offset + b.nbytes, set(live)) for b, (_, _, live) in
             zip(smem.buffers, requests)]  # fmt: skip
    for buf, (_, align, _) in zip(smem.buffers, requests):
        assert buf.byte_offset % max(align, 1) == 0 and buf.byte_offset + buf.nbytes <= size
    for i, (a0, a1, a_live) in enumerate(spans):
        for b0, b1, b_live in spans[i + 1 :]:
            assert not (a_live & b_live) or a1 <= b0 or b1 <= a0
    assert size <= smem.plan().smem.bump


def test_a_kernel_commits_a_lifetime_smem_pool_before_its_tmem_pool():
    with pytest.raises(PoolStateError, match="commit SMEM pool 'smem' before TMEM pool 'tmem'"):

        @T.kernel(target="sm_100a", block=128)
        def k(x: T.Buffer((1,), "float32")):
            smem = T.SMEMPool(phases=PHASES)
            tmem = T.TMEMPool(smem, 32)
            tmem.commit()
