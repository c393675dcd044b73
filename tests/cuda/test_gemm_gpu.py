"""The persistent Hopper GEMM on a GPU (marker ``gpu``): numbers against an fp32 product."""

import pytest

from tilemem.errors import GemmShapeError

pytestmark = pytest.mark.gpu


# 240 / 4 = 60 and 176 / 4 = 44 rows of B are no whole swizzle atoms: 240 and 176 run alone
# or in pairs only
CONFIGS = [
    (t, cm)
    for t in (256, 240, 224, 192, 176, 160, 128, 96, 64, 32)
    for cm in (1, 2, 4)
    if (t, cm) not in ((240, 4), (176, 4))
]


@pytest.fixture(scope="module", params=CONFIGS, ids=[f"n{t}-cluster{c}x1" for t, c in CONFIGS])
def gemm(torch, request):
    from tilemem.gemm.hopper import HopperGemm

    tile_n, cluster_m = request.param
    return HopperGemm(group_m=3, cluster_m=cluster_m, tile_n=tile_n)


@pytest.mark.parametrize(
    ("m", "n", "k", "ctas"),
    [
        (256, 512, 640, None),  # whole tiles, one per CTA; the 4-stage ring wraps
        (1000, 1032, 520, 3),  # ragged in M, N and K; 40 tiles over 3 CTAs, 9 K steps each
        (1100, 1032, 520, 4),  # 9 M tiles: with clusters the last unit has tiles outside M
        # 1000 = 5 x 192 + 40 = 4 x 240 + 40 = 4 x 224 + 104 = 5 x 176 + 120: 128 x 192,
        # 128 x 240 and 128 x 176 CTAs (odd counts of staged groups: 3 slices, 5, 3 groups of
        # 4 + 4 + 3 slices) alternate staging halves across their tiles, 128 x 224 (4 groups of
        # 2 + 2 + 2 + 1) within each
        (520, 1000, 136, 2),
    ],
)
def test_persistent_gemm_matches_fp32_reference(torch, gemm, m, n, k, ctas):
    gen = torch.Generator(device="cuda").manual_seed(m + n + k)
    a = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda", generator=gen).to(torch.bfloat16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    if ctas is not None and ctas < gemm.cluster_m:
        # a cap below one cluster is refused (the grid would still take a whole cluster);
        # the smallest grid of this cluster shape runs instead
        with pytest.raises(GemmShapeError, match=f"ctas={ctas} is below one cluster"):
            gemm.prepare(a, b, c, ctas=ctas)
        ctas = gemm.cluster_m
    gemm.prepare(a, b, c, ctas=ctas)()
    torch.cuda.synchronize()
    ref = a.float() @ b.float().T
    err = float(torch.linalg.norm(c.float() - ref) / torch.linalg.norm(ref))
    # bf16 output rounding alone gives about 2e-3 (8 mantissa bits); a wrong tile gives ~1
    assert bool(torch.isfinite(c).all()) and err < 1e-2, err


def test_a_transposed_view_is_refused_not_misread(torch, gemm):
    from tilemem.gemm.hopper import GemmShapeError

    a = torch.zeros(256, 512, device="cuda", dtype=torch.bfloat16)
    w = torch.zeros(512, 256, device="cuda", dtype=torch.bfloat16)
    c = torch.zeros(256, 256, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(GemmShapeError, match="B must be dense row-major"):
        gemm(a, w.T, c)  # B = (W^T) with K = 512 along W's rows: strides (1, 256)


def test_fp8_inputs_give_the_fp32_product(torch):
    from tilemem.gemm.hopper import HopperGemm

    m, n, k = 1000, 1040, 528  # ragged; 5 K tiles of 128 fp8, the last one partial
    gen = torch.Generator(device="cuda").manual_seed(17)
    a = torch.randn(m, k, device="cuda", generator=gen).to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device="cuda", generator=gen).to(torch.float8_e4m3fn)
    ref = a.float() @ b.float().T
    widths = (256, 240, 224, 192, 176)
    for cluster_m, tile_n in ((c, w) for w in widths for c in (1, 2)):
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        HopperGemm(group_m=3, cluster_m=cluster_m, dtype="float8_e4m3fn", tile_n=tile_n)(a, b, c)
        torch.cuda.synchronize()
        err = float(torch.linalg.norm(c.float() - ref) / torch.linalg.norm(ref))
        assert bool(torch.isfinite(c).all()) and err < 1e-2, (cluster_m, tile_n, err)


