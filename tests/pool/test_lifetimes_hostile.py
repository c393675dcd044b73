"""Hostile lifetimes in pools: the TMEM address slot, move_base_to with phases, empty, dict and
unordered live=/phases=, the capacity message of a pool with phases, threads reaching the plan.

Every expected number is worked by hand in the comments.
"""

from __future__ import annotations

import pytest

from tilemem import SMEMPool, TMEMPool
from tilemem.errors import AliasError, AllocationError, CapacityError
from tilemem.plan.stages import BufferRequest, solve_stages

PHASES = ("mainloop", "epilogue")


def lifetime_pool(**kw) -> SMEMPool:
    return SMEMPool(phases=PHASES, target="sm_100a", **kw)


# -- the TMEM address slot is live wherever TMEM is ---------------------------------------


@pytest.mark.parametrize("live", ["epilogue", "mainloop", {"epilogue"}, ("mainloop",)])
def test_a_given_slot_is_live_in_every_phase(live):
    # a (256 B, mainloop) at 0; a slot said live only in one phase would be packed at 0 over
    # `a` or a buffer of the other phase; widened to every phase it lies above both: the
    # 256-byte `a` and 256-byte `b` share [0, 256) (disjoint phases), the slot goes to 256.
    smem = lifetime_pool()
    smem.alloc((64,), "uint32", name="a", live="mainloop")
    smem.alloc((64,), "uint32", name="b", live="epilogue")
    slot = smem.alloc((1,), "uint32", name="slot", live=live)
    TMEMPool(smem, 128, tmem_addr=slot)
    smem.commit()
    entry = smem.plan().entry("slot")
    assert entry.phases == PHASES
    assert (entry.offset, smem.committed_bytes) == (256, 260)
    assert slot.byte_offset == 256


def test_the_default_slot_is_live_in_every_phase_too():
    smem = lifetime_pool()
    smem.alloc((64,), "uint32", name="a", live="mainloop")
    TMEMPool(smem, 128)
    smem.commit()
    assert smem.plan().entry("tmem_addr").phases == PHASES


def test_a_slot_viewing_a_one_phase_buffer_is_refused_before_any_change():
    smem = lifetime_pool()
    a = smem.alloc((64,), "uint32", name="a", live="mainloop")
    slot = smem.alloc((1,), "uint32", name="slot", alias_of=a)
    with pytest.raises(AllocationError) as err:
        TMEMPool(smem, 128, tmem_addr=slot)
    message = str(err.value)
    assert "'slot' must be live in every phase ['mainloop', 'epilogue']" in message
    assert "view (alias_of) of 'a', live only in ['mainloop']" in message
    assert smem.tmem_pools == []  # refused before the SMEM pool knew of it


def test_a_slot_viewing_an_always_live_buffer_is_kept():
    smem = lifetime_pool()
    parent = smem.alloc((4,), "uint32", name="words")
    slot = smem.alloc((1,), "uint32", name="slot", alias_of=parent, offset=4)
    TMEMPool(smem, 128, tmem_addr=slot)
    smem.commit()
    assert smem.plan().entry("slot").offset == 4  # words at 0, the slot 4 bytes into it


def test_a_slot_pinned_over_a_live_buffer_is_an_alias_error():
    # a at [0, 256) live in mainloop; the slot pinned at byte 0 is now live in every phase
    smem = lifetime_pool()
    smem.alloc((64,), "uint32", name="a", live="mainloop", offset=0)
    slot = smem.alloc((1,), "uint32", name="slot", live="epilogue", offset=0)
    TMEMPool(smem, 128, tmem_addr=slot)
    with pytest.raises(AliasError, match=r"'a' and 'slot' share bytes \[0, 4\) in phases mainloop"):
        smem.commit()


# -- move_base_to in a pool with phases ----------------------------------------------------


@pytest.mark.parametrize(
    ("move", "size", "want"),
    [
        (4096, 16, 4096),  # the move reserves 4096 bytes (16 bytes of buffer lie below it)
        (8, 16, 16),  # the buffer at [0, 16), placed before the move, ends above it
        (0, 16, 16),
        (100000, 4, 100000),
    ],
)
def test_move_base_to_then_commit_reserves_the_move(move, size, want):
    smem = SMEMPool(phases=PHASES)
    smem.alloc((size,), "uint8", name="x")
    smem.move_base_to(move)
    assert smem.commit() == want
    assert smem.plan().smem.high_water == want


