"""The layouts the hardware imposes, pinned element by element with hand-computed positions.

Shared memory: docs/HARDWARE-RULES.md#swizzle-modes (``Swizzle<L, 4, 3>`` on byte addresses; periods
256/512/1024 B; 16-byte core matrices without swizzle) and docs/DESIGN.md#named-layouts and
#smem-pools (the K-major operand formula, the ``"auto"`` rule, the alloc_mma error text). Tensor
memory: PTX ISA 9.0 "Matrix fragments for tcgen05.mma" data paths A-G and the block-scale-factor
layout, as the formulas of docs/DESIGN.md#named-layouts write them; one 32-bit cell per accumulator
element (CuTe's ``tmem_frg_1sm`` storage type is ``uint32_t``).
"""

import pytest

from tilemem.errors import LayoutError, SwizzleError
from tilemem.layout import (
    SwizzleLayout,
    SwizzleMode,
    TileLayout,
    layout_swizzle_mode,
    mma_atom_shape,
    mma_shared_layout,
    sf_tmem_layout,
    swizzle_for,
    tmem_datapath_layout,
    widest_swizzle,
)
from tilemem.layout.smem import check_mma_tile
from tilemem.layout.tmem import accumulator_cell

# -- swizzle modes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "row", "period", "label"),
    [
        (SwizzleMode.SWIZZLE_NONE, 16, 16, "none"),
        (SwizzleMode.SWIZZLE_32B_ATOM, 32, 256, "32B"),
        (SwizzleMode.SWIZZLE_64B_ATOM, 64, 512, "64B"),
        (SwizzleMode.SWIZZLE_128B_ATOM, 128, 1024, "128B"),
    ],
)
def test_mode_sizes(mode, row, period, label):
    assert (mode.row_bytes, mode.period_bytes, mode.label) == (row, period, label)


@pytest.mark.parametrize(
    ("given", "mode"),
    [
        (SwizzleMode.SWIZZLE_64B_ATOM, SwizzleMode.SWIZZLE_64B_ATOM),
        (0, SwizzleMode.SWIZZLE_NONE),
        (3, SwizzleMode.SWIZZLE_128B_ATOM),
        ("none", SwizzleMode.SWIZZLE_NONE),
        (" 128B ", SwizzleMode.SWIZZLE_128B_ATOM),
        ("32b", SwizzleMode.SWIZZLE_32B_ATOM),
        ("64B", SwizzleMode.SWIZZLE_64B_ATOM),
    ],
)
def test_mode_parse_accepts(given, mode):
    assert SwizzleMode.parse(given) is mode


@pytest.mark.parametrize("given", [4, -1, True, "256B", "auto", 1.0, None])
def test_mode_parse_refuses(given):
    with pytest.raises(LayoutError, match=rf"unknown swizzle mode {given!r}"):
        SwizzleMode.parse(given)


@pytest.mark.parametrize(
    ("dtype", "mode", "swizzle", "atom"),
    [
        ("bfloat16", "128B", SwizzleLayout(3, 3, 3), [8, 64]),  # 8 elements per 16 bytes
        ("float32", "32B", SwizzleLayout(2, 1, 3), [8, 8]),
        ("float8_e4m3fn", "64B", SwizzleLayout(4, 2, 3), [8, 64]),
        ("float4_e2m1fn", "128B", SwizzleLayout(5, 3, 3), [8, 256]),
    ],
)
def test_element_unit_swizzle_and_atom(dtype, mode, swizzle, atom):
    assert swizzle_for(dtype, mode) == swizzle
    assert mma_atom_shape(dtype, mode) == atom


def test_no_swizzle_has_no_atom():
    with pytest.raises(LayoutError, match="SWIZZLE_NONE has no swizzle atom"):
        mma_atom_shape("bfloat16", "none")


def test_element_width_must_divide_16_bytes():
    with pytest.raises(LayoutError, match="element width dividing 128 bits, got 6"):
        swizzle_for("float6_e2m3fn", "128B")


