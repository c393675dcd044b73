"""The fp8 GEMM promoted every two K tiles (``promote_every=2``) without a GPU: the mainloop's
instructions in its generated source, ptxas's allocation of it, its kernel names, the values
refused, the host objects (``HopperGemm``, ``AutoGemm``) on the fake driver of ``gemmfake``,
and benchmarks/gemm.py's ``promote2`` variant and error column (with a stand-in torch)."""

from __future__ import annotations

import gc
import re

import pytest
from gemmfake import GemmDriver, Tensor, install
from test_gemm_host_inputs import _benchmark_module
from test_gemm_kernel import _ptxas_info

from tilemem.errors import GemmShapeError
from tilemem.gemm import hopper
from tilemem.gemm.hopper import AutoGemm, HopperGemm, hopper_gemm_persistent

FP8 = "float8_e4m3fn"
WGMMA = "wgmma.mma_async.sync.aligned.m64n192k32.f32.e4m3.e4m3"
WAIT = "wgmma.wait_group.sync.aligned {};"


def _consumer_branches(source: str) -> tuple[str, str]:
    """The first and the second computing consumer's mainloops of a 128-row promoted kernel
    (the branch on the warpgroup that _promote_groups writes where the groups are staggered)."""
    start = source.index("if (((warpgroup - 1) == 0)) {")
    other = source.index("\n      } else {", start)
    end = source.index("\n      }\n", other + 1)
    return source[start:other], source[other:end]


def test_pairs_of_k_tiles_are_summed_in_part_in_straight_line_code():
    full = hopper_gemm_persistent(dtype=FP8, tile_n=192, promote=True, promote_every=2).source
    assert "float acc[96]" in full and "float part[96]" in full
    source, _ = _consumer_branches(full)  # the first consumer's: pairs from K tile 0
    # the loop over pairs: two K tiles of four k32 wgmmas each; then the odd last K tile: 12
    # wgmmas, all into part. scale-d is the predicate operand: 0 on the first wgmma of the pair
    # and of the last K tile, 1 on the other 3 + 4 + 3
    assert source.count(WGMMA) == 12
    assert '"+f"(part[95])' in source and '"+f"(acc[95])' not in source
    assert source.count('"r"((int32_t)(0))') == 2 and source.count('"r"((int32_t)(1))') == 10
    loop = source.index("for (int kg = 0; kg < (k_tiles / 2); ++kg)")
    tail = source.index("if (((k_tiles % 2) == 1))")
    body, rest = source[loop:tail], source[tail:]
    # in the pair: both groups committed, then the first K tile's group complete (at most one
    # pending: wait_group 1) before its stage's release, the second's (wait_group 0) before
    # its release and the adds; no group outlives the iteration
    commits = [m.start() for m in re.finditer(r"wgmma\.commit_group", body)]
    releases = [m.start() for m in re.finditer(r"mbarrier\.arrive", body)]
    assert len(commits) == 2 and len(releases) == 2
    # each release arrives on its own K tile's empty barrier: stage_1's, then stage_2's
    released = re.findall(r"mbarrier\.arrive.*?empty_bar \+ \((stage_\d) \* 8\)", body)
    assert released == ["stage_1", "stage_2"]
    assert re.findall(r"mbarrier\.arrive.*?empty_bar \+ \((stage_\d) \* 8\)", rest) == ["stage_3"]
    wait1, wait0 = body.index(WAIT.format(1)), body.index(WAIT.format(0))
    add = body.index("acc[0] = (acc[0] + part[0]);")
    assert commits[1] < wait1 < releases[0] < wait0 < releases[1] < add
    assert "acc[95] = (acc[95] + part[95]);" in body
    assert body.index("stage_1 = ((first_step + (kg * 2)) % 4)") < commits[0]
    assert commits[0] < body.index("stage_2 = (((first_step + (kg * 2)) + 1) % 4)") < commits[1]
    # the odd last K tile: K step first_step + k_tiles - 1, one group, waited, released, added
    assert "stage_3 = (((first_step + k_tiles) - 1) % 4)" in rest
    assert WAIT.format(1) not in rest
    r_commit, r_wait0 = rest.index("wgmma.commit_group"), rest.index(WAIT.format(0))
    assert r_commit < r_wait0 < rest.index("mbarrier.arrive") < rest.index("acc[0] = (acc[0]")
    # acc starts every output tile at zero, before the pairs
    assert full.index("acc[95] = ((float)(0));") < full.index(source)
    assert source.count(WAIT.format(1)) == 1 and source.count(WAIT.format(0)) == 2


