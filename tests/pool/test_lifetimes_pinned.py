"""Lifetimes in pools (docs/DESIGN.md#lifetimes) pinned at their edges: the phases= and live= rules,
alias_of= views and offset= pins before commit, the packing a pool reports, the alias message.

Sizes are worked out by hand: n uint8 elements take n bytes, n float32 elements 4n bytes;
offset= is bounded like move_base_to (an integer in [0, 2**40] = [0, 1099511627776]).
"""

import pytest

from tilemem import SMEMPool
from tilemem.errors import AliasError, AlignmentError, AllocationError


@pytest.mark.parametrize("phases", ["load", 3])
def test_phases_must_be_a_sequence_of_names(phases):
    # a bare string would be read as one phase per character; an int is no sequence at all
    with pytest.raises(AllocationError, match="phases must be a sequence of phase names"):
        SMEMPool(phases=phases)


@pytest.mark.parametrize("phases", [(), ("load", "load")])
def test_phases_name_at_least_one_phase_each_once(phases):
    with pytest.raises(AllocationError, match="phases must name at least one phase, each once"):
        SMEMPool(phases=phases)


def test_buffers_wait_for_commit_only_in_a_pool_with_phases():
    assert SMEMPool().places_at_commit is False
    pool = SMEMPool(phases=("load", "store"))
    assert pool.places_at_commit is True
    pool.commit()
    assert pool.places_at_commit is False


def test_the_committed_packing_reports_footprint_lower_bound_and_bump():
    # two 100-byte buffers in different phases: packed over each other in 100 bytes, the
    # busiest phase holds 100 bytes, bump placement in order would take 200
    pool = SMEMPool(phases=("load", "store"))
    pool.alloc((100,), "uint8", name="a", live="load")
    pool.alloc((100,), "uint8", name="b", live="store")
    assert pool.packing is None  # nothing is committed yet
    pool.commit()
    packing = pool.packing
    assert (packing.offsets, packing.footprint, packing.lower_bound, packing.bump) == (
        (0, 0),
        100,
        100,
        200,
    )


def test_live_must_be_a_phase_name_or_a_collection_of_them():
    pool = SMEMPool(phases=("load", "store"))
    with pytest.raises(AllocationError, match="live must be a phase name or a set of them, got 5"):
        pool.alloc((4,), "uint8", live=5)


def test_a_view_must_be_of_a_buffer_of_the_same_pool():
    other = SMEMPool(name="other").alloc((64,), "uint8", name="outside")
    pool = SMEMPool(name="mine")
    with pytest.raises(AllocationError, match="alias_of must be a buffer of pool 'mine'"):
        pool.alloc((16,), "uint8", alias_of=other)


def test_offset_may_be_2_40_bytes():
    pool = SMEMPool()
    assert pool.alloc((4,), "uint8", offset=1 << 40).byte_offset == 1 << 40


def test_offset_above_2_40_bytes_is_refused():
    with pytest.raises(
        AllocationError,
        match=r"offset \(bytes\) must be an integer in \[0, 1099511627776\], got 1099511627777",
    ):
        SMEMPool().alloc((4,), "uint8", offset=(1 << 40) + 1)


def test_a_view_without_offset_starts_where_its_parent_starts():
    # a: bytes [0, 100); parent: [100, 356); the view covers the parent's first 64 bytes
    pool = SMEMPool()
    pool.alloc((100,), "uint8", name="a")
    parent = pool.alloc((256,), "uint8", name="parent")
    view = pool.alloc((64,), "uint8", name="view", alias_of=parent)
    assert (parent.byte_offset, view.byte_offset) == (100, 100)


def test_a_view_takes_no_space_and_leaves_the_cursor_alone():
    # the cursor stays after the parent (byte 256), it does not move back to the view's end (64)
    pool = SMEMPool()
    parent = pool.alloc((256,), "uint8", name="parent")
    pool.alloc((64,), "uint8", name="view", alias_of=parent)
    assert (pool.offset, pool.max_offset) == (256, 256)
    assert pool.alloc((4,), "uint8", name="next").byte_offset == 256


def test_a_view_inside_its_parent_keeps_its_own_alignment():
    # float32 needs 4-byte alignment: byte 2 inside the parent is refused
    pool = SMEMPool()
    parent = pool.alloc((64,), "uint8", name="parent")
    with pytest.raises(
        AlignmentError,
        match="a view at offset 2 bytes inside 'parent' breaks its alignment 4: use a multiple "
        "of 4",
    ):
        pool.alloc((4,), "float32", alias_of=parent, offset=2)


def test_views_and_pins_report_no_padding():
    # parent: bytes [0, 3), cursor at 3; the pin at byte 8 and the view at the parent's byte 0
    # sit exactly where asked, so no padding is lost in front of either (bump placement of the
    # float32 would have skipped byte 3)
    pool = SMEMPool()
    parent = pool.alloc((3,), "uint8", name="parent")
    pool.alloc((1,), "float32", name="pinned", offset=8)
    pool.alloc((2,), "uint8", name="view", alias_of=parent)
    entries = {e.name: (e.offset, e.padding) for e in pool.plan().smem.entries}
    assert entries == {"parent": (0, 0), "pinned": (8, 0), "view": (0, 0)}


def test_the_alias_message_says_how_to_fix_it():
    pool = SMEMPool(phases=("load", "store"))
    pool.alloc((64,), "uint8", name="a", offset=0)
    pool.alloc((64,), "uint8", name="b", offset=32)
    with pytest.raises(AliasError) as exc:
        pool.commit()
    lines = str(exc.value).splitlines()
    assert lines[-1] == (
        "give them disjoint live= sets, drop move_base_to/offset= and let commit() place them, "
        "or declare an intended view with alias_of="
    )
    assert "'a' and 'b' share bytes [32, 64)" in lines[1]


def test_a_view_needs_its_parent_to_start_on_the_views_alignment():
    # parent: uint8 bytes [100, 4196); a 128B-swizzled (8, 64) bf16 view needs a 1024-byte
    # aligned start (docs/HARDWARE-RULES.md#swizzle-modes), but byte 100 + 0 is not one
    pool = SMEMPool()
    pool.alloc((100,), "uint8", name="a")
    parent = pool.alloc((4096,), "uint8", name="parent")
    with pytest.raises(
        AlignmentError,
        match=r"a view at offset 0 bytes inside 'parent' would start 100 bytes into the pool, not "
        r"a multiple of its alignment 1024: allocate 'parent' with align=1024",
    ):
        pool.alloc_mma((8, 64), "bfloat16", name="view", alias_of=parent)


def test_a_view_of_an_aligned_parent_starts_on_its_alignment():
    # parent aligned to 1024 after the 100-byte buffer: bytes [1024, 5120); the view at
    # offset 2048 inside it starts at byte 3072 = 3 x 1024
    pool = SMEMPool()
    pool.alloc((100,), "uint8", name="a")
    parent = pool.alloc((4096,), "uint8", align=1024, name="parent")
    view = pool.alloc_mma((8, 64), "bfloat16", name="view", alias_of=parent, offset=2048)
    assert view.byte_offset == 3072