def test_move_base_to_in_a_tmem_pool_with_phases_reserves_the_move():
    smem = SMEMPool(phases=PHASES, target="sm_100a", threads=1024)  # 2 CTAs x 256 columns
    tmem = TMEMPool(smem, "auto")
    tmem.alloc((128, 32), "float32", name="acc")
    tmem.move_base_to(200)  # 200 columns reserved: 'auto' rounds up to 256
    smem.commit()
    assert tmem.commit() == 256


# -- live= and phases= that cannot mean what they say --------------------------------------


@pytest.mark.parametrize(
    ("live", "words"),
    [
        (set(), "live= must name at least one phase of ['mainloop', 'epilogue']"),
        ([], "live= must name at least one phase"),
        ((), "live= must name at least one phase"),
        ({"mainloop": False, "epilogue": True}, "is a dict; live takes a phase name or a set"),
        ({"epilogue": 1}, "is a dict"),
        ({}, "live={} is a dict"),
        (5, "live must be a phase name or a set of them, got 5"),
        (b"mainloop", "live must be a phase name or a set of them, got b'mainloop'"),
        ([1, 2], "live names phases by their names (str), got [1, 2]"),
        ([["mainloop"]], "live names phases by their names (str)"),
        ("prologue", "unknown phases ['prologue']; pool 'smem' has phases"),
        ({"mainloop", "tail"}, "unknown phases ['tail']"),
    ],
)
def test_bad_live_is_refused_before_any_change(live, words):
    smem = SMEMPool(phases=PHASES)
    with pytest.raises(AllocationError) as err:
        smem.alloc((16,), "uint8", name="x", live=live)
    assert words in str(err.value)
    assert smem.buffers == () and smem.offset == 0


@pytest.mark.parametrize(
    "phases",
    [
        {"mainloop", "epilogue"},
        frozenset({"a", "b"}),
        {"mainloop": 0, "epilogue": 1},
    ],
)
def test_unordered_phases_are_refused(phases):
    with pytest.raises(AllocationError, match=r"has no order, but phases run in program order"):
        SMEMPool(phases=phases)


def test_unordered_phases_of_a_tmem_pool_are_refused():
    with pytest.raises(AllocationError, match="has no order"):
        TMEMPool(SMEMPool(target="sm_100a"), 128, phases={"a", "b"})


@pytest.mark.parametrize("phases", [["b", "a"], ("a", "b"), ("x",)])
def test_ordered_phases_keep_their_order(phases):
    assert SMEMPool(phases=phases).phases == tuple(phases)


# -- solve_stages: an empty live set must not make a buffer free --------------------------


@pytest.mark.parametrize("live", [set(), frozenset(), [], ()])
def test_buffer_request_with_no_phase_is_refused(live):
    with pytest.raises(CapacityError, match=r"'big': live=.* names no phase"):
        BufferRequest("big", (100000,), "uint8", live=live)


@pytest.mark.parametrize(
    ("live", "words"),
    [
        ({"a": True}, "live must be a set of phase names, got {'a': True}"),
        ("a", "live must be a set of phase names, got 'a'"),
        (3, "live must be a set of phase names, got 3"),
    ],
)
def test_buffer_request_live_types(live, words):
    with pytest.raises(CapacityError) as err:
        BufferRequest("big", (16,), "uint8", live=live)
    assert words in str(err.value)


def test_solve_stages_counts_a_buffer_live_in_one_phase():
    # big (100000 B, phase a) and a per-stage 1024 B buffer live everywhere: they conflict in
    # phase a, so stages fit (232448 - 100000) // 1024 = 129 -> capped at max_stages 64; at
    # max_stages 200: 129 stages, 100000 + 129 * 1024 = 232096 bytes.
    reqs = [
        BufferRequest("big", (100000,), "uint8", live={"a"}),
        BufferRequest("ring", (1024,), "uint8", per_stage=True),
    ]
    sol = solve_stages(reqs, "sm_100a", max_stages=200)
    assert (sol.stages, sol.bytes_used) == (129, 232096)


# -- swizzle= and swizzle_mode= are one setting --------------------------------------------


def test_buffer_request_takes_swizzle_mode_as_an_alias():
    a = BufferRequest("A", (128, 64), "bfloat16", swizzle_mode="128B", per_stage=True)
    assert a == BufferRequest("A", (128, 64), "bfloat16", "128B", per_stage=True)
    assert a.swizzle == "128B"
    # (128, 64) bf16 = 16384 bytes, aligned to the 1024-byte 128B period
    assert a.placement(2) == (32768, 1024)


def test_buffer_request_refuses_both_spellings():
    with pytest.raises(CapacityError, match="spell one setting twice; give swizzle= only"):
        BufferRequest("A", (128, 64), "bfloat16", swizzle="128B", swizzle_mode="64B")