def test_the_second_consumer_promotes_one_k_tile_out_of_step():
    # STAGGER_K_TILES = 1: the second consumer's groups are K tiles (0), (1, 2), (3, 4), ...:
    # one K tile from the unit's first step, waited (wait_group 0), released and added; then
    # pairs from first_step + 1 over k_tiles - 1; then, if k_tiles - 1 is odd, the last K tile
    # (step first_step + 1 + (k_tiles - 1) - 1). 4 + 8 + 4 wgmmas, scale-d 0 on 3 of them
    assert hopper.STAGGER_K_TILES == 1
    full = hopper_gemm_persistent(dtype=FP8, tile_n=192, promote=True, promote_every=2).source
    _, source = _consumer_branches(full)
    assert source.count(WGMMA) == 16 and source.count('"r"((int32_t)(0))') == 3
    head = source[: source.index("for (int kg_1 = 0; kg_1 < ((k_tiles - 1) / 2); ++kg_1)")]
    assert head.count(WGMMA) == 4 and "(first_step % 4)" in head
    commit, wait0 = head.index("wgmma.commit_group"), head.index(WAIT.format(0))
    assert commit < wait0 < head.index("mbarrier.arrive") < head.index("acc[0] = (acc[0]")
    assert "(((first_step + 1) + (kg_1 * 2)) % 4)" in source
    assert "if ((((k_tiles - 1) % 2) == 1))" in source
    assert "((((first_step + 1) + (k_tiles - 1)) - 1) % 4)" in source
    assert source.count(WAIT.format(1)) == 1 and source.count(WAIT.format(0)) == 3


@pytest.mark.parametrize("kwargs", [{"cluster_m": 2}, {"cluster_m": 4}, {"cluster_n": 2}])
def test_consumers_of_clustered_ctas_promote_in_step(kwargs):
    # in a cluster both consumers keep the groups (0, 1), (2, 3), ...: 12 wgmmas at 192 wide
    # (the loop's pair and the odd last K tile), none of the second consumer's own
    source = hopper_gemm_persistent(
        dtype=FP8, tile_n=192, promote=True, promote_every=2, **kwargs
    ).source
    assert "kg_1" not in source and "(first_step + 1)" not in source
    assert source.count(WGMMA) == 12


def test_one_computing_consumer_is_not_staggered():
    # 64 rows of A: one consumer computes, the other zeroes nothing and exits; 192 wide keeps
    # one fragment: pairs from K tile 0 only, as the first of two consumers
    source = hopper_gemm_persistent(
        dtype=FP8, tile_n=192, a_rows=64, promote=True, promote_every=2
    ).source
    assert "kg_1" not in source and "(first_step + 1)" not in source
    assert source.count(WGMMA) == 12


def test_promote_every_one_is_the_kernel_built_without_it():
    for split in (False, True):
        default = hopper_gemm_persistent(1, FP8, 128, split, promote=True)
        every = hopper_gemm_persistent(1, FP8, 128, split, promote=True, promote_every=1)
        assert (every.name, every.source) == (default.name, default.source)
    assert "kg" not in hopper_gemm_persistent(dtype=FP8, tile_n=64, promote=True).source


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"tile_n": 192}, "hopper_gemm_persistent_e4m3_n192_promote_p2"),
        ({"cluster_m": 2, "tile_n": 128}, "hopper_gemm_persistent_cluster2_e4m3_n128_promote_p2"),
        ({"tile_n": 64, "split_k": True}, "hopper_gemm_persistent_e4m3_n64_promote_p2_splitk"),
        ({"tile_n": 64, "a_rows": 32}, "hopper_gemm_persistent_e4m3_n64_a32_promote_p2"),
    ],
)
def test_kernel_name_ends_in_p2(kwargs, name):
    program = hopper_gemm_persistent(dtype=FP8, promote=True, promote_every=2, **kwargs)
    assert program.name == name


