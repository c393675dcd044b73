import pytest

from tilemem import SMEMPool, TMEMPool, TMEMStages
from tilemem.errors import AllocationError, PoolStateError, TargetError, TMEMOverflowError
from tilemem.layout import TileLayout, sf_tmem_layout, tmem_datapath_layout


def pools(total_cols=512, **kw):
    smem = SMEMPool()
    return smem, TMEMPool(smem, total_cols, **kw)


def test_slot_is_a_4_byte_smem_word():
    _smem, tmem = pools()
    assert (
        tmem.slot.scope == "shared.dyn"
        and tmem.slot.nbytes == 4
        and tmem.slot.dtype.name == "uint32"
    )
    assert tmem.dealloc_warp == tmem.alloc_warp == 0


def test_existing_slot_is_used():
    smem = SMEMPool()
    slot = smem.alloc((1,), "uint32", name="slot")
    tmem = TMEMPool(smem, 128, tmem_addr=slot)
    assert tmem.slot is slot and len(smem.buffers) == 1


@pytest.mark.parametrize("cols", [0, 16, 48, 100, 1024, 384])
def test_total_cols_must_be_a_power_of_two_in_32_512(cols):
    with pytest.raises(AllocationError) as exc:
        pools(cols)
    assert f"total_cols={cols}" in str(exc.value) and "[32, 512]" in str(exc.value)


def test_total_cols_hint_names_the_next_power():
    with pytest.raises(AllocationError, match="use 512"):
        pools(384)


def test_auto_total_cols_is_the_smallest_power_covering_high_water():
    _, tmem = pools("auto")
    tmem.alloc((128, 160), "float32")
    assert tmem.commit() == 256
    _, tiny = pools("auto")
    tiny.alloc((128, 8), "float32")
    assert tiny.commit() == 32


def test_columns_from_shape_layout_and_explicit():
    _, tmem = pools()
    a = tmem.alloc((128, 64), "float32")  # from shape: 64 columns
    b = tmem.alloc((128, 64), "bfloat16")  # 16-bit: 32 columns
    c = tmem.alloc((64, 64), "float32", datapath="B")  # span(TCol) = 32
    d = tmem.alloc((128, 16), "float32", cols=64)
    assert [x.cols for x in (a, b, c, d)] == [64, 32, 32, 64]
    assert [x.col_offset for x in (a, b, c, d)] == [0, 64, 96, 128]


def test_columns_must_be_whole():
    _, tmem = pools()
    with pytest.raises(AllocationError, match="not a whole number of 32-bit TMEM columns"):
        tmem.alloc((128, 3), "bfloat16")


def test_default_layout_is_datapath_d_for_128_rows_identity_otherwise():
    _, tmem = pools()
    assert tmem.alloc((128, 32)).layout == tmem_datapath_layout("D", 128, 32)
    other = tmem.alloc((32, 16))
    assert other.layout.apply(5, 7) == {"TLane": 5, "TCol": 7}


def test_layout_and_datapath_are_exclusive():
    _, tmem = pools()
    with pytest.raises(AllocationError, match="not both"):
        tmem.alloc((128, 32), layout=tmem_datapath_layout("D", 128, 32), datapath="D")


def test_datapath_needs_2d_and_the_right_rows():
    _, tmem = pools()
    with pytest.raises(AllocationError, match="2-D shape"):
        tmem.alloc((2, 128, 32), datapath="D")
    with pytest.raises(ValueError, match="holds 64 rows"):
        tmem.alloc((128, 32), datapath="F")


def test_explicit_layout_gives_columns_from_its_span():
    _, tmem = pools()
    layout = TileLayout.of((64, 32), ("1@TLane", "2@TCol"))  # every other column
    assert tmem.alloc((64, 32), layout=layout).cols == 63


def test_overflow_names_both_numbers():
    _, tmem = pools(128)
    tmem.alloc((128, 100))
    with pytest.raises(TMEMOverflowError) as exc:
        tmem.alloc((128, 64), name="acc")
    msg = str(exc.value)
    assert "TMEM overflow" in msg and "[100, 164)" in msg and "total_cols is 128" in msg


def test_alloc_sf_uses_the_scale_factor_layout():
    _, tmem = pools()
    sf = tmem.alloc_sf((2, 128, 16), "float8_e4m3fn", sf_per_mma=4)
    assert sf.layout == sf_tmem_layout(128, 16, 4, pipe_depth=2)
    assert sf.cols == 32  # 2 stages x M=4 groups x Ko=4


def test_alloc_sf_with_reuse():
    _, tmem = pools()
    sf = tmem.alloc_sf((128, 32), "float8_e8m0fnu", sf_per_mma=2, sf_reuse=2)
    assert sf.layout == sf_tmem_layout(128, 16, 2, sf_reuse=2)


