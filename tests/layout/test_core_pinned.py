"""The layout algebra pinned exactly: validation boundaries, evaluation, canonical forms,
regrouping, tiling, windows and swizzles, each value worked out by hand in a comment.

Formulas from docs/DESIGN.md#layouts (a strided layout sums ``coordinate * stride`` per axis; a
swizzle XORs ``L`` bits at ``pe + a`` into the bits at ``pe``) and docs/HARDWARE-RULES.md "Swizzle
modes" (``Swizzle<3, 4, 3>`` on byte addresses for 128B).
"""

import numpy as np
import pytest

from tilemem.errors import LayoutError
from tilemem.layout import ComposeLayout, Iter, SwizzleLayout, TileLayout
from tilemem.layout.core import row_major_strides

# -- Iter ---------------------------------------------------------------------------------


def test_iter_accepts_extent_one_and_stride_zero():
    assert repr(Iter(1, 0)) == "1:0@m"


LIMIT = 1 << 40  # the most elements any on-chip buffer could hold (tilemem.validate)


@pytest.mark.parametrize(
    ("extent", "stride", "message"),
    [
        (0, 1, f"Iter extent must be an integer in [1, {LIMIT}], got 0"),
        (LIMIT + 1, 1, f"Iter extent must be an integer in [1, {LIMIT}], got {LIMIT + 1}"),
        (2, -1, f"Iter stride must be an integer in [0, {LIMIT}], got -1"),
        (True, 1, f"Iter extent must be an integer in [1, {LIMIT}], got True (bool)"),
        (np.bool_(True), 1, f"Iter extent must be an integer in [1, {LIMIT}], got"),
        (2.0, 1, f"Iter extent must be an integer in [1, {LIMIT}], got 2.0 (float)"),
        (2, 1.5, f"Iter stride must be an integer in [0, {LIMIT}], got 1.5 (float)"),
    ],
)
def test_iter_refuses_bad_numbers(extent, stride, message):
    with pytest.raises(LayoutError) as exc:
        Iter(extent, stride)
    assert str(exc.value).startswith(message)


def test_iter_accepts_the_largest_extent_and_numpy_integers():
    assert repr(Iter(LIMIT, 0)) == f"{LIMIT}:0@m"
    it = Iter(np.int64(4), np.int32(2), "TCol")
    assert repr(it) == "4:2@TCol"
    assert type(it.extent) is int and type(it.stride) is int


@pytest.mark.parametrize("axis", ["", "1x", "T Col", 3, None])
def test_iter_refuses_an_axis_that_is_not_a_name(axis):
    with pytest.raises(LayoutError, match="Iter axis must be a name such as 'm' or 'TCol', got"):
        Iter(2, 1, axis)


# -- strides, construction ------------------------------------------------------------------


def test_row_major_strides():
    assert row_major_strides((2, 3, 4)) == [12, 4, 1]
    assert row_major_strides((5,)) == [1]


@pytest.mark.parametrize(
    ("stride", "expected"),
    [
        (3, "2:3@m"),
        (np.int64(3), "2:3@m"),
        ("1@TLane", "2:1@TLane"),
        ("  4 @ TCol ", "2:4@TCol"),
        ("5", "2:5@m"),
        ((2, "TCol"), "2:2@TCol"),
    ],
)
def test_stride_notations(stride, expected):
    assert repr(TileLayout.of((2,), (stride,))) == f"TileLayout({expected})"


@pytest.mark.parametrize("stride", [True, "x@m", "-1", (1, "m", 2), 1.0])
def test_unreadable_strides_are_refused(stride):
    with pytest.raises(LayoutError, match="cannot read stride"):
        TileLayout.of((2,), (stride,))


def test_strides_must_match_the_shape():
    with pytest.raises(LayoutError, match=r"shape \(2, 3\) and strides \(1,\) differ in length"):
        TileLayout.of((2, 3), (1,))


def test_tile_layout_needs_iters():
    with pytest.raises(LayoutError, match="at least one shard Iter"):
        TileLayout([])
    with pytest.raises(LayoutError, match="TileLayout takes Iter objects, got 3"):
        TileLayout([Iter(2, 1), 3])
    with pytest.raises(LayoutError, match="TileLayout takes Iter objects"):
        TileLayout([Iter(2, 1)], replica=[(2, 1)])