@pytest.mark.parametrize(
    ("row_elems", "mode"),
    [
        (64, SwizzleMode.SWIZZLE_128B_ATOM),  # 128-byte rows
        (192, SwizzleMode.SWIZZLE_128B_ATOM),  # 384 = 3 x 128
        (32, SwizzleMode.SWIZZLE_64B_ATOM),
        (96, SwizzleMode.SWIZZLE_64B_ATOM),  # 192 bytes: 3 x 64, not a multiple of 128
        (16, SwizzleMode.SWIZZLE_32B_ATOM),
        (48, SwizzleMode.SWIZZLE_32B_ATOM),  # 96 bytes
        (8, SwizzleMode.SWIZZLE_NONE),
        (0, SwizzleMode.SWIZZLE_NONE),
    ],
)
def test_auto_picks_the_widest_mode_dividing_the_row(row_elems, mode):
    assert widest_swizzle("bfloat16", row_elems) is mode


def test_auto_refuses_a_negative_row():
    with pytest.raises(LayoutError, match="row_elems must be an integer >= 0, got -1"):
        widest_swizzle("bfloat16", -1)


# -- MMA operand layouts ----------------------------------------------------------------------


def _m(layout, *coord):
    return layout.apply(*coord)["m"]


def test_no_swizzle_uses_8_row_core_matrices():
    # bf16: e16 = 8; m = 8 r + 8*8 (k // 8) + k % 8 for R = 8
    layout = mma_shared_layout("bfloat16", "none", (8, 16))
    assert _m(layout, 1, 9) == 8 + 64 + 1
    assert _m(layout, 7, 7) == 63
    assert _m(layout, 0, 8) == 64
    assert layout_swizzle_mode(layout) is SwizzleMode.SWIZZLE_NONE


def test_no_swizzle_with_ragged_k_is_row_major():
    layout = mma_shared_layout("bfloat16", "none", (8, 12))  # 12 % 8 != 0
    assert _m(layout, 1, 9) == 21


def test_no_swizzle_stages_are_whole_tiles():
    layout = mma_shared_layout("bfloat16", "none", (2, 8, 16))
    assert _m(layout, 1, 1, 9) == 128 + 73


def test_128b_swizzle_on_bf16():
    # m = swz(64 r + 512 (k // 64) + k % 64), swz = Swizzle(3, 3, 3) on elements
    layout = mma_shared_layout("bfloat16", "128B", (8, 128))
    assert _m(layout, 1, 0) == 72  # 64 -> chunk 8 ^ 1 = 9 -> 72
    assert _m(layout, 0, 8) == 8  # row 0 is not permuted
    assert _m(layout, 1, 8) == 64  # 72 -> chunk 9 ^ 1 = 8 -> 64
    assert _m(layout, 0, 64) == 512  # second column block
    assert _m(layout, 1, 64) == 584  # 576 -> chunk 72 ^ 1 = 73 -> 584
    assert layout_swizzle_mode(layout) is SwizzleMode.SWIZZLE_128B_ATOM


def test_swizzled_stages_are_whole_tiles():
    layout = mma_shared_layout("bfloat16", "128B", (2, 8, 64))
    assert _m(layout, 1, 0, 0) == 512
    assert _m(layout, 1, 1, 0) == 512 + 72


def test_32b_swizzle_on_float32():
    # C = 8 floats per 32-byte row, m = swz(8 r + k); Swizzle(2, 1, 3) on elements XORs
    # element bit 5 into bit 2 (byte bit 7 into bit 4): (4, 1) -> 33 -> 33 ^ 4 = 37
    layout = mma_shared_layout("float32", "32B", (8, 8))
    assert _m(layout, 4, 1) == 37
    assert _m(layout, 3, 1) == 25


def test_swizzled_k_must_fill_whole_rows():
    with pytest.raises(
        LayoutError, match=r"K=32 is not a multiple of the 128-byte swizzle row \(64 elements\)"
    ):
        mma_shared_layout("bfloat16", "128B", (8, 32))


@pytest.mark.parametrize("shape", [(64,), (0, 64), (8, -64)])
def test_operand_shapes_are_checked(shape):
    with pytest.raises(LayoutError, match="MMA operand"):
        mma_shared_layout("bfloat16", "128B", shape)