@pytest.mark.nvrtc
@pytest.mark.parametrize(
    ("split_k", "a_rows"), [(False, 128), (True, 128), (False, 64), (True, 16)]
)
@pytest.mark.parametrize("tile_n", [192, 160, 128, 96, 64, 32])
def test_promoted_every_two_fits_the_registers_and_keeps_wgmmas_asynchronous(
    tile_n, split_k, a_rows
):
    # as for promote_every=1 (test_gemm_kernel.py): no spills, setmaxnreg honoured (C7508),
    # and no serialised wgmmas (C7514: registers of a group in flight read; C7518: a
    # compiler-inserted wait in a divergent path, which a pair left in flight across the
    # loop's back edge and completed in a branch gets). With 64 or fewer rows of A the
    # computing consumer keeps three fragments on 128, 96 and 64 (_promote_overlapped)
    assert hopper.PROMOTED_TILE_NS == (192, 176, 160, 128, 96, 64, 32)
    assert hopper.OVERLAPPED_TILE_NS == (128, 96, 64, 32)  # 3 x tile_n / 2 + 40 <= 232
    pytest.importorskip("cuda.core")
    program = hopper_gemm_persistent(
        dtype=FP8, tile_n=tile_n, split_k=split_k, a_rows=a_rows, promote=True, promote_every=2
    )
    overlapped = a_rows <= 64 and tile_n in hopper.OVERLAPPED_TILE_NS
    assert ("part_next" in program.source) == overlapped
    info = _ptxas_info(program)
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in info, info
    assert "C7508" not in info and "C7514" not in info and "C7518" not in info, info
    assert "serialized" not in info, info


BAD = [
    (0, r"one of \(1, 2\) .*got 0; use 1 or 2"),
    (3, r"one of \(1, 2\) .*got 3; use 1 or 2"),
    (-2, r"got -2; use 1 or 2"),
    (True, r"got True; use 1 or 2"),
    (1.5, r"got 1\.5; use 1 or 2"),
    (2.0, r"got 2\.0; use 1 or 2"),
    ("2", r"got '2'; use 1 or 2"),
]


@pytest.mark.parametrize(("every", "match"), BAD)
def test_promote_every_is_1_or_2(every, match):
    with pytest.raises(GemmShapeError, match=r"promote_every is the fp32 promotion interval"):
        hopper_gemm_persistent(dtype=FP8, tile_n=128, promote=True, promote_every=every)
    with pytest.raises(GemmShapeError, match=match):
        AutoGemm(dtype=FP8, promote_every=every)


def test_promote_every_needs_promotion():
    match = r"promote_every=2 is the interval of the fp32 promotion, which promote=False turns off"
    with pytest.raises(GemmShapeError, match=match):
        hopper_gemm_persistent(dtype=FP8, tile_n=128, promote_every=2)
    with pytest.raises(GemmShapeError, match=match):
        AutoGemm(dtype=FP8, promote=False, promote_every=2)
    with pytest.raises(GemmShapeError, match=match):  # bf16: not promoted by default
        AutoGemm(promote_every=2)
    # the other promotion rules still apply with promote_every=2
    with pytest.raises(GemmShapeError, match=r"promote=True is for fp8 inputs"):
        hopper_gemm_persistent(dtype="bfloat16", tile_n=128, promote=True, promote_every=2)
    with pytest.raises(GemmShapeError, match=r"256 needs 256 \+ 40"):
        hopper_gemm_persistent(dtype=FP8, tile_n=256, promote=True, promote_every=2)


# -- the host objects on the fake driver ---------------------------------------------------------

A_AT, B_AT, C_AT = 0x10_0000, 0x40_0000, 0x90_0000


@pytest.fixture
def drv(monkeypatch):
    yield install(monkeypatch, GemmDriver())
    gc.collect()  # workspaces freed while the fake driver is still the driver


def _operands(m: int, n: int, k: int):
    return Tensor(A_AT, (m, k), FP8), Tensor(B_AT, (n, k), FP8), Tensor(C_AT, (m, n))


def test_hopper_gemm_builds_and_launches_the_p2_kernel(drv):
    with pytest.raises(GemmShapeError, match=r"promote_every=2 is the interval"):
        HopperGemm(cluster_m=1, dtype=FP8, tile_n=128, promote_every=2)
    gemm = HopperGemm(cluster_m=1, dtype=FP8, tile_n=128, promote=True, promote_every=2)
    assert gemm.promote_every == 2 and gemm.program.name.endswith("_n128_promote_p2")
    gemm.prepare(*_operands(128, 128, 384))()
    ((name, _),) = drv.kernel_launches()
    assert name == "hopper_gemm_persistent_e4m3_n128_promote_p2"
    split = HopperGemm(1, 1, FP8, 0, 128, True, promote=True, promote_every=2)
    split.prepare(*_operands(128, 128, 512), splits=2)()
    assert drv.kernel_launches()[1][0] == "hopper_gemm_persistent_e4m3_n128_promote_p2_splitk"