def test_tile_layout_shape_must_hold_the_iters():
    with pytest.raises(LayoutError, match=r"shape \(3,\) holds 3 elements but the shard"):
        TileLayout([Iter(2, 1), Iter(2, 2)], shape=(3,))


def test_axes_list_hardware_axes_first_then_others_as_seen():
    layout = TileLayout([Iter(2, 1, "foo"), Iter(2, 1, "TCol"), Iter(2, 1, "m"), Iter(2, 2, "bar")])
    assert layout.axes == ("m", "TCol", "foo", "bar")


def test_axes_include_offset_and_declared_axes():
    layout = TileLayout([Iter(2, 1)], offset={"TLane": 3}, axes=("TCol",))
    assert layout.axes == ("m", "TLane", "TCol")
    assert layout.apply(1) == {"m": 1, "TLane": 3, "TCol": 0}


# -- evaluation -------------------------------------------------------------------------------

ROW_2x3 = TileLayout.of((2, 3))  # m = 3 i + j


def test_apply_flat_index_and_coordinates_agree():
    assert ROW_2x3.apply(4) == {"m": 4}
    assert ROW_2x3.apply(1, 1) == {"m": 4}
    assert ROW_2x3.apply([1, 2]) == {"m": 5}
    assert ROW_2x3((0, 2)) == {"m": 2}


def test_apply_under_another_shape():
    # (1, 0, 2) in (2, 1, 3) is flat (1*1 + 0)*3 + 2 = 5 -> row-major m = 5
    assert ROW_2x3.apply(1, 0, 2, shape=(2, 1, 3)) == {"m": 5}


@pytest.mark.parametrize("flat", [-1, 6])
def test_flat_index_out_of_range(flat):
    with pytest.raises(LayoutError, match=rf"flat index {flat} out of range \[0, 6\)"):
        ROW_2x3.apply(flat)


def test_last_flat_index_is_in_range():
    assert ROW_2x3.apply(5) == {"m": 5}


@pytest.mark.parametrize("coords", [(2, 0), (0, 3), (-1, 0), (0, -1)])
def test_coordinates_out_of_range(coords):
    with pytest.raises(LayoutError, match=r"out of range for shape \(2, 3\)"):
        ROW_2x3.apply(*coords)


def test_coordinate_count_must_match():
    with pytest.raises(LayoutError, match=r"has 3 indices but shape \(2, 3\) has 2 dimensions"):
        ROW_2x3.apply(0, 0, 0)


def test_other_shape_must_hold_the_same_elements():
    with pytest.raises(
        LayoutError, match=r"shape \(2, 2\) holds 4 elements but the layout holds 6"
    ):
        ROW_2x3.apply(0, 0, shape=(2, 2))


def test_apply_flat_checks_both_ends():
    assert ROW_2x3.apply_flat([0, 5])["m"].tolist() == [0, 5]
    assert ROW_2x3.apply_flat([])["m"].tolist() == []
    for bad in ([-1], [6], [0, 6]):
        with pytest.raises(LayoutError, match=r"flat index out of range \[0, 6\)"):
            ROW_2x3.apply_flat(bad)


def test_positions_walk_every_element_row_major():
    layout = TileLayout.of((2, 3), (1, 2))  # column-major: m = i + 2 j
    assert layout.positions()["m"].tolist() == [0, 2, 4, 1, 3, 5]


def test_offset_is_added_and_reported():
    layout = TileLayout.of((4,), (2,), offset={"m": 8})
    assert layout.apply(3) == {"m": 14}
    assert layout.offset == {"m": 8}
    assert repr(layout) == "TileLayout(4:2@m) + 8@m"


def test_replica_positions_list_every_copy():
    layout = TileLayout([Iter(2, 1, "TLane")], replica=[Iter(2, 64, "TLane"), Iter(2, 1, "TCol")])
    assert layout.replica_positions(1) == [
        {"TLane": 1, "TCol": 0},
        {"TLane": 1, "TCol": 1},
        {"TLane": 65, "TCol": 0},
        {"TLane": 65, "TCol": 1},
    ]
    assert repr(layout) == "TileLayout(2:1@TLane) + replica(2:64@TLane, 2:1@TCol)"


def test_size_and_span_per_axis():
    # 128 lanes x 64 columns, shifted 16 columns: span TCol = 1 + 63 + 16 = 80
    layout = TileLayout([Iter(128, 1, "TLane"), Iter(64, 1, "TCol")], offset={"TCol": 16})
    assert (layout.size(), layout.size("TLane"), layout.size("TCol")) == (8192, 128, 64)
    assert (layout.span("TLane"), layout.span("TCol")) == (128, 80)
    assert layout.span() == 1 + 127 + 63 + 16
    assert layout.size("m") == 1 and layout.span("m") == 1