def _policy_product(torch, m, n, k, seed):
    """AutoGemm's product of random bf16 operands (C NaN-poisoned) checked against the fp32
    one; the AutoGemm, whose ``gemms`` say which kernels it built."""
    from tilemem.gemm.hopper import AutoGemm

    gen = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda", generator=gen).to(torch.bfloat16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    gemm = AutoGemm(group_m=8)
    gemm(a, b, c)
    torch.cuda.synchronize()
    ref = a.float() @ b.float().T
    err = float(torch.linalg.norm(c.float() - ref) / torch.linalg.norm(ref))
    assert bool(torch.isfinite(c).all()) and err < 1e-2, err
    return gemm


def test_shape_policy_picks_and_runs_the_240_wide_tile_on_the_ragged_shape(torch):
    gemm = _policy_product(torch, 4999, 3000, 2040, seed=5)  # the benchmark's ragged shape
    assert [(g.tile_n, g.cluster_m) for g in gemm.gemms.values()] == [(240, 2)]


@pytest.mark.parametrize(("m", "k"), [(200, 520), (16, 264)])
def test_shape_policy_runs_224_wide_tiles_alone_on_the_mlp_width(torch, m, k):
    # N = 28672 = 128 x 224 (Llama-3 8B's MLP): 224-wide tiles alone, 128 and 16 rows; K
    # ragged (9 and 3 K tiles, the last partial)
    gemm = _policy_product(torch, m, 28672, k, seed=m + k)
    rows = 128 if m > 64 else 16
    assert [(g.tile_n, g.cluster_m, g.a_rows) for g in gemm.gemms.values()] == [(224, 1, rows)]


@pytest.mark.parametrize(("m", "k", "rows"), [(64, 1040, 64), (10, 520, 16)])
def test_shape_policy_runs_bf16_products_of_one_small_m_tile_on_half_the_sms(torch, m, k, rows):
    # beside_width: 4096 = 64 tiles of 64 columns, all of M and of K each (K ragged: 17 and 9
    # K tiles, the last partial; M = 10 in a 16-row tile), launched programmatically
    gemm = _policy_product(torch, m, 4096, k, seed=m + k)
    (built,) = gemm.gemms.values()
    assert (built.tile_n, built.cluster_m, built.a_rows) == (64, 1, rows)
    assert built.launches_programmatically(64, 1, k // 64, tiled=True)


def test_shape_policy_runs_176_wide_pairs_where_they_replace_224_alone(torch):
    # 512 x 28672 (pairs_176): 4 x 163 tiles of 128 x 176 in 2x1 pairs, the last N tile 160
    # wide (28672 = 162 x 176 + 160); K = 264: 5 K tiles, the last partial
    gemm = _policy_product(torch, 512, 28672, 264, seed=7)
    assert [(g.tile_n, g.cluster_m, g.a_rows) for g in gemm.gemms.values()] == [(176, 2, 128)]


@pytest.mark.parametrize(
    ("m", "n", "k", "rows"),
    [
        (64, 4096, 1040, 64),  # 128 tiles of 64 x 32, 9 K tiles of 128 (the last partial)
        (40, 4224, 264, 64),  # 132 tiles: one round exactly
        (16, 1000, 520, 16),  # 1000 = 31 x 32 + 8: the last tile past N
        (3, 200, 136, 16),  # A staged (K = 136 fp8: 136-byte rows are no TMA pitch)
    ],
)
def test_fp8_products_of_one_small_m_tile_run_32_wide_tiles(torch, m, n, k, rows):
    # narrow_width: fp8, M <= 64 and ceil(N / 32) <= 132 SMs: 32-wide tiles of a_rows_for(M)
    # rows (16 at least), promoted every two K tiles, all of K each
    from tilemem.gemm.hopper import AutoGemm

    gen = torch.Generator(device="cuda").manual_seed(m + n + k)
    a = torch.randn(m, k, device="cuda", generator=gen).to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device="cuda", generator=gen).to(torch.float8_e4m3fn)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    gemm = AutoGemm(dtype="float8_e4m3fn")
    gemm(a, b, c)
    torch.cuda.synchronize()
    ref = a.float() @ b.float().T
    err = float(torch.linalg.norm(c.float() - ref) / torch.linalg.norm(ref))
    assert bool(torch.isfinite(c).all()) and err < 1e-2, err
    built = [(g.tile_n, g.cluster_m, g.a_rows, g.promote) for g in gemm.gemms.values()]
    assert built == [(32, 1, rows, True)]