def test_alloc_sf_checks_dtype_and_shape():
    _, tmem = pools()
    with pytest.raises(AllocationError, match="8-bit"):
        tmem.alloc_sf((128, 16), "bfloat16", sf_per_mma=4)
    with pytest.raises(AllocationError, match="sf_per_mma must be 1, 2 or 4"):
        tmem.alloc_sf((128, 16), "float8_e4m3fn", sf_per_mma=3)
    with pytest.raises(AllocationError, match="positive divisor"):
        tmem.alloc_sf((128, 15), "float8_e4m3fn", sf_per_mma=1, sf_reuse=2)


def test_move_base_to_aliases_and_is_recorded():
    smem, tmem = pools()
    s = tmem.alloc((128, 128), name="S")
    tmem.move_base_to(64)
    p = tmem.alloc((128, 128), "bfloat16", name="P")
    plan = smem.plan().tmem[0]
    assert p.col_offset == 64 and plan.moves == ((128, 64),)
    assert plan.entries[1].overlaps == ("S",) and s.col_offset == 0


def test_commit_and_dealloc_protocol_order():
    _, tmem = pools()
    with pytest.raises(PoolStateError, match="before commit"):
        tmem.dealloc()
    tmem.commit()
    with pytest.raises(PoolStateError, match="already committed"):
        tmem.commit()
    tmem.dealloc()
    with pytest.raises(PoolStateError, match="already deallocated"):
        tmem.dealloc()


def test_cta_group_and_warps_are_checked():
    with pytest.raises(AllocationError, match="cta_group"):
        pools(cta_group=3)
    with pytest.raises(AllocationError, match="alloc_warp"):
        pools(alloc_warp=-1)
    _, tmem = pools(alloc_warp=2, dealloc_warp=3, cta_group=2)
    assert (tmem.alloc_warp, tmem.dealloc_warp, tmem.cta_group) == (2, 3, 2)


def test_tmem_on_a_target_without_it_explains():
    with pytest.raises(TargetError, match="sm_90a has no tensor memory"):
        TMEMPool(SMEMPool(target="sm_90a"))


def test_direct_indexing_of_tmem_points_to_tcgen05():
    _, tmem = pools()
    buf = tmem.alloc((128, 32))
    with pytest.raises(PoolStateError, match=r"tcgen05.ld"):
        buf[0, 0]


# --- TMEMStages -------------------------------------------------------------------


def test_stage_views_are_column_windows():
    _, tmem = pools()
    acc = tmem.alloc((128, 512), name="acc")
    stages = TMEMStages(acc, col_start=0, width=256, stages=2)
    one = stages[1]
    assert (one.col_offset, one.cols, one.shape) == (256, 256, (128, 256))
    for r, c in ((0, 0), (127, 255), (5, 100)):
        lane_col = one.layout.apply(r, c)
        assert (lane_col["TLane"], lane_col["TCol"] + one.col_offset) == (r, 256 + c)


def test_stage_stride_and_narrowing():
    _, tmem = pools()
    tmem.alloc((128, 32))
    buf = tmem.alloc((128, 256), name="b")
    stages = TMEMStages(buf, col_start=16, width=64, stages=3, stride=80)
    view = stages[2, 8:24]
    assert view.col_offset == 32 + 16 + 160 + 8 and view.cols == 16 and view.shape == (128, 16)


def test_stage_views_of_16_bit_data_count_elements():
    _, tmem = pools()
    buf = tmem.alloc((128, 256), "bfloat16")  # 128 columns
    view = TMEMStages(buf, 0, 128, 2)[1]
    assert view.col_offset == 64 and view.cols == 64


def test_stage_out_of_range_and_bad_slices():
    _, tmem = pools()
    stages = TMEMStages(tmem.alloc((128, 256)), 0, 128, 2)
    with pytest.raises(AllocationError, match=r"stage 2 out of range for 2 stages"):
        stages[2]
    with pytest.raises(AllocationError, match="within its 128 columns"):
        stages[0, 100:200]
    with pytest.raises(AllocationError, match="within its 128 columns"):
        stages[0, 5:5]


def test_stages_beyond_the_buffer_are_rejected():
    _, tmem = pools()
    buf = tmem.alloc((128, 256), name="acc")
    with pytest.raises(AllocationError, match="reach column 384, beyond the buffer's 256 columns"):
        TMEMStages(buf, 128, 128, 2)


def test_stages_over_an_smem_buffer_are_rejected():
    smem, _ = pools()
    with pytest.raises(AllocationError, match="TMEM buffer"):
        TMEMStages(smem.alloc((128, 64)), 0, 32)
