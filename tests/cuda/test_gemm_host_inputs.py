"""The GEMM's host-side helpers refuse what they cannot use with GemmShapeError, before any
work: ``split_count``, ``a_rows_for`` and ``shapes.staging`` (the padded workspace plan).

Each good-input answer below is worked by hand from the functions' docstrings:
- ``a_rows_for(16) == 16`` and ``a_rows_for(65) == 128`` (the fewest of 16/32/64 rows that
  hold M, 128 beyond 64);
- ``staging(5, 5, 5, "bfloat16", 128)``: K = 5 pads to the 8-element row pitch, then to one K
  tile of 64; N = 5 pads to 8, then to the tile width 128; A's box is 128 rows, C's 64.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tilemem.errors import GemmShapeError
from tilemem.gemm import shapes
from tilemem.gemm.hopper import a_rows_for, split_count

GOOD = {"m": 128, "n": 128, "k": 4096, "tile_n": 128, "sms": 132, "dtype": "bfloat16"}


@pytest.mark.parametrize(
    "key, value, words",
    [
        ("m", 128.0, "split_count's m must be an integer >= 1, got 128.0"),
        ("m", True, "split_count's m must be an integer >= 1, got True"),
        ("n", 0, "split_count's n must be an integer >= 1, got 0"),
        ("k", -4096, "split_count's k must be an integer >= 1, got -4096"),
        ("sms", 0, "split_count's sms (the device's SM count) must be an integer >= 1, got 0"),
        ("tile_n", 100, "one of"),
        ("dtype", "int8", "the GEMM takes A and B as one of"),
        ("dtype", "nonsense", "got 'nonsense'"),
        ("rows", 48, "split_count's rows (of a tile) is one of (128, 64, 32, 16, 8), got 48"),
        ("rows", 64.0, "split_count's rows (of a tile) is one of (128, 64, 32, 16, 8), got 64.0"),
    ],
)
def test_split_count_refuses_bad_inputs(key, value, words):
    with pytest.raises(GemmShapeError, match=words.replace("(", r"\(").replace(")", r"\)")):
        split_count(**{**GOOD, key: value})


def test_split_count_of_good_inputs_is_unchanged():
    # 1 x 1 tiles, 64 K tiles: s = 4 is the largest of 2..MAX_SPLITS dividing 64 with >= 16
    # steps a range whose partials 8 * 4 * 128 * 128 = 524,288 B stay within a quarter of the
    # operands' (128 + 128) * 4096 * 2 = 2,097,152 B (exactly a quarter)
    assert split_count(**GOOD) == 4


def test_split_count_counts_the_tiles_of_the_rows_given():
    # 200 x 1032 x 16384, 128 wide: 256 K tiles; partials 8 s 200 1032 = 1,651,200 s B within
    # a quarter of (200 + 1032) * 16384 * 2 = 40,370,176 B gives s <= 6. 128-row tiles:
    # 2 x 9 = 18, s <= 7 in one wave: 4 (the largest <= 6 dividing 256). 64-row tiles:
    # 4 x 9 = 36, s <= 3: 2
    assert split_count(200, 1032, 16384, 128, 132) == 4
    assert split_count(200, 1032, 16384, 128, 132, rows=64) == 2


@pytest.mark.parametrize("m", [0, -1, 17.5, True, "16", None])
def test_a_rows_for_refuses_what_is_no_row_count(m):
    with pytest.raises(GemmShapeError, match="a_rows_for's m"):
        a_rows_for(m)


def test_a_rows_for_picks_the_fewest_rows():
    rows = [a_rows_for(m) for m in (1, 16, 17, 33, 64, 65, 10_000)]
    assert rows == [16, 16, 32, 64, 64, 128, 128]


@pytest.mark.parametrize(
    "args, words",
    [
        ((5, 5, 5, "foo", 128), "the GEMM takes A and B as one of"),
        ((5, 5, 5, "bfloat16", 100), "got 100"),
        ((5, 5, 5, "bfloat16", 128, 7), "rows of A .*got 7"),
        ((5, 5, 5, "bfloat16", 128, 64.0), "got 64.0"),
        ((0, 5, 5, "bfloat16", 128), "M = 0"),
    ],
)
def test_staging_refuses_bad_inputs(args, words):
    with pytest.raises(GemmShapeError, match=words):
        shapes.staging(*args)


def test_staging_of_a_tiny_product(monkeypatch):
    # boxes may reach past the matrices: only the 10-byte rows of K = 5 and N = 5 bf16 pad,
    # to 8 elements (16 bytes); M stays 5
    st = shapes.staging(5, 5, 5, "bfloat16", 128)
    assert (st.ma, st.mc, st.np_, st.kp, st.elem) == (5, 5, 8, 8, 2)
    # without that, every matrix also pads to one box: A's 128 rows, C's 64, the 128-wide
    # tile, one 64-element K tile
    monkeypatch.setattr(shapes, "BOXES_PAST_EDGES", False)
    st = shapes.staging(5, 5, 5, "bfloat16", 128)
    assert (st.ma, st.mc, st.np_, st.kp, st.elem) == (128, 64, 128, 64, 2)


def _benchmark_module(monkeypatch):
    """benchmarks/gemm.py loaded with a stand-in torch (its names only: the module reads
    dtypes at import), so its host-side helpers run on a machine without torch or a GPU."""
    import importlib.util
    import pathlib
    import sys

    torch = SimpleNamespace(bfloat16="bf16", float8_e4m3fn="e4m3", Tensor=object)
    monkeypatch.setitem(sys.modules, "torch", torch)
    path = pathlib.Path(__file__).parents[2] / "benchmarks" / "gemm.py"
    spec = importlib.util.spec_from_file_location("gemm_benchmark", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_benchmark_variants_parse_widths_clusters_split_and_unpromoted(monkeypatch):
    bench = _benchmark_module(monkeypatch)
    assert bench.parse_variants("256x2,64x1k,unpromoted,192s,") == [
        (256, 2, False),
        (64, 1, True),
        "unpromoted",
        (192, "stream-k"),
    ]
    assert bench.parse_variants("") == []
    with pytest.raises(ValueError):
        bench.parse_variants("fast")
    with pytest.raises(ValueError, match="0, 64, 128 or 256, got 32"):
        bench.parse_variants("l2=32")


def test_the_l2_variants_are_the_policy_with_another_promotion(monkeypatch):
    bench = _benchmark_module(monkeypatch)
    configs = bench.parse_variants("l2=128,l2=256")
    assert configs == [(128, "l2"), (256, "l2")]
    policy, l2_128, l2_256 = bench.make_variants(configs, "float8_e4m3fn", 8, 0)
    assert [bench.name(g) for g in (policy, l2_128, l2_256)] == ["tilemem", "l2=128", "l2=256"]
    assert [g.l2_promotion for g in (policy, l2_128, l2_256)] == [0, 128, 256]
    assert l2_256.promote and l2_256.promote_every == policy.promote_every


def test_the_plain_variant_is_the_policy_launched_without_programmatic_serialization(
    monkeypatch,
):
    bench = _benchmark_module(monkeypatch)
    assert bench.parse_variants("plain,256x1") == ["plain", (256, 1, False)]
    for dtype in ("bfloat16", "float8_e4m3fn"):  # both types, unlike the fp8 policy words
        policy, plain = bench.make_variants(["plain"], dtype, 8, 0)
        assert [bench.name(policy), bench.name(plain)] == ["tilemem", "plain"]
        assert policy.programmatic is None and plain.programmatic is False
        assert (plain.dtype, plain.promote, plain.promote_every) == (
            policy.dtype,
            policy.promote,
            policy.promote_every,
        )


def test_finer_rows_replace_a_short_two_way_split():
    from tilemem.gemm.hopper import FINER_M_MAX_STEPS, finer_rows

    assert FINER_M_MAX_STEPS == 48
    # K = 4096: 64 bf16 K tiles (32 a range) or 32 fp8 (16): half of a_rows_for's rows
    assert [finer_rows(m, 4096, 2) for m in (9, 16, 33, 64, 65, 128)] == [8, 8, 32, 32, 64, 64]
    assert finer_rows(16, 4096, 2, "float8_e4m3fn") == 8
    # 95 K tiles (47 a range) still; 96 (48) not
    assert finer_rows(64, 95 * 64, 2) == 32 and finer_rows(64, 96 * 64, 2) is None
    assert finer_rows(64, 95 * 128, 2, "float8_e4m3fn") == 32  # fp8: 128 elements a K tile
    assert finer_rows(64, 96 * 128, 2, "float8_e4m3fn") is None
    # M within one tile of half the rows (M <= 8 takes 16-row tiles: 8 holds it), no split,
    # other splits, and M > 128 (whose 128-row tiles have other rules): unchanged
    assert [finer_rows(m, 4096, 2) for m in (1, 8)] == [None, None]
    assert finer_rows(64, 4096, 1) is None and finer_rows(64, 4096, 4) is None
    assert finer_rows(129, 4096, 2) == 64  # 3 tiles of 64 where 2 of 128 were split


def test_64_row_tiles_replace_a_two_way_split_of_any_length():
    # M > 64: the finer tiles have 64 rows and replace the split whatever K (measured faster on
    # the six such shapes of the benchmark with 112 or 224 K tiles a range); M <= 64 keeps
    # the split over long ranges (8- and 32-row tiles were as fast or slower)
    from tilemem.gemm.hopper import AutoGemm, finer_rows

    for m in (65, 128, 256):
        assert finer_rows(m, 14336, 2) == 64 and finer_rows(m, 96 * 64, 2) == 64
        assert finer_rows(m, 28672, 2, "float8_e4m3fn") == 64
    assert finer_rows(64, 14336, 2) is None and finer_rows(16, 14336, 2) is None
    assert finer_rows(256, 14336, 1) is None and finer_rows(256, 14336, 4) is None
    # in AutoGemm before stream-K: 256 x 4096 x 14336 bf16 (the tiled policy's 128 x 128 in
    # 2 K ranges, which stream-K at 192 replaced) runs 64 x 128 tiles, 4 x 32 = 128 CTAs
    auto = AutoGemm()
    auto.sms = 132
    assert auto.config(256, 4096, 14336) == (128, 1, 1, 64, False)
    assert auto.config(256, 8192, 28672) == (256, 1, 1, 64, False)
    assert auto.config(64, 3072, 14336) == (64, 1, 2, 64, True)  # the split, as stream-K
    fp8 = AutoGemm(dtype="float8_e4m3fn")
    fp8.sms = 132
    assert fp8.config(128, 8192, 28672) == (128, 1, 1, 64, False)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ((0, 4096, 2), "finer_rows's m"),
        ((16.0, 4096, 2), "finer_rows's m"),
        ((16, True, 2), "finer_rows's k"),
        ((16, 4096, 0), "finer_rows's splits"),
        ((16, 4096, 2, "int8"), "the GEMM takes A and B as one of"),
    ],
)
def test_finer_rows_refuses_what_is_no_shape(args, words):
    from tilemem.gemm.hopper import finer_rows

    with pytest.raises(GemmShapeError, match=words):
        finer_rows(*args)


def test_the_160_wide_tile_runs_tiled_where_it_fills_the_sms():
    from tilemem.gemm.hopper import (
        FP8_ALONE_WIDTHS,
        PROMOTED_TILE_NS,
        STREAM_K_NEVER_REPLACES,
        launch_config,
        policy,
        stream_k_policy,
    )

    assert STREAM_K_NEVER_REPLACES == (160,) and 160 in FP8_ALONE_WIDTHS
    # 256 x 10240 on 132 SMs, rounds x tile_n x WIDTH_COST: 256: 2 x 40 = 80 tiles, one
    # round, 256; 240: 2 x 43 = 86, 242.4; 192: 2 x 54 = 108, 197.76; 160: 2 x 64 = 128,
    # 160 x 1.215 = 194.4; 128: 160 tiles, two rounds, 358.4. 160 wins, alone (one round)
    assert launch_config(256, 10240, 132) == (160, 1)
    assert policy(256, 10240, 8192, 132) == (160, 1, 1)
    assert stream_k_policy(256, 10240, 8192, 132) is None  # its model would take 192
    # 512 x 10240: 256 tiles of 160 in two rounds: pairs in bf16, alone in fp8
    assert policy(512, 10240, 8192, 132) == (160, 2, 1)
    fp8 = ("float8_e4m3fn", PROMOTED_TILE_NS)
    assert policy(512, 10240, 8192, 132, *fp8) == (160, 1, 1)
    assert stream_k_policy(512, 10240, 8192, 132, *fp8) is None
    # other tiled widths still give way to stream-K where its model says so
    assert stream_k_policy(256, 4096, 14336, 132) == 192


def test_the_224_wide_tile_runs_alone_and_stays_where_it_fills_its_rounds():
    from tilemem.gemm.hopper import (
        ALONE_WIDTHS,
        STREAM_K_KEEP_FILL,
        STREAM_K_KEEPS_FILLED,
        launch_config,
        policy,
        stream_k_policy,
    )

    assert ALONE_WIDTHS == (224,) and STREAM_K_KEEPS_FILLED == (224,)
    assert STREAM_K_KEEP_FILL == 0.95
    # 256 x 28672: 2 x 128 = 256 tiles of 224; launch_config pairs them (128 units over 66
    # pairs, 2 rounds: 2 x 224 x 1.03 = 461.4 against 2 x 256 = 512 for 256-wide pairs), the
    # policy runs them alone: 256 / (2 x 132) = 0.970 of two rounds, so stream-K (whose model
    # costs 112 units x 64 K tiles / 66 groups = 108.6 steps x 256 = 27,803, below 0.95 of the
    # tiles' 2 x 64 x 224 x 1.03 = 29,532) does not replace them
    assert launch_config(256, 28672, 132) == (224, 2)
    assert policy(256, 28672, 4096, 132) == (224, 1, 1)
    assert stream_k_policy(256, 28672, 4096, 132) is None
    # one SM fewer: 256 / (2 x 131) = 0.977, kept; 134 SMs: 256 tiles in 2 rounds of 134,
    # 0.955, kept; 135: 0.948, below the fill: stream-K's model decides (and replaces them)
    assert stream_k_policy(256, 28672, 4096, 131) is None
    assert stream_k_policy(256, 28672, 4096, 134) is None
    assert policy(256, 28672, 4096, 135) == (224, 1, 1)
    assert stream_k_policy(256, 28672, 4096, 135) == 256
    # 20 SMs, 256 x 4256: 2 x 19 = 38 tiles of 224 in two rounds of 20, 0.95 exactly: kept;
    # 21 SMs: 38 / 42 = 0.905, stream-K
    assert policy(256, 4256, 4096, 20) == (224, 1, 1)
    assert stream_k_policy(256, 4256, 4096, 20) is None
    assert stream_k_policy(256, 4256, 4096, 21) == 256
    # one M tile (16 x 8192 x 14336): never stream-K, though its model alone would take 192
    # (8192 / 192 = 43 units of 224 K tiles over 132 groups, 73 steps a CTA)
    assert stream_k_policy(16, 8192, 14336, 132) is None
    # 1024 x 10240: 8 x 46 = 368 tiles of 224 in three rounds of 132, 0.929: stream-K
    assert policy(1024, 10240, 8192, 132) == (224, 1, 1)
    assert stream_k_policy(1024, 10240, 8192, 132) == 256