def test_span_counts_replicas():
    # 32 lanes copied to the 4 quarters: 1 + 31 + 3 * 32 = 128 lanes
    layout = TileLayout([Iter(32, 1, "TLane")], replica=[Iter(4, 32, "TLane")])
    assert layout.span("TLane") == 128
    assert layout.size("TLane") == 32


def test_span_of_gapped_strides():
    # (4, 8) with strides (16, 1): 1 + 3*16 + 7 = 56
    assert TileLayout.of((4, 8), (16, 1)).span() == 56


def test_equality_and_hash_follow_the_canonical_parts():
    a = TileLayout.of((4, 8))
    assert a == TileLayout.of((4, 8)) and hash(a) == hash(TileLayout.of((4, 8)))
    assert a != TileLayout.of((4, 8), offset={"m": 1})
    assert a != TileLayout.of((4, 8), (8, 2))
    assert a != "TileLayout(4:8@m, 8:1@m)"
    assert TileLayout([Iter(2, 1)], replica=[Iter(2, 4)]) != TileLayout([Iter(2, 1)])


# -- canonical form -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("layout", "expected"),
    [
        (TileLayout.of((4, 8)), "(32:1@m)"),  # 8*1 == 8: fused
        (TileLayout.of((2, 4), (4, 1)), "(8:1@m)"),
        (TileLayout.of((2, 4), (5, 1)), "(2:5@m, 4:1@m)"),  # 4*1 != 5
        (TileLayout.of((2, 4), (3, 1)), "(2:3@m, 4:1@m)"),
        (TileLayout.of((4, 8), (16, 1)), "(4:16@m, 8:1@m)"),
        (TileLayout.of((1, 8)), "(8:1@m)"),  # extent 1 dropped
        (TileLayout.of((1, 1)), "(1:1@m)"),  # all dropped: one unit Iter stays
        (TileLayout.of((2, 2, 2)), "(8:1@m)"),  # fuses repeatedly
        (TileLayout([Iter(2, 1, "TLane"), Iter(2, 1, "TCol")]), "(2:1@TLane, 2:1@TCol)"),
        (TileLayout([Iter(2, 2, "TLane"), Iter(2, 1, "TCol")]), "(2:2@TLane, 2:1@TCol)"),
    ],
)
def test_canonical_forms(layout, expected):
    assert repr(layout.canonicalize()) == f"TileLayout{expected}"


def test_canonical_form_sorts_and_prunes_replicas_and_offsets():
    layout = TileLayout(
        [Iter(4, 1, "TLane")],
        replica=[
            Iter(2, 64, "TLane"),
            Iter(2, 0, "TLane"),
            Iter(1, 5, "TCol"),
            Iter(2, 32, "TLane"),
        ],
        offset={"m": 0, "TCol": 3},
    )
    assert repr(layout.canonicalize()) == (
        "TileLayout(4:1@TLane) + replica(2:32@TLane, 2:64@TLane) + 3@TCol"
    )


def test_canonical_form_orders_replicas_by_axis_then_stride_then_extent():
    layout = TileLayout(
        [Iter(4, 1, "TLane")],
        replica=[Iter(3, 8, "TLane"), Iter(2, 8, "TLane"), Iter(2, 1, "TCol")],
    )
    assert repr(layout.canonicalize()) == (
        "TileLayout(4:1@TLane) + replica(2:1@TCol, 2:8@TLane, 3:8@TLane)"
    )


def test_canonical_form_keeps_shape_and_axes():
    layout = TileLayout([Iter(1, 1, "TLane"), Iter(8, 1, "TCol")], shape=(1, 8))
    canonical = layout.canonicalize()
    assert canonical.shape == (1, 8)
    assert canonical.axes == ("TLane", "TCol")


# -- regrouping, tiling, windows -------------------------------------------------------------


def test_iters_by_dim_splits_a_fused_iter_back():
    assert TileLayout.of((4, 8)).canonicalize().iters_by_dim((4, 8)) == [
        [Iter(4, 8)],
        [Iter(8, 1)],
    ]