def test_auto_gemm_passes_promote_every_to_each_kernel(drv):
    # the default: every two K tiles for promoted fp8 (DEFAULT_PROMOTE_EVERY), 1 otherwise
    assert AutoGemm(dtype=FP8).promote_every == 2
    assert AutoGemm(dtype=FP8, promote=False).promote_every == 1
    assert AutoGemm().promote_every == 1  # bf16: no promotion
    assert AutoGemm(dtype=FP8, promote_every=1).promote_every == 1
    gemm = AutoGemm(dtype=FP8, promote_every=2)
    assert (gemm.promote, gemm.promote_every) == (True, 2)
    # 8192 x 8192 (config without K: no split), 4992 x 3072 x 2048 (stream-K at 192,
    # stream_k_policy) and 512 x 28672 x 4096 (176-wide pairs, pairs_176, in place of that
    # stream-K): all promote every two
    for shape in ((8192, 8192, None), (4992, 3072, 2048), (512, 28672, 4096)):
        built = gemm.gemm_for(*shape)
        assert (built.promote, built.promote_every) == (True, 2)
        assert "_promote_p2" in built.program.name
    assert gemm.gemm_for(4992, 3072, 2048).stream_k
    assert (gemm.gemm_for(512, 28672, 4096).tile_n, gemm.gemm_for(512, 28672, 4096).cluster_m) == (
        176,
        2,
    )
    gemm(*_operands(256, 384, 256))
    assert all(name.endswith("_promote_p2") for name, _ in drv.kernel_launches())


# -- benchmarks/gemm.py: the promote2 variant and the error table's column -----------------------


def test_benchmark_times_the_promote_policies_beside_the_others(monkeypatch):
    bench = _benchmark_module(monkeypatch)
    configs = bench.parse_variants("promote1,unpromoted,192x2")
    assert configs == ["promote1", "unpromoted", (192, 2, False)]
    gemms = bench.make_variants(configs[:2], FP8, 8, 0)  # the fixed 192x2 needs a GPU
    assert [bench.name(g) for g in gemms] == ["tilemem", "promote1", "unpromoted"]
    assert [(g.promote, g.promote_every) for g in gemms] == [(True, 2), (True, 1), (False, 1)]
    # promote2 names the default's interval: a column equal to the policy, named as such
    (two,) = bench.make_variants(["promote2"], FP8, 8, 0)[1:]
    assert (two.promote_every, bench.name(two)) == (2, "tilemem")
    assert all(g.group_m == 8 and g.l2_promotion == 0 for g in gemms)
    bf16 = bench.make_variants(configs[:2], "bfloat16", 8, 0)  # fp8 policies only
    assert [bench.name(g) for g in bf16] == ["tilemem"] and not bf16[0].promote
    # 8192^3 fp8 on 132 SMs, one K range: promoted, 128 x 192 in 2x1 clusters; unpromoted,
    # every width, 128 x 256 in 2x1 clusters (test_gemm_kernel.py's AutoGemm test)
    for g in gemms:
        g.sms = 132
    assert [bench.policy(g, 8192, 8192, 8192) for g in gemms] == ["192x2/p2", "192x2/p", "256x2"]