@pytest.mark.parametrize(
    ("m", "n", "k"),
    [
        (1, 9, 7),  # every rule broken: A, B and C all staged
        (3, 40, 36),
        (16, 4096, 4096),  # an inference step: A and C staged, B read in place
        (64, 1000, 520),
        (65, 1032, 130),
        (300, 9, 1000),  # N staged only
        (1000, 1032, 71),  # K staged only: A and B copied, C written in place
    ],
)
def test_any_shape_runs_through_staged_operands(torch, m, n, k):
    from tilemem.gemm.hopper import AutoGemm

    gen = torch.Generator(device="cuda").manual_seed(m + n + k)
    for dtype in (torch.bfloat16, torch.float8_e4m3fn):
        a = torch.randn(m, k, device="cuda", generator=gen).to(dtype)
        b = torch.randn(n, k, device="cuda", generator=gen).to(dtype)
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        gemm = AutoGemm(group_m=8, dtype=str(dtype).removeprefix("torch."))
        stream = torch.cuda.current_stream().cuda_stream
        gemm.prepare(a, b, c)(stream)
        torch.cuda.synchronize()
        ref = a.float() @ b.float().T
        err = float(torch.linalg.norm(c.float() - ref) / torch.linalg.norm(ref))
        assert bool(torch.isfinite(c).all()) and err < 1e-2, (dtype, err)


@pytest.mark.parametrize(
    ("m", "n", "k", "splits"),
    [
        (16, 4096, 4096, 4),  # an inference step: 32 tiles x 4 ranges
        (3, 40, 520, 3),  # staged A and B; C written by the reduction at N = 40
        (300, 1000, 1024, 8),  # 3 x 8 tiles x 8 ranges > 132 SMs: units wrap around
        (130, 9, 640, 5),
    ],
)
def test_split_k_gives_the_fp32_product(torch, m, n, k, splits):
    from tilemem.gemm.hopper import HopperGemm

    gen = torch.Generator(device="cuda").manual_seed(m + n + k + splits)
    for dtype, name in ((torch.bfloat16, "bfloat16"), (torch.float8_e4m3fn, "float8_e4m3fn")):
        a = torch.randn(m, k, device="cuda", generator=gen).to(dtype)
        b = torch.randn(n, k, device="cuda", generator=gen).to(dtype)
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        gemm = HopperGemm(group_m=8, cluster_m=1, dtype=name, tile_n=128, split_k=True)
        tiles_k = -(-k // (64 if name == "bfloat16" else 128))
        if tiles_k % splits:
            with pytest.raises(GemmShapeError, match="dividing the"):
                gemm.prepare(a, b, c, splits=splits)
            continue
        gemm.prepare(a, b, c, splits=splits)()
        torch.cuda.synchronize()
        ref = a.float() @ b.float().T
        err = float(torch.linalg.norm(c.float() - ref) / torch.linalg.norm(ref))
        assert bool(torch.isfinite(c).all()) and err < 1e-2, (name, err)


def test_auto_gemm_runs_a_decode_step_on_half_the_sms(torch):
    from tilemem.gemm.hopper import AutoGemm

    m, n, k = 16, 4096, 4096
    gen = torch.Generator(device="cuda").manual_seed(3)
    a = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda", generator=gen).to(torch.bfloat16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    gemm = AutoGemm()
    gemm(a, b, c)
    torch.cuda.synchronize()
    ref = a.float() @ b.float().T
    err = float(torch.linalg.norm(c.float() - ref) / torch.linalg.norm(ref))
    assert bool(torch.isfinite(c).all()) and err < 1e-2, err
    # beside_width: 64 tiles of 16 x 64, all of M and K each, on 64 of the 132 SMs, launched
    # programmatically (before it, 2 tiles of 8 rows x 64 N tiles = 128 CTAs: finer_rows)
    assert gemm.config(m, n, k) == (64, 1, 1, 16, False)
    assert list(gemm.gemms) == [(64, 1, False, 16, False)]  # the one kernel it built and ran
    assert gemm.gemms[(64, 1, False, 16, False)].launches_programmatically(64, 1, 64, tiled=True)


def test_fp8_promotion_keeps_the_error_of_a_long_k_at_bf16_rounding(torch):
    # K = 16384: without promotion the error was 3.54e-3 on the H200 (docs/PERFORMANCE.md),
    # cuBLASLt's 1.67e-3, which is C's bf16 rounding alone (2^-9 relative, about 1.6e-3 in
    # the Frobenius norm of a random product); promoted sums must stay within 10% of it
    from tilemem.gemm.hopper import AutoGemm

    m, n, k = 512, 1024, 16384
    gen = torch.Generator(device="cuda").manual_seed(16384)
    a = torch.randn(m, k, device="cuda", generator=gen).to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device="cuda", generator=gen).to(torch.float8_e4m3fn)
    ref = a.float() @ b.float().T
    errors = []
    for promote in (True, False):
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        AutoGemm(dtype="float8_e4m3fn", promote=promote)(a, b, c)
        torch.cuda.synchronize()
        errors.append(float(torch.linalg.norm(c.float() - ref) / torch.linalg.norm(ref)))
    assert errors[0] < 1.85e-3 and errors[0] < errors[1], errors