def test_iters_by_dim_splits_across_dimensions():
    # [2:6, 6:1] as (4, 3): 6:1 -> 3:1 for the last dim and 2:3 carried; then 2:6, 2:3
    layout = TileLayout([Iter(2, 6), Iter(6, 1)])
    assert layout.iters_by_dim((4, 3)) == [[Iter(2, 6), Iter(2, 3)], [Iter(3, 1)]]


def test_iters_by_dim_keeps_unit_dimensions():
    layout = TileLayout.of((2, 1, 3))
    assert layout.iters_by_dim() == [[Iter(2, 3)], [Iter(1, 3)], [Iter(3, 1)]]


def test_iters_by_dim_refuses_a_straddling_iter():
    layout = TileLayout([Iter(3, 4), Iter(4, 1)])
    with pytest.raises(LayoutError, match="an Iter of extent 4 straddles a dimension of extent 6"):
        layout.iters_by_dim((2, 6))


def test_iters_by_dim_refuses_another_size():
    with pytest.raises(LayoutError, match=r"shape \(5,\) does not match layout size 12"):
        TileLayout.of((3, 4)).iters_by_dim((5,))


def test_tile_places_inner_blocks_by_the_outer_layout():
    # outer 2x2 row-major of inner 4x8 row-major blocks (32 elements each):
    # (5, 9) = block (1, 1), inside (1, 1): 3*32 + 1*8 + 1 = 105
    tiled = TileLayout.of((2, 2)).tile(TileLayout.of((4, 8)), (2, 2), (4, 8))
    assert tiled.shape == (8, 16)
    assert tiled.apply(5, 9) == {"m": 105}
    assert tiled.apply(7, 15) == {"m": 127}
    assert tiled.apply(0, 8) == {"m": 32}


def test_tile_keeps_the_inner_offset_and_replicas():
    inner = TileLayout([Iter(4, 1, "TLane")], replica=[Iter(2, 64, "TLane")], offset={"TLane": 2})
    tiled = TileLayout.of((2,), ("1@TCol",)).tile(inner, (2,), (4,))
    assert tiled.apply(5) == {"TLane": 3, "TCol": 1}
    assert tiled.replica == (Iter(2, 64, "TLane"),)


def test_tile_refuses_different_ranks():
    with pytest.raises(LayoutError, match=r"outer shape \(2,\) and inner shape \(4, 8\) differ"):
        TileLayout.of((2,)).tile(TileLayout.of((4, 8)), (2,), (4, 8))


def test_tile_to_repeats_row_major():
    # (2, 4) blocks over (4, 8): (3, 5) is block (1, 1) = 3rd block (24), inside (1, 1) = 5
    tiled = TileLayout.of((2, 4)).tile_to((4, 8))
    assert tiled.shape == (4, 8)
    assert tiled.apply(3, 5) == {"m": 29}
    assert tiled.apply(1, 4) == {"m": 12}


@pytest.mark.parametrize("to_shape", [(4, 6), (3, 8), (4,)])
def test_tile_to_needs_whole_repeats(to_shape):
    with pytest.raises(LayoutError, match="each dimension must divide"):
        TileLayout.of((2, 4)).tile_to(to_shape)


ROW_4x8 = TileLayout.of((4, 8))


def test_window_on_the_inner_dimension():
    win = ROW_4x8.window(1, 2, 4)  # columns 2..5: (1, 1) = 8 + 2 + 1
    assert win.shape == (4, 4)
    assert win.apply(1, 1) == {"m": 11}


def test_window_on_the_outer_dimension():
    win = ROW_4x8.window(0, 1, 2)
    assert win.shape == (2, 8)
    assert win.apply(0, 0) == {"m": 8}
    assert win.apply(1, 7) == {"m": 23}


def test_window_reaching_the_end_is_allowed():
    assert ROW_4x8.window(1, 4, 4).apply(0, 0) == {"m": 4}
    assert ROW_4x8.window(1, 0, 8) == TileLayout([Iter(4, 8), Iter(8, 1)], shape=(4, 8))


@pytest.mark.parametrize(("start", "length"), [(5, 4), (8, 1), (0, 9)])
def test_window_outside_the_dimension(start, length):
    end = start + length
    with pytest.raises(LayoutError, match=rf"window \[{start}, {end}\) outside dimension 1 of"):
        ROW_4x8.window(1, start, length)