def test_plain_tiles_have_no_swizzle_mode():
    assert layout_swizzle_mode(TileLayout.of((8, 8))) is SwizzleMode.SWIZZLE_NONE


# -- explicit-mode checks (docs/DESIGN.md#smem-pools error text) ---


def test_narrow_rows_name_the_mode_that_fits():
    with pytest.raises(SwizzleError) as exc:
        check_mma_tile((128, 32), "bfloat16", SwizzleMode.SWIZZLE_128B_ATOM)
    assert str(exc.value) == (
        "(128, 32) bfloat16 gives 64-byte rows; SWIZZLE_128B_ATOM needs rows that are a "
        "multiple of 128 bytes: use SWIZZLE_64B_ATOM or make shape[-1] a multiple of 64"
    )


def test_sub_byte_rows_are_counted_in_bits():
    # 100 fp4 = 400 bits = 50 bytes; 128B needs 1024-bit rows: 256 fp4
    with pytest.raises(SwizzleError) as exc:
        check_mma_tile((8, 100), "float4_e2m1fn", SwizzleMode.SWIZZLE_128B_ATOM)
    assert "gives 50-byte rows" in str(exc.value)
    assert "use SWIZZLE_NONE or make shape[-1] a multiple of 256" in str(exc.value)


def test_empty_rows_suggest_no_swizzle():
    with pytest.raises(SwizzleError) as exc:
        check_mma_tile((8, 0), "bfloat16", SwizzleMode.SWIZZLE_32B_ATOM)
    assert str(exc.value).endswith("use SWIZZLE_NONE or make shape[-1] a multiple of 16")


@pytest.mark.parametrize(("rows", "fix"), [(100, 104), (4, 8), (0, 8), (9, 16)])
def test_rows_must_be_whole_8_row_atoms(rows, fix):
    with pytest.raises(SwizzleError) as exc:
        check_mma_tile((rows, 64), "bfloat16", SwizzleMode.SWIZZLE_128B_ATOM)
    assert f"shape[-2] = {rows} rows" in str(exc.value)
    assert str(exc.value).endswith(f"(use {fix})")


def test_rows_are_checked_without_swizzle_too():
    with pytest.raises(SwizzleError, match=r"shape\[-2\] = 12 rows"):
        check_mma_tile((12, 12), "bfloat16", SwizzleMode.SWIZZLE_NONE)


def test_leading_extents_must_be_positive():
    with pytest.raises(SwizzleError, match="every extent must be positive"):
        check_mma_tile((0, 8, 64), "bfloat16", SwizzleMode.SWIZZLE_128B_ATOM)


def test_a_tile_needs_two_dimensions():
    with pytest.raises(SwizzleError, match=r"at least 2 dimensions .* got shape \(64,\)"):
        check_mma_tile((64,), "bfloat16", SwizzleMode.SWIZZLE_128B_ATOM)


def test_fitting_tiles_pass():
    assert check_mma_tile((2, 8, 64), "bfloat16", SwizzleMode.SWIZZLE_128B_ATOM) is None
    assert check_mma_tile((8, 12), "bfloat16", SwizzleMode.SWIZZLE_NONE) is None


# -- TMEM data paths ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "cell"), [(None, 1), ("float32", 1), ("int32", 1), ("float16", 2), ("bfloat16", 2)]
)
def test_accumulator_cell(dtype, cell):
    assert accumulator_cell(dtype) == cell


@pytest.mark.parametrize("dtype", ["int8", "float64", "float8_e4m3fn"])
def test_accumulator_cell_refuses_other_widths(dtype):
    with pytest.raises(LayoutError, match=f"32-bit .* or 16-bit .* cells, got {dtype}"):
        accumulator_cell(dtype)


def _lane_col(layout, r, c):
    p = layout.apply(r, c)
    return p["TLane"], p["TCol"]


def test_datapath_d_is_the_identity():
    assert _lane_col(tmem_datapath_layout("D", 128, 256), 5, 7) == (5, 7)
    assert _lane_col(tmem_datapath_layout("A", 128, 256), 127, 255) == (127, 255)


