import numpy as np
import pytest

from tilemem.errors import LayoutError
from tilemem.layout import ComposeLayout, Iter, SwizzleLayout, TileLayout


def test_flat_apply_splits_row_major_last_iter_fastest():
    layout = TileLayout([Iter(4, 1), Iter(8, 4)])  # column-major 4x8
    # x = 11 -> (1, 3): 1*1 + 3*4
    assert layout.apply(11) == {"m": 13}


def test_multi_dim_apply_groups_iters_by_shape():
    layout = TileLayout([Iter(2, 100), Iter(4, 10), Iter(8, 1)], shape=(8, 8))
    # row 5 = (1, 1) over (2, 4); col 3
    assert layout.apply(5, 3, shape=(8, 8)) == {"m": 100 + 10 + 3}
    assert layout.apply(5, 3) == layout.apply(5 * 8 + 3)


def test_natural_shape_answers_without_shape_argument():
    layout = TileLayout.of((4, 8), ("8@TLane", "1@TCol"))
    assert layout.apply(2, 3) == {"TLane": 16, "TCol": 3}


def test_offset_is_added_per_axis():
    layout = TileLayout([Iter(4, 1, "TLane")], offset={"TLane": 16, "TCol": 3})
    assert layout.apply(2) == {"TLane": 18, "TCol": 3}


def test_apply_rejects_out_of_range_and_wrong_rank():
    layout = TileLayout.row_major((4, 8))
    with pytest.raises(LayoutError, match="out of range"):
        layout.apply(4, 0)
    with pytest.raises(LayoutError, match="out of range"):
        layout.apply(32)
    with pytest.raises(LayoutError, match="3 dimensions"):
        layout.apply(1, 2, shape=(2, 2, 8))
    with pytest.raises(LayoutError, match="holds 30 elements"):
        layout.apply(1, 2, shape=(5, 6))


def test_size_and_span_per_axis():
    layout = TileLayout(
        [Iter(64, 1, "TLane"), Iter(2, 64, "TLane"), Iter(32, 1, "TCol")],
        replica=[Iter(2, 200, "TCol")],
        offset={"TCol": 5},
    )
    assert layout.size() == 64 * 2 * 32
    assert layout.size("TLane") == 128 and layout.size("TCol") == 32
    assert layout.span("TLane") == 128
    assert layout.span("TCol") == 1 + 31 + 200 + 5


def test_canonicalize_drops_unit_iters_zero_offsets_and_fuses():
    layout = TileLayout(
        [Iter(1, 7), Iter(4, 8), Iter(8, 1), Iter(1, 3)], offset={"m": 0}, shape=(4, 8)
    )
    canon = layout.canonicalize()
    assert canon.shard == (Iter(32, 1),)
    assert canon.offset == {}
    assert canon == TileLayout.row_major((4, 8)).canonicalize()
    # fusion keeps the function
    assert np.array_equal(canon.positions()["m"], layout.positions()["m"])


def test_canonicalize_keeps_one_iter_when_all_are_unit():
    assert TileLayout([Iter(1, 5), Iter(1, 2)]).canonicalize().shard == (Iter(1, 1),)


def test_canonicalize_does_not_fuse_across_axes_or_gaps():
    layout = TileLayout([Iter(4, 16), Iter(8, 1)])  # gap: 8*1 != 16
    assert layout.canonicalize().shard == layout.shard
    layout = TileLayout([Iter(4, 8, "TLane"), Iter(8, 1, "TCol")])
    assert len(layout.canonicalize().shard) == 2


def test_canonical_replicas_are_ordered():
    a = TileLayout([Iter(4, 1)], replica=[Iter(2, 64, "TLane"), Iter(2, 32, "TLane")])
    b = TileLayout([Iter(4, 1)], replica=[Iter(2, 32, "TLane"), Iter(2, 64, "TLane")])
    assert a != b and a.canonicalize() == b.canonicalize()