@pytest.mark.parametrize(
    ("dim", "start", "length", "message"),
    [
        (1, -1, 2, "window start must be an integer in [0, "),
        (1, 0, 0, "window length must be an integer in [1, "),
        (2, 0, 1, "window dimension 2 of a 2-D layout"),
        (-1, 0, 1, "window dimension of a 2-D layout must be an integer in [0, "),
    ],
)
def test_window_arguments_are_checked(dim, start, length, message):
    with pytest.raises(LayoutError) as exc:
        ROW_4x8.window(dim, start, length)
    assert str(exc.value).startswith(message)


TWO_BLOCKS = TileLayout([Iter(2, 100), Iter(4, 1)], shape=(8,))  # blocks of 4, 100 apart


def test_window_inside_one_block():
    win = TWO_BLOCKS.window(0, 4, 4)
    assert [win.apply(i)["m"] for i in range(4)] == [100, 101, 102, 103]
    win = TWO_BLOCKS.window(0, 5, 2)
    assert [win.apply(i)["m"] for i in range(2)] == [101, 102]


def test_window_covering_whole_blocks():
    win = TWO_BLOCKS.window(0, 0, 8)
    assert [win.apply(i)["m"] for i in range(8)] == [0, 1, 2, 3, 100, 101, 102, 103]


def test_window_across_a_block_edge_is_refused():
    with pytest.raises(LayoutError, match="a window of 4 starting at 2 on dimension 0"):
        TWO_BLOCKS.window(0, 2, 4)


def test_window_from_the_origin_has_no_offset():
    layout = TileLayout([Iter(4, 1, "TLane"), Iter(8, 1, "TCol")])
    win = layout.window(1, 0, 4)
    assert win.apply(3, 3) == {"TLane": 3, "TCol": 3}
    assert win.offset == {}


# -- swizzles -------------------------------------------------------------------------------

SW128_BF16 = SwizzleLayout(3, 3, 3)  # 8 bf16 per 16-byte chunk, 3 bits, at bit 3


def test_swizzle_period_and_shape():
    assert SW128_BF16.period == 512  # 1 << (3 + 3 + 3) elements = 1024 bytes
    assert SW128_BF16.shape == (512,)
    assert SwizzleLayout(0, 0, 0).period == 1
    assert SwizzleLayout(1, 2).period == 1 << 6  # atom_len defaults to 3


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (0, 0),
        (7, 7),  # within the first chunk: unchanged
        (64, 72),  # byte 128 (row 1): chunk 0 ^ 1 -> byte 144
        (457, 497),  # row 7, element 9: chunk 57 -> 57 ^ 7 = 62 -> 496, + 1
        (512, 512),  # next period starts unswizzled again
    ],
)
def test_swizzle_128b_on_bf16(x, expected):
    assert SW128_BF16.swizzle(x) == expected
    assert SW128_BF16.apply(x % 512) == {"m": expected % 512}


def test_swizzle_works_on_arrays():
    assert SW128_BF16.swizzle(np.array([64, 457])).tolist() == [72, 497]


def test_swizzle_size_span_axes():
    assert (SW128_BF16.size(), SW128_BF16.span(), SW128_BF16.size("m")) == (512, 512, 512)
    assert (SW128_BF16.size("TCol"), SW128_BF16.span("TLane")) == (1, 1)
    assert SW128_BF16.axes == ("m",)
    assert SW128_BF16.canonicalize() is SW128_BF16
    assert repr(SW128_BF16) == "Swizzle(pe=3, L=3, a=3)"


@pytest.mark.parametrize("bad", [-1, 21])
@pytest.mark.parametrize("field", [0, 1, 2])
def test_swizzle_fields_lie_in_0_to_20(field, bad):
    values = [3, 3, 3]
    values[field] = bad
    name = ("per_element", "swizzle_len", "atom_len")[field]
    with pytest.raises(LayoutError, match=rf"SwizzleLayout {name} must be an integer in \[0, 20\]"):
        SwizzleLayout(*values)


def test_swizzle_fields_may_reach_20():
    assert SwizzleLayout(20, 0, 0).period == 1 << 20
    assert SwizzleLayout(0, 20, 0).period == 1 << 20
    assert SwizzleLayout(0, 0, 20).period == 1 << 20


# XOR bit 1 into bit 0: 0, 1, 3, 2 repeating
FLIP = SwizzleLayout(0, 1, 1)