def test_16_bit_accumulators_take_a_whole_cell():
    assert _lane_col(tmem_datapath_layout("D", 128, 256, dtype="float16"), 5, 7) == (5, 14)
    # G below, with cells of 2: column 8 -> TCol 16
    assert _lane_col(tmem_datapath_layout("G", 32, 256, dtype="float16"), 5, 200) == (101, 16)


@pytest.mark.parametrize("letter", ["B", "E"])
def test_datapaths_b_and_e_fold_column_halves_64_lanes_apart(letter):
    # lane = r + 64 (c // 128), col = c % 128 for cols = 256
    layout = tmem_datapath_layout(letter, 64, 256)
    assert _lane_col(layout, 3, 130) == (67, 2)
    assert _lane_col(layout, 63, 127) == (63, 127)


def test_datapath_g_folds_column_quarters_32_lanes_apart():
    # lane = r + 32 (c // 64), col = c % 64 for cols = 256
    layout = tmem_datapath_layout("G", 32, 256)
    assert _lane_col(layout, 5, 200) == (101, 8)
    assert _lane_col(layout, 31, 63) == (31, 63)


@pytest.mark.parametrize("letter", ["F", "C"])
def test_datapaths_f_and_c_take_16_lanes_per_warp_quarter(letter):
    # lane = 32 (r // 16) + r % 16 + 16 sub_slab
    layout = tmem_datapath_layout(letter, 64, 64)
    assert _lane_col(layout, 17, 3) == (33, 3)
    assert _lane_col(layout, 63, 0) == (111, 0)
    upper = tmem_datapath_layout(letter, 64, 64, sub_slab=1)
    assert _lane_col(upper, 17, 3) == (49, 3)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("H", 128, 64), "unknown TMEM data path 'H'; known: A, B, C, D, E, F, G"),
        ((4, 128, 64), "unknown TMEM data path 4"),
        (
            ("B", 128, 64),
            "data path B (M=128 cta_group::2 dense) holds 64 rows per CTA, got rows=128",
        ),
        (("D", 128, 0), "data path D: cols must be an integer in [1, "),
        (("D", 128, 64, 2), "sub_slab must be 0 or 1, got 2"),
        (("F", 64, 64, True), "sub_slab must be 0 or 1, got True"),
        (("D", 128, 64, 1), "sub_slab selects the upper 16 lanes"),
        (
            ("B", 64, 3),
            "data path B folds 2 column blocks onto lanes 64 apart: cols must be a multiple of 2, "
            "got 3",
        ),
        (
            ("G", 32, 6),
            "data path G folds 4 column blocks onto lanes 32 apart: cols must be a multiple of 4, "
            "got 6",
        ),
    ],
)
def test_datapath_arguments_are_checked(args, message):
    with pytest.raises(LayoutError) as exc:
        tmem_datapath_layout(*args)
    assert str(exc.value).startswith(message)


# -- block-scale factors -----------------------------------------------------------------------


def _sf(layout, *coord):
    return layout.apply(*coord)["TLane"], layout.apply(*coord)["TCol"]


def test_scale_factors_one_per_mma():
    # rows 128 (M = 4), SF_K 8, spm 1: K = 8, pf = 4, Ko = 2; k = ko*4 + p
    # r = 37, k = 6: ko 1, p 2 -> TCol = 4*1 + 1*16 + 2 = 22, TLane = 5
    layout = sf_tmem_layout(128, 8, 1)
    assert _sf(layout, 37, 6) == (5, 22)
    lanes = [p["TLane"] for p in layout.replica_positions(37, 6)]
    assert lanes == [5, 37, 69, 101]


def test_scale_factors_when_pf_must_halve():
    # rows 32 (M = 1), SF_K 6, spm 2: K = 3, pf 2 does not divide 3 -> pf 1, Ko 3
    # k = ko*2 + j: r = 3, k = 5 -> ko 2, j 1 -> TCol = 2*4 + 1 = 9
    assert _sf(sf_tmem_layout(32, 6, 2), 3, 5) == (3, 9)


