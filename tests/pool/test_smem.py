import pytest

from tilemem import SMEMPool, SwizzleMode
from tilemem.errors import (
    AlignmentError,
    AllocationError,
    CapacityError,
    PoolStateError,
    SwizzleError,
)
from tilemem.layout import ComposeLayout, TileLayout, mma_shared_layout


def test_buffers_follow_each_other_with_natural_alignment():
    smem = SMEMPool()
    a = smem.alloc((3,), "uint8")
    b = smem.alloc((2,), "float32")  # 4-byte aligned: skips 1 byte
    c = smem.alloc((1,), "uint64")  # 8-byte aligned: 3 + 1 + 8 = 12 -> 16
    assert (a.byte_offset, b.byte_offset, c.byte_offset) == (0, 4, 16)
    assert (a.nbytes, b.nbytes, c.nbytes) == (3, 8, 8)
    assert smem.offset == smem.max_offset == 24


def test_natural_alignment_caps_at_16_bytes():
    smem = SMEMPool()
    smem.alloc((1,), "uint8")
    assert smem.alloc((2,), "float64").byte_offset == 8
    assert smem.alloc((1,), "float64", align=64).byte_offset == 64


def test_explicit_align_raises_but_never_lowers_natural_alignment():
    smem = SMEMPool()
    smem.alloc((1,), "uint8")
    buf = smem.alloc((4,), "float32", align=2)
    assert buf.byte_offset == 4 and buf.align == 4


@pytest.mark.parametrize("align", [3, 6, 100, -4])
def test_align_must_be_a_power_of_two(align):
    with pytest.raises(AlignmentError, match="power of two") as exc:
        SMEMPool().alloc((4,), "float32", align=align)
    assert str(align) in str(exc.value)


def test_sub_byte_sizes_round_up_once():
    smem = SMEMPool()
    fp4 = smem.alloc((3, 5), "float4_e2m1fn")  # 15 x 4 bits = 60 bits -> 8 bytes
    fp6 = smem.alloc((7,), "float6_e2m3fn")  # 42 bits -> 6 bytes
    assert fp4.nbytes == 8 and fp6.nbytes == 6
    assert fp6.byte_offset == 8


def test_buffer_fields():
    smem = SMEMPool()
    buf = smem.alloc((4, 8), "bfloat16", name="x")
    assert (
        buf.name,
        buf.shape,
        buf.dtype.name,
        buf.scope,
        buf.byte_offset,
        buf.nbytes,
        buf.align,
    ) == (
        "x",
        (4, 8),
        "bfloat16",
        "shared.dyn",
        0,
        64,
        2,
    )
    assert buf.layout == TileLayout.row_major((4, 8))
    assert buf.col_offset is None and buf in smem.buffers


def test_strided_buffers_reserve_their_whole_span():
    smem = SMEMPool()
    buf = smem.alloc((4, 8), "float32", strides=(9, 1))  # one padding element per row
    assert buf.layout.apply(3, 7) == {"m": 34}
    assert buf.nbytes == 35 * 4


def test_alloc_rejects_a_layout_of_the_wrong_size_or_axis():
    with pytest.raises(AllocationError, match="holds 16 elements"):
        SMEMPool().alloc((4, 8), layout=TileLayout.row_major((4, 4)))
    with pytest.raises(AllocationError, match="axis 'm' only"):
        SMEMPool().alloc((4,), layout=TileLayout.of((4,), ("1@TLane",)))
    with pytest.raises(AllocationError, match="positive integers"):
        SMEMPool().alloc((4, 0))


@pytest.mark.parametrize(
    "shape,dtype,mode",
    [
        ((128, 64), "bfloat16", SwizzleMode.SWIZZLE_128B_ATOM),
        ((128, 32), "bfloat16", SwizzleMode.SWIZZLE_64B_ATOM),
        ((64, 16), "bfloat16", SwizzleMode.SWIZZLE_32B_ATOM),
        ((64, 4), "bfloat16", SwizzleMode.SWIZZLE_NONE),
        (
            (128, 96),
            "bfloat16",
            SwizzleMode.SWIZZLE_64B_ATOM,
        ),  # 192-byte rows: 64B divides, 128B does not
        ((64, 32), "float32", SwizzleMode.SWIZZLE_128B_ATOM),
        ((64, 256), "float4_e2m1fn", SwizzleMode.SWIZZLE_128B_ATOM),
        ((64, 64), "float4_e2m1fn", SwizzleMode.SWIZZLE_32B_ATOM),
    ],
)
def test_auto_picks_the_widest_swizzle_the_row_allows(shape, dtype, mode):
    buf = SMEMPool().alloc_mma(shape, dtype)
    assert buf.layout == mma_shared_layout(dtype, mode, shape)