def test_alloc_mma_takes_swizzle_and_swizzle_mode():
    one = SMEMPool().alloc_mma((64, 64), "bfloat16", swizzle="64B", name="x")
    two = SMEMPool().alloc_mma((64, 64), "bfloat16", swizzle_mode="64B", name="x")
    assert one.layout == two.layout and one.layout_name == "mma 64B"
    with pytest.raises(AllocationError, match="spell one setting twice"):
        SMEMPool().alloc_mma((64, 64), "bfloat16", "128B", swizzle_mode="64B")


# -- the capacity error of a pool with phases names the peak phase --------------------------


def test_capacity_error_names_the_peak_phase_and_its_buffers():
    # phase a: x 240000 + z 16 = 240016 bytes; phase b: y 10 + z 16 = 26 bytes.
    # sm_90a allows 232448 bytes per block: 240016 - 232448 = 7568 over.
    smem = SMEMPool(phases=("a", "b"), target="sm_90a")
    smem.alloc((240000,), "uint8", name="x", live="a")
    smem.alloc((10,), "uint8", name="y", live="b")
    smem.alloc((16,), "uint8", name="z")
    with pytest.raises(CapacityError) as err:
        smem.commit()
    message = str(err.value)
    assert "needs 240016 bytes but sm_90a allows at most 232448" in message
    assert "remove at least 7568 bytes" in message
    assert "peak phase 'a': 240016 B live at once in 2 buffers: x (240000 B), z (16 B)" in message


def test_peak_phase_is_the_first_on_a_tie():
    # both phases hold 120000 + 120000 = 240000 bytes: 'b' comes first in program order
    smem = SMEMPool(phases=("b", "a"), target="sm_90a")
    smem.alloc((120000,), "uint8", name="x", live="a")
    smem.alloc((120000,), "uint8", name="y", live="b")
    smem.alloc((120000,), "uint8", name="w")
    with pytest.raises(CapacityError, match=r"peak phase 'b': 240000 B live at once"):
        smem.commit()


def test_capacity_error_without_phases_has_no_peak_phase():
    smem = SMEMPool(target="sm_90a")
    smem.alloc((240000,), "uint8", name="x")
    with pytest.raises(CapacityError) as err:
        smem.commit()
    assert "peak phase" not in str(err.value)


# -- a pool's threads reach its plan ------------------------------------------------------


@pytest.mark.parametrize(
    ("threads", "ctas"),
    [
        (256, 8),  # 2048 threads per SM / 256 = 8; shared memory (40 B) allows far more
        (1024, 2),  # 2048 / 1024 = 2
        (32, 32),  # 2048 / 32 = 64, but sm_100a has 32 block slots
    ],
)
def test_threads_reach_occupancy(threads, ctas):
    smem = SMEMPool(threads=threads, target="sm_100a")
    smem.alloc((10,), "float32")
    smem.commit()
    plan = smem.plan()
    assert plan.threads == threads
    assert plan.occupancy().ctas_per_sm == ctas


# -- TMEM pools: cta_group and names ------------------------------------------------------


@pytest.mark.parametrize("cta_group", [2.0, 1.0, True, "2", 3, 0, None])
def test_cta_group_must_be_the_int_1_or_2(cta_group):
    smem = SMEMPool(target="sm_100a")
    with pytest.raises(AllocationError, match=r"cta_group must be the int 1 or 2"):
        TMEMPool(smem, 128, cta_group=cta_group)
    assert smem.buffers == ()  # no slot allocated


@pytest.mark.parametrize(
    ("first", "want"),
    [
        (None, ("tmem", "tmem1")),
        ("tmem1", ("tmem1", "tmem2")),  # the default (tmem + number of pools) skips taken
        ("acc", ("acc", "tmem1")),
    ],
)
def test_default_tmem_pool_names_are_distinct(first, want):
    smem = SMEMPool(target="sm_100a")
    a = TMEMPool(smem, 128, name=first)
    b = TMEMPool(smem, 128)
    assert (a.name, b.name) == want


def test_a_third_default_tmem_pool_after_a_named_one():
    smem = SMEMPool(target="sm_100a")
    names = [TMEMPool(smem, 128, name=n).name for n in ("tmem2", None, None)]
    assert names == ["tmem2", "tmem1", "tmem3"]


def test_a_taken_tmem_pool_name_is_refused():
    smem = SMEMPool(target="sm_100a")
    TMEMPool(smem, 128, name="acc")
    with pytest.raises(AllocationError, match=r"TMEM pool name 'acc' is taken in this CTA"):
        TMEMPool(smem, 128, name="acc")
    assert len(smem.tmem_pools) == 1