@pytest.mark.parametrize(
    ("m", "n", "k", "dtype"),
    [
        (16, 4096, 4096, "bfloat16"),  # A's 16-row box exactly, C's 64-row box over 16 rows
        (5, 200, 32, "bfloat16"),  # every box past its matrix: M, N < tile, K < one K tile
        (100, 1000, 528, "float8_e4m3fn"),  # 128 rows of A over 100 (528-byte rows: TMA pitch)
        (1, 4096, 4096, "float8_e4m3fn"),
    ],
)
def test_boxes_past_the_edges_run_without_staging(torch, m, n, k, dtype):
    # cuTensorMapEncodeTiled takes boxes larger than the matrix (zero-filled loads, clipped
    # stores), so these products launch on the operands themselves: no workspace, no copy
    from tilemem.gemm import shapes
    from tilemem.gemm.hopper import AutoGemm

    assert shapes.BOXES_PAST_EDGES
    gen = torch.Generator(device="cuda").manual_seed(m + n + k)
    kind = getattr(torch, dtype)
    a = torch.randn(m, k, device="cuda", generator=gen).to(kind)
    b = torch.randn(n, k, device="cuda", generator=gen).to(kind)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    launch = AutoGemm(dtype=dtype).prepare(a, b, c)
    assert not any(op in getattr(launch, "workspace", {}) for op in "ABC")
    launch()
    torch.cuda.synchronize()
    ref = a.float() @ b.float().T
    err = float(torch.linalg.norm(c.float() - ref) / torch.linalg.norm(ref))
    assert bool(torch.isfinite(c).all()) and err < 1e-2, err