def test_replica_positions_enumerate_every_copy():
    layout = TileLayout([Iter(32, 1, "TLane")], replica=[Iter(4, 32, "TLane")])
    assert [p["TLane"] for p in layout.replica_positions(3)] == [3, 35, 67, 99]


def test_tile_multiplies_outer_strides_by_inner_span():
    inner = TileLayout.row_major((2, 4))  # span 8
    outer = TileLayout.row_major((3, 2))
    tiled = outer.tile(inner, (3, 2), (2, 4))
    assert tiled.shape == (6, 8)
    for i in range(6):
        for j in range(8):
            o, n = (i // 2, j // 4), (i % 2, j % 4)
            expect = (o[0] * 2 + o[1]) * 8 + n[0] * 4 + n[1]
            assert tiled.apply(i, j) == {"m": expect}


def test_tile_to_repeats_row_major():
    atom = TileLayout.row_major((8, 16))
    big = atom.tile_to((16, 32), (8, 16))
    # block (1, 1) starts after 3 atoms of 128 elements
    assert big.apply(8, 16) == {"m": 3 * 128}
    assert big.apply(9, 17) == {"m": 3 * 128 + 16 + 1}


def test_tile_to_rejects_non_dividing_shapes():
    with pytest.raises(LayoutError, match="must divide"):
        TileLayout.row_major((8, 16)).tile_to((12, 32), (8, 16))


def test_window_within_one_iter_shifts_the_offset():
    layout = TileLayout.of((128, 512), ("1@TLane", "1@TCol"))
    win = layout.window(1, 256, 128)
    assert win.shape == (128, 128)
    assert win.apply(3, 5) == layout.apply(3, 256 + 5)


def test_window_over_folded_halves():
    # data path B: columns fold onto lanes 64..127
    layout = TileLayout(
        [Iter(64, 1, "TLane"), Iter(2, 64, "TLane"), Iter(32, 1, "TCol")], shape=(64, 64)
    )
    second = layout.window(1, 32, 32)
    assert all(second.apply(r, c) == layout.apply(r, 32 + c) for r in (0, 63) for c in (0, 31))
    with pytest.raises(LayoutError, match="not a strided layout"):
        layout.window(1, 16, 32)


def test_swizzle_formula_matches_spec_example():
    swz = SwizzleLayout(3, 3, 3)  # bf16, 128B
    # x = row 1 chunk 0: chunk index c = 8 -> c ^ (1) = 9 -> element 72
    assert swz.apply(64) == {"m": 72}
    assert swz.period == 1 << 9


def test_compose_swizzles_only_m():
    tile = TileLayout.row_major((8, 64))
    comp = ComposeLayout(SwizzleLayout(3, 3, 3), tile)
    assert comp.apply(1, 0) == {"m": 72}
    assert comp.canonicalize() == ComposeLayout(SwizzleLayout(3, 3, 3), tile.canonicalize())
    assert ComposeLayout(SwizzleLayout(3, 0, 3), tile).canonicalize() == tile.canonicalize()


def test_short_notation_reads_strides_and_axes():
    layout = TileLayout.of((2, 3), ("1@TLane", (5, "TCol")))
    assert layout.shard == (Iter(2, 1, "TLane"), Iter(3, 5, "TCol"))
    with pytest.raises(LayoutError, match="STRIDE@AXIS"):
        TileLayout.of((2,), ("one",))


def test_bad_iters_are_rejected():
    with pytest.raises(LayoutError, match="extent"):
        Iter(0, 1)
    with pytest.raises(LayoutError, match="stride"):
        Iter(2, -1)
    with pytest.raises(LayoutError, match="shape"):
        TileLayout([Iter(4, 1)], shape=(3,))


def test_vectorised_positions_equal_scalar_apply():
    layout = TileLayout([Iter(3, 40), Iter(5, 1), Iter(2, 7, "TCol")], offset={"m": 2})
    pos = layout.positions()
    for x in range(layout.size()):
        one = layout.apply(x)
        assert {k: int(v[x]) for k, v in pos.items()} == one