def test_explicit_mode_on_narrow_rows_says_what_fits():
    with pytest.raises(SwizzleError) as exc:
        SMEMPool().alloc_mma((128, 32), "bfloat16", SwizzleMode.SWIZZLE_128B_ATOM)
    msg = str(exc.value)
    assert isinstance(exc.value, ValueError)
    for fact in (
        "(128, 32)",
        "bfloat16",
        "64-byte rows",
        "multiple of 128 bytes",
        "SWIZZLE_64B_ATOM",
        "multiple of 64",
    ):
        assert fact in msg, fact


def test_explicit_mode_rows_must_be_multiple_of_eight():
    with pytest.raises(SwizzleError) as exc:
        SMEMPool().alloc_mma((100, 64), "bfloat16", "128B")
    assert "shape[-2] = 100" in str(exc.value) and "use 104" in str(exc.value)


def test_mma_tile_needs_two_dims():
    with pytest.raises(SwizzleError, match="at least 2 dimensions"):
        SMEMPool().alloc_mma((64,), "bfloat16", "32B")


def test_mma_tile_lands_on_its_swizzle_period():
    smem = SMEMPool()
    smem.alloc((5,), "uint8")
    buf = smem.alloc_mma((2, 64, 64), "bfloat16", "128B")
    assert buf.byte_offset == 1024 and isinstance(buf.layout, ComposeLayout)


def test_mma_tile_off_its_period_is_an_error_that_names_the_fix():
    smem = SMEMPool()
    smem.alloc((300,), "uint8")
    with pytest.raises(AlignmentError) as exc:
        smem.alloc_mma((64, 64), "bfloat16", "128B", align=256, name="A")
    msg = str(exc.value)
    assert "byte 512" in msg and "1024-byte" in msg and "align=1024" in msg


def test_move_base_to_overlays_and_is_recorded():
    smem = SMEMPool()
    a = smem.alloc_mma((128, 64), "bfloat16", name="A")
    smem.move_base_to(0)
    c = smem.alloc((64, 64), "float32", name="C")
    plan = smem.plan()
    assert c.byte_offset == a.byte_offset == 0
    assert plan.entry("A").overlaps == ("C",) and plan.entry("C").overlaps == ("A",)
    assert plan.smem.moves == ((16384, 0),)
    assert smem.max_offset == 16384


def test_commit_fixes_size_once():
    smem = SMEMPool()
    smem.alloc((100,), "uint8")
    assert smem.commit() == 100 and smem.committed_bytes == 100 and smem.committed
    with pytest.raises(PoolStateError, match="after commit"):
        smem.commit()


def test_commit_with_larger_size_keeps_it():
    smem = SMEMPool()
    smem.alloc((100,), "uint8")
    assert smem.commit(4096) == 4096


def test_commit_below_high_water_is_an_error():
    smem = SMEMPool()
    smem.alloc((100,), "uint8")
    with pytest.raises(AllocationError) as exc:
        smem.commit(64)
    assert "64" in str(exc.value) and "high-water mark 100" in str(exc.value)


def test_alloc_after_commit_is_an_error():
    smem = SMEMPool()
    smem.commit()
    with pytest.raises(PoolStateError, match="alloc on SMEM pool 'smem' after commit"):
        smem.alloc((4,), "float32")
    with pytest.raises(PoolStateError):
        smem.move_base_to(0)


def test_duplicate_names_are_rejected():
    smem = SMEMPool()
    smem.alloc((4,), name="x")
    with pytest.raises(AllocationError, match="already has a buffer named 'x'"):
        smem.alloc((4,), name="x")


def test_commit_over_target_capacity_lists_buffers_and_the_cut():
    smem = SMEMPool(target="sm_86")
    smem.alloc((64, 1024), "float16", name="big")  # 128 KiB
    with pytest.raises(CapacityError) as exc:
        smem.commit()
    msg = str(exc.value)
    assert (
        "131072" in msg
        and "101376" in msg
        and "remove at least 29696 bytes" in msg
        and "big" in msg
    )


def test_indexing_outside_a_kernel_says_why():
    buf = SMEMPool().alloc((4,), "float32", name="x")
    with pytest.raises(PoolStateError, match="outside a kernel"):
        buf[0]
    with pytest.raises(PoolStateError, match="outside a kernel"):
        buf[0] = 1.0