def test_compose_swizzles_the_tile_offset():
    composed = ComposeLayout(FLIP, TileLayout.of((2, 4)))
    assert [composed.apply(i)["m"] for i in range(8)] == [0, 1, 3, 2, 4, 5, 7, 6]
    assert composed.apply(1, 2) == {"m": 7}
    assert composed.shape == (2, 4) and composed.axes == ("m",)
    assert composed.size() == 8 and composed.size("m") == 8


def test_compose_needs_a_tile_on_m_only():
    with pytest.raises(LayoutError, match=r"the tile must map to axis 'm' only, got axes"):
        ComposeLayout(FLIP, TileLayout([Iter(2, 1, "TCol"), Iter(4, 1)]))
    with pytest.raises(LayoutError, match="takes a SwizzleLayout and a TileLayout"):
        ComposeLayout(TileLayout.of((4,)), TileLayout.of((4,)))


def test_compose_span_rounds_m_up_to_whole_periods():
    period_64 = SwizzleLayout(0, 3, 3)
    assert ComposeLayout(period_64, TileLayout.of((100,))).span() == 128
    assert ComposeLayout(period_64, TileLayout.of((100,))).span("m") == 128
    assert ComposeLayout(period_64, TileLayout.of((128,))).span() == 128
    assert ComposeLayout(period_64, TileLayout.of((129,))).span() == 192
    assert ComposeLayout(period_64, TileLayout.of((100,))).span("TLane") == 1


def test_compose_canonical_form_drops_an_empty_swizzle():
    tile = TileLayout.of((4, 8))
    assert ComposeLayout(SwizzleLayout(3, 0, 3), tile).canonicalize() == TileLayout.of((32,))
    kept = ComposeLayout(SW128_BF16, tile).canonicalize()
    assert isinstance(kept, ComposeLayout) and kept.tile == TileLayout.of((32,))


def test_compose_tile_to_keeps_the_swizzle():
    composed = ComposeLayout(FLIP, TileLayout.of((4,))).tile_to((8,))
    assert composed.swizzle == FLIP
    assert [composed.apply(i)["m"] for i in range(8)] == [0, 1, 3, 2, 4, 5, 7, 6]
    assert repr(ComposeLayout(FLIP, TileLayout.of((4,)))) == (
        "Swizzle(pe=0, L=1, a=1) o TileLayout(4:1@m)"
    )


# -- construction checks (shared integer rules) -----------------------------------------------


@pytest.mark.parametrize("shard", ["ab", 5, Iter(2, 1), None])
def test_shard_must_be_a_sequence_of_iters(shard):
    with pytest.raises(LayoutError, match="TileLayout shard must be a sequence of Iter objects"):
        TileLayout(shard)


@pytest.mark.parametrize("replica", ["ab", 5, Iter(2, 1)])
def test_replica_must_be_a_sequence_of_iters(replica):
    with pytest.raises(LayoutError, match="TileLayout replica must be a sequence of Iter objects"):
        TileLayout([Iter(2, 1)], replica=replica)


@pytest.mark.parametrize(
    ("offset", "message"),
    [
        ([("m", 1)], "offset must be a mapping {axis: int}, got"),
        ({"": 1}, "offset axis must be a name such as 'TCol', got ''"),
        ({3: 1}, "offset axis must be a name such as 'TCol', got 3"),
        ({"m": -1}, "offset on axis 'm' must be an integer in [0, "),
        ({"m": 1.5}, "offset on axis 'm' must be an integer in [0, "),
    ],
)
def test_offsets_are_checked(offset, message):
    with pytest.raises(LayoutError) as exc:
        TileLayout([Iter(2, 1)], offset=offset)
    assert str(exc.value).startswith(message)


@pytest.mark.parametrize("axes", ["TCol", [3], ("m", None)])
def test_declared_axes_are_names(axes):
    with pytest.raises(LayoutError, match="axes must be a sequence of axis names"):
        TileLayout([Iter(2, 1)], axes=axes)


def test_positions_up_to_2_62_are_allowed():
    # span = 1 + (2**31 + 1) * (2**31 - 1) = 2**62 exactly
    layout = TileLayout([Iter(2**31 + 2, 2**31 - 1)])
    assert layout.span() == 2**62


def test_positions_beyond_2_62_are_refused():
    # span = 1 + (2**31 + 1) * 2**31 = 2**62 + 2**31 + 1
    with pytest.raises(LayoutError) as exc:
        TileLayout([Iter(2**31 + 2, 2**31)])
    assert str(exc.value) == (
        f"layout reaches position {2**62 + 2**31} on axis 'm', beyond the {2**62} that 64-bit "
        "index arithmetic holds without wrapping"
    )