def test_benchmark_error_table_has_a_column_for_promotion_every_two_k_tiles(monkeypatch):
    bench = _benchmark_module(monkeypatch)
    columns = bench.accuracy_gemms()
    assert [(label, g.promote, g.promote_every) for label, g in columns.items()] == [
        ("promoted every 2", True, 2),
        ("promoted every K tile", True, 1),
        ("unpromoted", False, 1),
    ]
    assert bench.accuracy_header(columns) == [
        "| K | promoted every 2 | config | promoted every K tile | config | unpromoted | config "
        "| cuBLASLt |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]


# -- on a GPU (marker gpu) -----------------------------------------------------------------------


def _fp8_operands(torch, m: int, n: int, k: int, seed: int):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", generator=gen).to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device="cuda", generator=gen).to(torch.float8_e4m3fn)
    return a, b, a.float() @ b.float().T


def _error(torch, c, ref) -> float:
    assert bool(torch.isfinite(c).all())
    return float(torch.linalg.norm(c.float() - ref) / torch.linalg.norm(ref))


@pytest.mark.gpu
def test_promoted_every_two_gives_the_fp32_product_on_every_width(torch):
    # 1000 x 1040 x 528: ragged, 5 K tiles of 128 fp8 (two pairs and the odd last, partial
    # one); every promoted width alone and in pairs; then split-K, 1040 x 1040 x 1536 (12 K
    # tiles) in 4 ranges of 3 and 2 ranges of 6; bf16 rounding gives about 2e-3, a wrong
    # tile about 1
    a, b, ref = _fp8_operands(torch, 1000, 1040, 528, seed=23)
    for tile_n in hopper.PROMOTED_TILE_NS:
        for cluster_m in (1, 2):
            c = torch.full((1000, 1040), float("nan"), device="cuda", dtype=torch.bfloat16)
            HopperGemm(3, cluster_m, FP8, 0, tile_n, promote=True, promote_every=2)(a, b, c)
            torch.cuda.synchronize()
            assert _error(torch, c, ref) < 1e-2, (tile_n, cluster_m)
    a, b, ref = _fp8_operands(torch, 1040, 1040, 1536, seed=24)
    split = HopperGemm(3, 1, FP8, 0, 128, True, promote=True, promote_every=2)
    for splits in (4, 2):
        c = torch.full((1040, 1040), float("nan"), device="cuda", dtype=torch.bfloat16)
        split.prepare(a, b, c, splits=splits)()
        torch.cuda.synchronize()
        assert _error(torch, c, ref) < 1e-2, splits


@pytest.mark.gpu
def test_promoted_every_two_keeps_the_error_of_a_long_k_near_bf16_rounding(torch):
    # K = 16384 as test_gemm_gpu.py's promotion test: every K tile promoted stays below
    # 1.85e-3 (C's bf16 rounding, 1.67e-3, + 10%), unpromoted 3.54e-3 (docs/PERFORMANCE.md).
    # Promoting every 256 elements measured 1.675e-3 against 1.667e-3 at K = 14336 (half-tile
    # experiment, docs/verification/2026-12-02-h200-fp8-promotion-experiments.txt): the same
    # bound, and below the unpromoted kernel's error
    m, n, k = 512, 1024, 16384
    a, b, ref = _fp8_operands(torch, m, n, k, seed=16384)
    errors = []
    for kwargs in (dict(promote_every=2), dict(promote=False)):
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        AutoGemm(dtype=FP8, **kwargs)(a, b, c)
        torch.cuda.synchronize()
        errors.append(_error(torch, c, ref))
    assert errors[0] < 1.85e-3 and errors[0] < errors[1], errors


@pytest.mark.gpu
def test_two_fragments_give_the_one_fragment_kernels_bits_on_the_gpu(torch, monkeypatch):
    # a consumer computing alone (64, 32, 16 and 8 rows of A) on the widths of
    # OVERLAPPED_TILE_NS, tiled and stream-K, over 1000 x 1040 x 1936 (15 K tiles: 3 runs of
    # two pairs and 3 K tiles left over, a pair and one): C within bf16 rounding of the fp32
    # product and bit for bit the one-fragment kernel's (the same groups in the same order)
    a, b, ref = _fp8_operands(torch, 1000, 1040, 1936, seed=15)
    cases = [(64, 128, False), (32, 96, False), (16, 64, True), (8, 64, False), (64, 128, True)]
    for a_rows, tile_n, stream_k in cases:
        kwargs = dict(tile_n=tile_n, a_rows=a_rows, promote=True, promote_every=2)
        gemms = [HopperGemm(8, 1, FP8, 0, stream_k=stream_k, **kwargs)]
        assert "part_next" in gemms[0].program.source
        with monkeypatch.context() as patch:
            patch.setattr(hopper, "OVERLAPPED_TILE_NS", ())
            gemms.append(HopperGemm(8, 1, FP8, 0, stream_k=stream_k, **kwargs))
        assert "part_next" not in gemms[1].program.source
        outs = []
        for gemm in gemms:
            c = torch.full((1000, 1040), float("nan"), device="cuda", dtype=torch.bfloat16)
            gemm(a, b, c)
            torch.cuda.synchronize()
            assert _error(torch, c, ref) < 1e-2, (a_rows, tile_n, stream_k)
            outs.append(c)
        assert torch.equal(outs[0], outs[1]), (a_rows, tile_n, stream_k)