@pytest.mark.parametrize("a_rows", [16, 32, 64])
def test_small_m_kernels_load_only_the_rows_of_a_they_need(torch, a_rows):
    from tilemem.gemm.hopper import HopperGemm

    gen = torch.Generator(device="cuda").manual_seed(a_rows)
    for m in sorted({1, a_rows // 2 + 1, a_rows}):
        for split_k in (False, True):
            a = torch.randn(m, 1000, device="cuda", generator=gen).to(torch.bfloat16)
            b = torch.randn(1032, 1000, device="cuda", generator=gen).to(torch.bfloat16)
            c = torch.full((m, 1032), float("nan"), device="cuda", dtype=torch.bfloat16)
            gemm = HopperGemm(cluster_m=1, tile_n=64, split_k=split_k, a_rows=a_rows)
            gemm(a, b, c)
            torch.cuda.synchronize()
            ref = a.float() @ b.float().T
            err = float(torch.linalg.norm(c.float() - ref) / torch.linalg.norm(ref))
            assert bool(torch.isfinite(c).all()) and err < 1e-2, (m, split_k, err)


@pytest.mark.parametrize(
    ("m", "kwargs"),
    [
        (200, {"tile_n": 128}),  # 4 M tiles of 64 rows, the last 8 rows
        (1000, {"tile_n": 192}),  # 16 M tiles, ragged N (1032 = 5 x 192 + 72) and K
        (330, {"tile_n": 96, "cluster_m": 2}),  # 6 M tiles in pairs sharing B
        (200, {"tile_n": 128, "split_k": True}),  # 4 M tiles x 9 N tiles x 2 K ranges
        (200, {"tile_n": 256, "stream_k": True}),  # groups of 4 M tiles
        (200, {"tile_n": 64, "dtype": "float8_e4m3fn", "promote": True, "promote_every": 2}),
    ],
)
def test_64_row_tiles_give_the_fp32_product_for_any_m(torch, m, kwargs):
    from tilemem.gemm.hopper import HopperGemm

    gemm = HopperGemm(**{"cluster_m": 1, "a_rows": 64, **kwargs})
    kind = torch.float8_e4m3fn if gemm.dtype == "float8_e4m3fn" else torch.bfloat16
    gen = torch.Generator(device="cuda").manual_seed(m)
    a = torch.randn(m, 1024, device="cuda", generator=gen).to(kind)
    b = torch.randn(1032, 1024, device="cuda", generator=gen).to(kind)
    ref = a.float() @ b.float().T
    c = torch.full((m, 1032), float("nan"), device="cuda", dtype=torch.bfloat16)
    gemm(a, b, c)
    torch.cuda.synchronize()
    err = float(torch.linalg.norm(c.float() - ref) / torch.linalg.norm(ref))
    assert bool(torch.isfinite(c).all()) and err < 1e-2, err


@pytest.mark.parametrize(
    ("m", "n", "kwargs"),
    [
        (200, 1032, {"tile_n": 96}),  # 2 M tiles x 11 N tiles: the last pair's second past N
        (1000, 1000, {"tile_n": 192, "cluster_n": 4}),  # ragged M, N and K in fours
        (130, 1032, {"tile_n": 128, "a_rows": 64}),  # 64-row tiles, A shares of 32 rows
        (20, 1032, {"tile_n": 64, "a_rows": 32}),  # M <= 32: A shares of 16 rows
        (200, 1032, {"tile_n": 128, "dtype": "float8_e4m3fn", "promote": True}),
    ],
)
def test_clusters_along_n_give_the_fp32_product(torch, m, n, kwargs):
    from tilemem.gemm.hopper import HopperGemm

    gemm = HopperGemm(**{"cluster_m": 1, "cluster_n": 2, **kwargs})
    kind = torch.float8_e4m3fn if gemm.dtype == "float8_e4m3fn" else torch.bfloat16
    gen = torch.Generator(device="cuda").manual_seed(m + n)
    a = torch.randn(m, 1000, device="cuda", generator=gen).to(kind)
    b = torch.randn(n, 1000, device="cuda", generator=gen).to(kind)
    ref = a.float() @ b.float().T
    for ctas in (None, 2 * gemm.size):  # one unit a cluster, or many units over one cluster
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        gemm.prepare(a, b, c, ctas=ctas)()
        torch.cuda.synchronize()
        err = float(torch.linalg.norm(c.float() - ref) / torch.linalg.norm(ref))
        assert bool(torch.isfinite(c).all()) and err < 1e-2, (ctas, err)


FP8 = {"dtype": "float8_e4m3fn", "promote": True, "promote_every": 2}


@pytest.mark.parametrize(
    ("m", "kwargs"),
    [
        (80, {"a_rows": 32, "cluster_m": 2}),  # 3 M tiles of 32 in pairs sharing B
        (16, {"a_rows": 8, "cluster_m": 2}),  # M = 16 as two 8-row tiles of a pair
        (72, {"a_rows": 16, "cluster_m": 4, "tile_n": 128}),  # 5 tiles of 16 in fours
        (70, {"a_rows": 16}),  # 5 tiles of 16, CTAs alone
        (70, {"a_rows": 16, "split_k": True}),  # split-K: each range stores its tile's rows
        (40, {"a_rows": 16, "stream_k": True}),  # stream-K groups of 3 M tiles of 16
        (200, {"a_rows": 32, "cluster_m": 2, "stream_k": True}),  # stream-K pairs of 32 rows
        (100, {"a_rows": 32, "cluster_m": 2, **FP8}),  # promoted fp8 in pairs of 32 rows
        (24, {"a_rows": 8, "cluster_m": 2, "tile_n": 128, **FP8}),
    ],
)
def test_tiles_of_fewer_than_64_rows_give_the_fp32_product_for_any_m(torch, m, kwargs):
    from tilemem.gemm.hopper import HopperGemm

    gemm = HopperGemm(**{"tile_n": 64, "cluster_m": 1, **kwargs})
    kind = torch.float8_e4m3fn if gemm.dtype == "float8_e4m3fn" else torch.bfloat16
    gen = torch.Generator(device="cuda").manual_seed(m + gemm.a_rows)
    a = torch.randn(m, 1000, device="cuda", generator=gen).to(kind)
    b = torch.randn(1032, 1000, device="cuda", generator=gen).to(kind)
    ref = a.float() @ b.float().T
    for ctas in (None, 2 * gemm.size):  # every unit at once, or many a cluster in turn
        c = torch.full((m, 1032), float("nan"), device="cuda", dtype=torch.bfloat16)
        gemm.prepare(a, b, c, ctas=ctas)()
        torch.cuda.synchronize()
        err = float(torch.linalg.norm(c.float() - ref) / torch.linalg.norm(ref))
        assert bool(torch.isfinite(c).all()) and err < 1e-2, (ctas, err)


@pytest.mark.parametrize(
    ("m", "n", "k", "tile_n", "dtype", "ctas", "a_rows", "cluster_m"),
    [
        (256, 6144, 4096, 256, "bfloat16", None, 128, 1),  # 48 tiles of 64 K tiles, 132 CTAs
        (128, 4096, 4096, 128, "bfloat16", None, 128, 1),  # 32 tiles: about 4 CTAs a tile
        (1000, 1032, 520, 192, "bfloat16", 7, 128, 1),  # ragged M, N, K; 48 tiles over 7 CTAs
        (64, 104, 320, 128, "bfloat16", 3, 128, 1),  # one tile, 5 K tiles over 3 CTAs
        (130, 4000, 8192, 256, "bfloat16", None, 128, 1),  # 32 tiles of 128 K tiles
        (256, 4096, 4096, 192, "float8_e4m3fn", None, 128, 1),  # promoted fp8, 44 tiles
        (16, 4096, 4096, 64, "bfloat16", None, 16, 1),  # 16 rows of A a stage, 64 tiles
        (50, 4000, 4100, 64, "bfloat16", 128, 64, 1),  # 64 rows, ragged N and K, 63 tiles
        (64, 4096, 4096, 64, "float8_e4m3fn", None, 64, 1),  # promoted fp8, 64 rows
        # groups as clusters sharing B: pairs over 2 M tiles, pairs over 3 (the second unit's
        # rank 1 past M), fours of ragged shapes on 6 CTAs, promoted fp8 in pairs
        (256, 10240, 8192, 192, "bfloat16", None, 128, 2),
        (300, 4000, 4100, 96, "bfloat16", None, 128, 2),
        (1000, 1032, 520, 192, "bfloat16", 8, 128, 4),
        (512, 4096, 14336, 192, "float8_e4m3fn", None, 128, 2),
    ],
)
def test_stream_k_gives_the_fp32_product_launch_after_launch(
    torch, m, n, k, tile_n, dtype, ctas, a_rows, cluster_m
):
    """The stream-K kernel three times on the same workspace: each launch must leave the
    hand-over flags at zero for the next (a stale flag lets an owner read sums not yet
    written). C is NaN-poisoned before each launch."""
    from tilemem.gemm.hopper import HopperGemm

    fp8 = dtype == "float8_e4m3fn"
    gemm = HopperGemm(
        cluster_m=cluster_m,
        dtype=dtype,
        tile_n=tile_n,
        promote=fp8,
        stream_k=True,
        group_m=8,
        a_rows=a_rows,
    )
    gen = torch.Generator(device="cuda").manual_seed(m + n + k)
    a = torch.randn(m, k, device="cuda", generator=gen)
    b = torch.randn(n, k, device="cuda", generator=gen)
    kind = torch.float8_e4m3fn if fp8 else torch.bfloat16
    a, b = a.to(kind), b.to(kind)
    ref = a.float() @ b.float().T
    c = torch.empty((m, n), device="cuda", dtype=torch.bfloat16)
    launch = gemm.prepare(a, b, c, ctas=ctas)
    for _ in range(3):
        c.fill_(float("nan"))
        launch()
        torch.cuda.synchronize()
        err = float(torch.linalg.norm(c.float() - ref) / torch.linalg.norm(ref))
        assert bool(torch.isfinite(c).all()) and err < 1e-2, err
    import numpy as np

    from tilemem.cuda.device import check, driver

    flags = launch.workspace["flags"]
    host = np.ones(flags.shape, np.uint32)
    check(driver().cuMemcpyDtoH(host, flags.ptr, host.nbytes), "reading the flags", "test")
    assert not host.any(), host


@pytest.mark.parametrize(
    ("m", "k"),
    [  # what AutoGemm runs on the H200's 132 SMs (benchmarks/gemm.py's policy column)
        (1024, 1024),  # 128 x 64 tiles, one wave
        (256, 8192),  # stream-K, 192 wide: the next launch must find the flags back at zero
        (128, 4096),  # split-K run as stream-K, 2 K ranges a tile
        (64, 4096),  # small-M split-K: the GEMM, then the reduction kernel
    ],
)
def test_a_programmatic_launch_reads_what_the_previous_gemm_wrote(torch, m, k):
    """A chain of GEMMs launched with programmatic stream serialization,
    each reading as A the C the previous one wrote: each launch may start while the previous
    kernel runs (that kernel issued griddepcontrol.launch_dependents as its CTAs started), so
    a missing griddepcontrol.wait reads A before it is written. Captured in a CUDA graph too,
    where the stream's order becomes programmatic edges."""
    from tilemem.gemm.hopper import AutoGemm

    gen = torch.Generator(device="cuda").manual_seed(7)
    gemm = AutoGemm(programmatic=True)  # on any grid (the default picks by the grid)
    a = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
    # B maps each row of C back to K columns: C_i (m x k) = C_{i-1} @ B^T with B k x k
    b = (torch.randn(k, k, device="cuda", generator=gen) / k**0.5).to(torch.bfloat16)
    steps = 4
    cs = [
        torch.full((m, k), float("nan"), device="cuda", dtype=torch.bfloat16) for _ in range(steps)
    ]
    launches = [gemm.prepare(a if i == 0 else cs[i - 1], b, cs[i]) for i in range(steps)]
    stream = torch.cuda.current_stream().cuda_stream

    def chain() -> None:
        for launch in launches:
            launch(stream)

    def check() -> None:
        torch.cuda.synchronize()
        x = a
        for i in range(steps):
            ref = x.float() @ b.float().T
            err = float(torch.linalg.norm(cs[i].float() - ref) / torch.linalg.norm(ref))
            assert bool(torch.isfinite(cs[i]).all()) and err < 1e-2, (i, err)
            x = cs[i]  # the next step's reference starts from what this step wrote

    chain()
    check()
    for c in cs:
        c.fill_(float("nan"))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        stream = torch.cuda.current_stream().cuda_stream
        chain()
    graph.replay()
    check()