def test_scale_factors_four_per_mma():
    # rows 64 (M = 2), SF_K 8, spm 4: K = 2, pf 1, Ko 2; r = 40 (group 1), k = 5: ko 1, j 1
    # TCol = 4*1 + 1*8 + 1 = 13
    assert _sf(sf_tmem_layout(64, 8, 4), 40, 5) == (8, 13)


def test_scale_factor_reuse_reads_each_factor_again():
    # rows 32, SF_K 4, spm 1, reuse 2: column k' = 2k + t holds factor k: k' = 5 -> k = 2
    layout = sf_tmem_layout(32, 4, 1, sf_reuse=2)
    assert layout.shape == (32, 8)
    assert _sf(layout, 0, 5) == (0, 2)
    assert _sf(layout, 0, 4) == (0, 2)


def test_scale_factor_stages_never_overlap():
    # rows 32, SF_K 8, spm 1: K 8, pf 4, Ko 2 -> a stage is 4*1*2 = 8 columns
    # (s 2, r 0, k 5): ko 1, p 1 -> 16 + 4 + 1 = 21
    layout = sf_tmem_layout(32, 8, 1, pipe_depth=3)
    assert layout.shape == (3, 32, 8)
    assert _sf(layout, 2, 0, 5) == (0, 21)
    assert layout.span("TCol") == 24


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((128, 8, 3), {}, "sf_per_mma must be 1, 2 or 4 scale factors per MMA, got 3"),
        ((16, 8, 1), {}, "scale-factor rows must be a positive multiple of 32"),
        ((48, 8, 1), {}, "scale-factor rows must be a positive multiple of 32"),
        ((32, 6, 4), {}, "SF_K=6 scale factors per row must be a positive multiple of"),
        ((32, 8, 1), {"sf_reuse": 0}, "sf_reuse must be an integer >= 1, got 0"),
        ((32, 8, 1), {"pipe_depth": 0}, "pipe_depth must be an integer >= 1, got 0"),
    ],
)
def test_scale_factor_arguments_are_checked(args, kwargs, message):
    with pytest.raises(LayoutError) as exc:
        sf_tmem_layout(*args, **kwargs)
    assert str(exc.value).startswith(message)


def test_the_fitting_mode_reads_the_row_of_a_staged_tile():
    # (2, 8, 48) bf16: 96-byte rows fit 32B (reading the 8 rows as the row would say none)
    with pytest.raises(SwizzleError) as exc:
        check_mma_tile((2, 8, 48), "bfloat16", SwizzleMode.SWIZZLE_128B_ATOM)
    assert "use SWIZZLE_32B_ATOM or make shape[-1] a multiple of 64" in str(exc.value)


@pytest.mark.parametrize("k", [0, -64])
def test_a_staged_tile_without_row_elements_suggests_no_swizzle(k):
    with pytest.raises(SwizzleError) as exc:
        check_mma_tile((2, 8, k), "bfloat16", SwizzleMode.SWIZZLE_128B_ATOM)
    assert str(exc.value).endswith("use SWIZZLE_NONE or make shape[-1] a multiple of 64")


def test_datapath_rows_of_one_name_the_rule():
    with pytest.raises(LayoutError, match="holds 128 rows per CTA, got rows=1"):
        tmem_datapath_layout("D", 1, 64)


def test_scale_factor_rows_below_one_and_below_32():
    with pytest.raises(LayoutError) as exc:
        sf_tmem_layout(0, 8, 1)
    assert str(exc.value).startswith("scale-factor rows must be an integer >= 1, got 0")
    with pytest.raises(LayoutError, match="scale-factor rows must be a positive multiple of 32"):
        sf_tmem_layout(1, 8, 1)


def test_one_scale_factor_stage_is_allowed():
    assert sf_tmem_layout(32, 8, 1, pipe_depth=1).shape == (1, 32, 8)


def test_scale_factors_of_1024_rows():
    # M = 32 row groups: r = 1023 is group 31 -> TCol 4 * 31 = 124, lane 1023 % 32 = 31
    assert _sf(sf_tmem_layout(1024, 4, 1), 1023, 0) == (31, 124)