def test_strides_must_be_a_sequence():
    for strides in ("11", 3):
        with pytest.raises(LayoutError, match="strides must be a sequence, got"):
            TileLayout.of((2, 2), strides)


def test_apply_needs_integer_coordinates():
    with pytest.raises(LayoutError, match="apply needs a flat index or one index per dimension"):
        ROW_2x3.apply()
    with pytest.raises(LayoutError, match=r"coordinate \(1.0, 2\).*1.0 is not an integer"):
        ROW_2x3.apply(1.0, 2)
    with pytest.raises(LayoutError, match="is not an integer"):
        ROW_2x3.apply(True)
    assert ROW_2x3.apply(np.int64(1), np.int32(2)) == {"m": 5}


def test_apply_flat_needs_integer_arrays():
    with pytest.raises(LayoutError, match="flat indices must be integers, got an array of float64"):
        ROW_2x3.apply_flat([1.0, 2.0])
    assert ROW_2x3.apply_flat(np.array([5], dtype=np.uint8))["m"].tolist() == [5]


def test_swizzle_apply_reads_coordinates_row_major():
    # (1, 0) of (8, 64) is element 64 -> 72 (see test_swizzle_128b_on_bf16)
    assert SW128_BF16.apply(1, 0, shape=(8, 64)) == {"m": 72}
    assert SW128_BF16.apply(457, shape=(512,)) == {"m": 497}


# -- edges found by mutation -----------------------------------------------------------------


def test_all_unit_iters_keep_the_first_axis():
    layout = TileLayout([Iter(1, 1, "TLane"), Iter(1, 1, "TCol")])
    assert repr(layout.canonicalize()) == "TileLayout(1:1@TLane)"


def test_fusion_replaces_the_last_iter_only():
    # 4:8 and 8:1 fuse to 32:1; 2:100 before them stays first
    layout = TileLayout.of((2, 4, 8), (100, 8, 1))
    assert repr(layout.canonicalize()) == "TileLayout(2:100@m, 32:1@m)"


def test_a_split_iter_goes_in_front_of_the_inner_ones():
    # [4:2, 2:1] as (2, 4): the last dimension takes 2:1 and the inner half of 4:2 (2:2),
    # in front of it; the outer half (2:4) is the first dimension
    layout = TileLayout([Iter(4, 2), Iter(2, 1)])
    assert layout.iters_by_dim((2, 4)) == [[Iter(2, 4)], [Iter(2, 2), Iter(2, 1)]]


def test_leftover_unit_iters_are_ignored():
    assert TileLayout.of((1, 4)).iters_by_dim((4,)) == [[Iter(4, 1)]]


def test_a_window_of_one():
    assert ROW_4x8.window(1, 3, 1).apply(2, 0) == {"m": 19}
    assert ROW_4x8.window(0, 3, 1).apply(0, 5) == {"m": 29}


@pytest.mark.parametrize(("start", "length"), [(2, 3), (3, 2), (3, 5), (0, 6)])
def test_a_window_that_is_not_whole_blocks_is_refused(start, length):
    # (2, 3), (3, 2), (3, 5): the last element is the first of the next block of 4;
    # (0, 6): starts on a block but covers one and a half
    with pytest.raises(LayoutError, match="is not a strided layout"):
        TWO_BLOCKS.window(0, start, length)


THREE_LEVELS = TileLayout([Iter(2, 1000), Iter(2, 100), Iter(4, 1)], shape=(16,))


def test_window_covering_the_middle_level():
    win = THREE_LEVELS.window(0, 8, 8)
    assert [win.apply(i)["m"] for i in range(8)] == [1000, 1001, 1002, 1003, 1100, 1101, 1102, 1103]
    win = THREE_LEVELS.window(0, 0, 8)
    assert [win.apply(i)["m"] for i in range(8)] == [0, 1, 2, 3, 100, 101, 102, 103]


def test_positions_of_2_24_elements_are_evaluated():
    # the bound on whole-layout evaluation (1 << 24 elements) is itself allowed
    assert int(TileLayout.of((1 << 24,)).positions()["m"][-1]) == (1 << 24) - 1


def test_positions_beyond_2_24_elements_are_refused():
    with pytest.raises(LayoutError, match=r"positions\(\) of 16777217 elements"):
        TileLayout.of(((1 << 24) + 1,)).positions()
