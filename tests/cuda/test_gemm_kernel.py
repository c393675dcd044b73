"""The persistent Hopper GEMM without a GPU: its plan, its instructions, its operand checks."""

from types import SimpleNamespace

import pytest

from tilemem import T
from tilemem.errors import TargetError
from tilemem.gemm import hopper, shapes
from tilemem.gemm import plan as gemm_plan
from tilemem.gemm.hopper import (
    AutoGemm,
    GemmShapeError,
    _check_operands,
    hopper_gemm_persistent,
    launch_config,
)
from tilemem.ir.nodes import IRError

KIB = 1024


def test_stage_solver_counts_the_c_staging_tiles_beside_the_ring():
    solution = gemm_plan.stages("sm_90a")
    # per stage A 128x64 + B 256x64 bf16 = 48 KiB, plus two 8-byte mbarriers; C staging
    # 4 x 64 x 64 bf16 = 32 KiB. sm_90a allows 227 KiB per CTA (CUDA C Programming Guide,
    # compute capability 9.0): 4 x 48 KiB + 32 KiB + 64 = 229,440 fits, a fifth stage does not.
    assert (solution.stages, solution.bytes_used) == (4, 4 * 48 * KIB + 32 * KIB + 64)
    assert solution.per_stage_bytes == 48 * KIB + 16
    assert gemm_plan.hopper_gemm_persistent_bf16().plan().smem.committed == solution.bytes_used


def test_the_ring_and_the_c_tiles_are_live_together_in_the_epilogue():
    # persistent: while the consumers stage C (epilogue), the producer refills the ring for the
    # next tile, so no byte of C may reuse the ring: the packed footprint is the bump total
    plan = gemm_plan.hopper_gemm_persistent_bf16().plan()
    assert plan.footprint == plan.lower_bound == plan.smem.bump == 229_440
    assert plan.entry("C_stage").offset == 4 * 48 * KIB


def test_kernel_uses_the_planned_ring_and_hopper_instructions():
    source = hopper_gemm_persistent().source
    for text in (
        "setmaxnreg.dec.sync.aligned.u32 40;",
        "setmaxnreg.inc.sync.aligned.u32 232;",
        "wgmma.wait_group.sync.aligned 1;",
        "stmatrix.sync.aligned.m8n8.x4.shared.b16",
        "cp.async.bulk.wait_group 0;",
        "229440 bytes of dynamic shared memory",
        "% 4)",  # the ring depth the stage solver chose
    ):
        assert text in source, text


def test_fp8_kernel_takes_128_wide_k_tiles_in_four_k32_steps():
    # a 128-byte swizzle row holds 128 e4m3 values; wgmma reads 32 of them per instruction
    source = hopper_gemm_persistent(dtype="float8_e4m3fn").source
    assert source.count("wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3") == 4
    assert "(kt * 128)" in source and "229440 bytes of dynamic shared memory" in source


def test_promoted_fp8_kernel_sums_each_k_tile_in_a_second_fragment():
    source = hopper_gemm_persistent(dtype="float8_e4m3fn", tile_n=192, promote=True).source
    assert "float acc[96]" in source and "float part[96]" in source
    # four k32 wgmmas of a 128-element K tile into part, the first with scale-d 0 (its
    # predicate operand is the constant 0), the other three adding
    wgmma = "wgmma.mma_async.sync.aligned.m64n192k32.f32.e4m3.e4m3"
    assert source.count(wgmma) == 4
    assert source.count('"r"((int32_t)(0))') == 1 and source.count('"r"((int32_t)(1))') == 3
    assert '"+f"(part[95])' in source and '"+f"(acc[95])' not in source
    # every K tile: wait for all of its wgmmas (no group left in flight), then add part into
    # acc, which starts each output tile at zero; the adds come after the wait, in the K loop
    assert "wgmma.wait_group.sync.aligned 1;" not in source
    wait = source.index("wgmma.wait_group.sync.aligned 0;")
    loop = source.index("for (int kt_1 = 0; kt_1 < k_tiles; ++kt_1)")
    assert loop < wait < source.index("acc[0] = (acc[0] + part[0]);")
    assert source.index("acc[95] = ((float)(0));") < loop
    assert "acc[95] = (acc[95] + part[95]);" in source


def test_bf16_and_unpromoted_fp8_kernels_keep_one_fragment_and_one_group_in_flight():
    for dtype in ("bfloat16", "float8_e4m3fn"):
        source = hopper_gemm_persistent(dtype=dtype, tile_n=192).source
        assert "part" not in source and "float acc[96]" in source
        assert "wgmma.wait_group.sync.aligned 1;" in source
        assert '"+f"(acc[95])' in source


def _ptxas_info(program) -> str:
    """ptxas's resource line for ``program``, compiled by NVRTC for sm_90a (no GPU)."""
    import io

    from cuda.core import Program, ProgramOptions

    print(f"compiling {program.name} with ptxas -v")
    options = ProgramOptions(arch="sm_90a", std="c++17", name="gemm.cu", ptxas_options="-v")
    log = io.StringIO()
    Program(program.source, "c++", options).compile("cubin", logs=log)
    if not log.getvalue():
        # seen on the H200 machine with its GPU visible (2026-12-02): the build succeeds but
        # cuda.core passes no ptxas output back, so there is nothing to check (not a pass)
        pytest.skip("this cuda.core returned no ptxas -v output for the build")
    return log.getvalue()


@pytest.mark.parametrize("tile_n", [192, 176, 160, 128, 96, 64, 32])
def test_promoted_fp8_kernel_fits_the_consumer_registers_without_spills(tile_n):
    # two fp32 fragments of tile_n / 2 registers a thread: 192 of the consumer's 232 under
    # setmaxnreg.inc at 128 x 192. ptxas must honour setmaxnreg (C7508:
    # "'setmaxnreg' ignored; unable to determine register count at entry", after which every
    # warpgroup is capped at 168 and 128 x 192 spills), allocate without spilling, and keep
    # the wgmmas asynchronous (C7514: "wgmma.mma_async instructions are serialized" when
    # registers of a group in flight are read); 128 x 240 would need 240 for the fragments
    # alone and is refused before any build
    pytest.importorskip("cuda.core")
    info = _ptxas_info(hopper_gemm_persistent(dtype="float8_e4m3fn", tile_n=tile_n, promote=True))
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in info, info
    assert "C7508" not in info and "C7514" not in info, info
    # 176: 2 x 88 + 40 = 216 <= 232; 32: 2 x 16 + 40 = 72
    assert hopper.PROMOTED_TILE_NS == (192, 176, 160, 128, 96, 64, 32)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(dtype="bfloat16", tile_n=128, promote=True), r"promote=True is for fp8 inputs"),
        (
            dict(dtype="float8_e4m3fn", tile_n=240, promote=True),
            r"240 needs 240 \+ 40 others, more than the consumer.s 232 .* \(192, 176, 160, 128,",
        ),
        (dict(dtype="float8_e4m3fn", tile_n=256, promote=True), r"256 needs 256 \+ 40"),
        (dict(dtype="float8_e4m3fn", tile_n=128, promote=1), r"promote is True or False"),
    ],
)
def test_promotion_is_refused_where_it_cannot_run(kwargs, match):
    with pytest.raises(GemmShapeError, match=match):
        hopper_gemm_persistent(**kwargs)


def test_auto_gemm_promotes_fp8_on_the_widths_that_fit():
    # 8192^3: 64 x 32 units of 128 x 256 in 2x1 clusters (16 rounds, cost 4096) for bf16;
    # promoted fp8 has 192 at most: 64 x 43 tiles, 32 x 43 = 1376 pair units over 66 pairs,
    # 21 rounds (21 x 192 x 1.03 = 4153) against 128's 32 x 64 = 2048 units, 32 rounds
    # (32 x 128 x 1.4 = 5734)
    fp8, bf16 = AutoGemm(dtype="float8_e4m3fn"), AutoGemm()
    fp8.sms = bf16.sms = 132
    assert fp8.promote and not bf16.promote
    assert not AutoGemm(dtype="float8_e4m3fn", promote=False).promote
    assert fp8.config(8192, 8192)[:2] == (192, 2) and bf16.config(8192, 8192)[:2] == (256, 2)
    assert launch_config(8192, 8192, 132, hopper.PROMOTED_TILE_NS) == (192, 2)
    with pytest.raises(GemmShapeError, match=r"promote=True is for fp8 inputs"):
        AutoGemm(promote=True)
    with pytest.raises(GemmShapeError, match=r"widths are some of"):
        launch_config(8192, 8192, 132, (200,))
    # 176 and 32 are kernel widths without a cost: passed over where others have one, and
    # refused where none has
    assert launch_config(8192, 8192, 132, (176, 128, 32)) == (128, 2)
    for uncosted in ((176,), (32,), (176, 32)):
        with pytest.raises(GemmShapeError, match=r"weighs the widths of .*got \("):
            launch_config(8192, 8192, 132, uncosted)


@pytest.mark.parametrize(
    ("tile_n", "depth", "total"), [(240, 4, 225_344), (192, 4, 213_056), (128, 6, 229_472)]
)
def test_narrower_tiles_get_the_ring_that_fits(tile_n, depth, total):
    # per stage A 128x64 + B tile_n x 64 bf16 + two 8-byte mbarriers; the CTA limit is 227 KiB
    # = 232,448 B (CUDA C Programming Guide, compute capability 9.0). The ring's depth is
    # that beside two 64-row staging tiles a consumer; where it leaves room, up to a tile's
    # slices (plan.epilogue_staging): 128 x 192: 4 x 40,976 + 32,768 fits, 5 stages (237,648)
    # do not, and a third 8 KiB tile each gives 163,904 + 49,152 = 213,056; 128 x 128: 6 x
    # 32,784 + 32,768 fits, 7 (262,256) do not, 2 slices a tile; 128 x 240 stages C in
    # 64 x 48 bf16 tiles (6 KiB): 4 x 47,120 + 4 x 6 KiB fits, 5 (260,176) do not, and three
    # tiles each give 188,480 + 36,864 = 225,344 (four: 237,632)
    solution = gemm_plan.stages("sm_90a", tile_n=tile_n)
    assert (solution.stages, solution.bytes_used) == (depth, total)
    assert gemm_plan.stages("sm_90a", "float8_e4m3fn", tile_n).bytes_used == total


def test_192_wide_kernel_issues_n192_wgmma_and_alternates_staging_across_tiles():
    source = hopper_gemm_persistent(cluster_m=2, tile_n=192).source
    assert source.count("wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16") == 4
    assert "float acc[96]" in source and "213056 bytes of dynamic shared memory" in source
    # three 64-column slices a tile in three staging tiles: slice j in tile j, each tile
    # reused a tile later (after its store's reads: wait_group.read 2, the other two pending)
    assert "t_1 * 3" not in source
    assert source.count('"cp.async.bulk.wait_group.read 2;"') == 3
    assert "(n_tile_1 * 192)" in source


def test_240_wide_kernel_stages_c_in_five_unswizzled_48_column_slices():
    source = hopper_gemm_persistent(cluster_m=2, tile_n=240).source
    # wgmma m64nN takes N = 8..256 in steps of 8 (PTX ISA, "wgmma.mma_async"); 240 / 2 = 120
    # accumulators a thread
    assert source.count("wgmma.mma_async.sync.aligned.m64n240k16.f32.bf16.bf16") == 4
    assert "float acc[120]" in source and "225344 bytes of dynamic shared memory" in source
    # a 64 x 48 staging tile is 3072 elements with 48-element (96-byte) rows, no swizzle;
    # five slices a tile over three staging tiles, so slice j of tile t takes (5 t + j) % 3
    assert "(st_row * 48)" in source and "* 3072)" in source
    assert "((t_1 * 5) % 3)" in source and "(((t_1 * 5) + 4) % 3)" in source
    assert "((n_tile_1 * 240) + 192)" in source  # the fifth slice's first column
    # each CTA of the pair loads and multicasts 120 of B's 240 rows
    assert "(cta_rank * 120u)" in source


def test_240_wide_b_tile_does_not_split_four_ways():
    # 240 / 4 = 60 rows: the second share would start at byte 60 x 128 = 7680 of the stage,
    # not on the 1024-byte period of the 128-byte swizzle (CUDA C Programming Guide, TMA
    # swizzle), so four-CTA clusters are refused before any code is built
    with pytest.raises(GemmShapeError, match=r"240 / 4 = 60.0 rows.*use a smaller cluster"):
        hopper_gemm_persistent(cluster_m=4, tile_n=240)


def test_tile_width_is_one_the_kernel_knows():
    with pytest.raises(
        GemmShapeError,
        match=r"128 x one of \(256, 240, 224, 192, 176, 160, 128, 96, 64, 32\) columns, got 200",
    ):
        hopper_gemm_persistent(tile_n=200)
    assert _check_operands(_tensor(300, 200), _tensor(128, 200), _tensor(300, 128), tile_n=128)


@pytest.mark.parametrize(
    ("m", "n", "config"),
    [
        # 40 x 12 tiles of 128 x 256 in 2x1 clusters: 240 units over 66 pairs, 4 rounds of 256
        # columns (1024); 40 x 16 of 128 x 192: 320 units, 5 rounds of 192 (960 x 1.03 = 989);
        # 40 x 13 of 128 x 240: 260 units, 4 rounds of 240 (960 x 1.01 = 970)
        (4999, 3000, (240, 2)),
        (2048, 2048, (256, 1)),  # 16 x 8 = 128 tiles of 128 x 256 fit in one wave of 132
        # 1024 units of 256: 16 rounds (4096); 32 x 35 units of 240: 17 rounds (4121);
        # 32 x 43 units of 192: 21 rounds (4153)
        (8192, 8192, (256, 2)),
        (8192, 14336, (256, 2)),  # 64 x 56 tiles: 28 rounds (7168); 192: 37 (7317)
        # one round for every width: 256 costs 256, 192 costs 198, 128 costs 128 x 1.4 = 179,
        # 64 costs 64 x 1.9 = 121.6
        (304, 528, (64, 1)),
        # one row of M tiles: 16 x 57344 in 224 tiles of 256 would pair up (> 132 tiles), but
        # the second CTA of a pair would only compute rows past M; alone: 2 rounds of 224
        # tiles for 256 (512), 2 of 239 for 240 (2 x 240 x 1.01 = 484.8), 2 of 256 for 224
        # (2 x 224 x 1.03 = 461.4), 3 of 299 for 192 (593.3), 4 of 448 for 128 (716.8), 7 of
        # 896 for 64 (851.2)
        (16, 57344, (224, 1)),
        # 4 x 128 tiles of 224: 256 units of pairs over 66, 4 rounds (4 x 224 x 1.03 = 922.9);
        # 256: 4 rounds of 224 units (1024); 240: 4 of 240 units (969.6). launch_config pairs
        # them; the policy runs them alone (ALONE_WIDTHS)
        (512, 28672, (224, 2)),
    ],
)
def test_launch_config_counts_rounds_of_whole_tiles(m, n, config):
    assert launch_config(m, n, 132) == config


@pytest.mark.parametrize(
    ("m", "n", "k", "dtype", "config"),
    [
        # every width fits one round, so launch_config takes 128 x 64 (121.6 against 179.2 for
        # 128): 64 x 128 = 128 tiles of 128 x 64 fill the SMs and cannot split; K = 28672 is
        # 448 K tiles >= 200, so 128 x 128 in 2 ranges (64 x 2 = 128 CTAs; partial sums
        # 8 * 2 * 128 * 8192 = 16.8 MB against a quarter of (128 + 8192) * 28672 * 2 bytes)
        (128, 8192, 28672, "bfloat16", (128, 1, 2)),
        # 2 x 64 tiles of 128 x 64; 224 K tiles; 2 x 32 tiles of 128 x 128 in 2 ranges
        (256, 4096, 14336, "bfloat16", (128, 1, 2)),
        (128, 8192, 8192, "bfloat16", (64, 1, 1)),  # 128 K tiles: the narrow tile stays
        # 128 x 64 splits itself here (64 tiles x 2 ranges): it stays
        (128, 4096, 14336, "bfloat16", (64, 1, 2)),
        (64, 8192, 28672, "bfloat16", (64, 1, 1)),  # M <= 64: the 64-row A box kernel stays
        # fp8: 28672 / 128 = 224 K tiles; the promoted widths 192/128/64 give 128 x 64 first
        (256, 4096, 28672, "float8_e4m3fn", (128, 1, 2)),
        (256, 4096, 14336, "float8_e4m3fn", (64, 1, 1)),  # 112 K tiles
        (8192, 8192, 8192, "bfloat16", (256, 2, 1)),  # many rounds: launch_config's choice
        # 2 x 64 tiles of 128 x 128 (179.2 against 243.2 for 64 in two rounds of pairs) fill
        # the SMs unsplit; 2 x 32 tiles of 128 x 256 in 2 ranges (16.8 MB of 8 * 2 * 256 *
        # 8192 partial sums against a quarter of 484 MB of operands)
        (256, 8192, 28672, "bfloat16", (256, 1, 2)),
        # 4 x 16 tiles of 128 x 256 in 2 ranges would write 8 * 2 * 512 * 4096 = 33.55 MB of
        # partial sums, over a quarter of (512 + 4096) * 14336 * 2 = 33.03 MB: 128 stays
        (512, 4096, 14336, "bfloat16", (128, 1, 1)),
    ],
)
def test_policy_takes_a_wider_split_k_tile_over_an_unsplit_narrow_one_when_k_is_long(
    m, n, k, dtype, config
):
    widths = hopper.PROMOTED_TILE_NS if dtype == "float8_e4m3fn" else gemm_plan.TILE_NS
    assert hopper.policy(m, n, k, 132, dtype, widths) == config


def test_input_types_are_bf16_or_e4m3():
    with pytest.raises(GemmShapeError, match=r"one of \('bfloat16', 'float8_e4m3fn'\)"):
        hopper_gemm_persistent(dtype="float16")


def test_cluster_kernel_multicasts_b_and_arrives_on_both_ctas():
    source = hopper_gemm_persistent(cluster_m=2).source
    assert ".multicast::cluster" in source and "%cluster_ctarank" in source
    # 2 releases (in the K loop, after it), each by lanes 0 and 1: one arrival on each CTA
    assert source.count("mbarrier.arrive.shared::cluster.b64") == 2
    assert source.count("(((int)threadIdx.x % 32) < 2))") == 2
    # the cluster barrier after barrier init only: at the end the producer waits until every
    # stage is freed by both CTAs (hopper._producer_tail) instead of a second cluster barrier
    assert source.count("barrier.cluster.wait.acquire;") == 1
    tail = source[source.index("griddepcontrol.launch_dependents;") :]
    assert "for (int tail = 0; tail < 4; ++tail)" in tail
    # CTAs alone keep their end as it was: no tail (nobody else arrives on their barriers)
    assert "int tail = 0" not in hopper_gemm_persistent().source
    assert "int tail = 0" not in hopper_gemm_persistent(stream_k=True, a_rows=64).source
    assert "tm_mbarrier_wait(tm_smem_addr((uint8_t*)empty_bar" in tail


def test_cluster_size_is_one_two_or_four():
    with pytest.raises(GemmShapeError, match=r"cluster_m is one of \(1, 2, 4\) .*, got 3"):
        hopper_gemm_persistent(cluster_m=3)
    for bad in (True, 2.0, "2"):  # True == 1 and 2.0 == 2, but neither is a CTA count
        with pytest.raises(GemmShapeError, match=r"cluster_m is one of \(1, 2, 4\)"):
            hopper_gemm_persistent(cluster_m=bad)


def _probe(body, target="sm_90a"):
    @T.kernel(target=target, block=256, name="probe")
    def k(x: T.Buffer((256,), "float32")):
        smem = T.SMEMPool()
        c = smem.alloc_mma((64, 64), "bfloat16", name="c")
        smem.commit()
        body(x, c)

    return k


def test_setmaxnreg_stmatrix_barrier_ids_and_grid_dim_compile():
    def body(x, c):
        with T.If(T.warp_id() < 4):
            with T.Then():
                T.ptx.setmaxnreg.dec(40)
            with T.Else():
                T.ptx.setmaxnreg.inc(232)
        T.ptx.stmatrix_x4((c, T.lane_id() % 64, 0), [1, 2, 3, T.grid_dim()])
        T.cuda.named_barrier(T.warp_id() // 4 + 1, 128)
        T.ptx.tma.wait_group(0)

    k = _probe(body)
    assert "bar.sync %0, 128;" in k.source and "gridDim.x" in k.source
    assert len(k.compile()) > 1000


@pytest.mark.parametrize("count", [16, 36, 264])
def test_setmaxnreg_rejects_counts_ptx_does_not_allow(count):
    with pytest.raises(IRError, match=r"multiple of 8 in \[24, 256\], got"):
        _probe(lambda x, c: T.ptx.setmaxnreg.inc(count))


def test_setmaxnreg_needs_sm_90a():
    with pytest.raises(
        TargetError, match=r"setmaxnreg.dec does not exist on sm_90; it needs one of: sm_90a"
    ):
        _probe(lambda x, c: T.ptx.setmaxnreg.dec(40), target="sm_90")


def test_stmatrix_x4_takes_four_words():
    with pytest.raises(IRError, match=r"four 32-bit words per thread, got 3"):
        _probe(lambda x, c: T.ptx.stmatrix_x4(c, [1, 2, 3]))


def _tensor(*shape, dtype="torch.bfloat16"):
    return SimpleNamespace(shape=shape, dtype=dtype)


@pytest.mark.parametrize(
    ("a", "b", "c", "match"),
    [
        ((512, 256), (512, 128), (512, 512), r"A \(M, K\), B \(N, K\), C \(M, N\)"),
        ((512, 260), (512, 260), (512, 512), r"K = 260 must be a multiple of 8 and N = 512 of 8"),
    ],
)
def test_operand_rules_say_what_to_change(a, b, c, match):
    with pytest.raises(GemmShapeError, match=match):
        _check_operands(_tensor(*a), _tensor(*b), _tensor(*c))


def test_operands_smaller_than_a_box_run_in_place_where_boxes_may_reach_past_them(monkeypatch):
    small = (_tensor(64, 32), _tensor(200, 32), _tensor(64, 200))  # M < 128, N < 256, K < 64
    assert _check_operands(*small) == (64, 32, 200)
    monkeypatch.setattr(shapes, "BOXES_PAST_EDGES", False)
    with pytest.raises(GemmShapeError, match=r"M >= 128, N >= 256, K >= 64"):
        _check_operands(*small)


def test_operands_must_be_bfloat16():
    with pytest.raises(GemmShapeError, match=r"B must be bfloat16, got torch.float16"):
        _check_operands(
            _tensor(512, 256), _tensor(512, 256, dtype="torch.float16"), _tensor(512, 512)
        )
    assert _check_operands(_tensor(300, 200), _tensor(520, 200), _tensor(300, 520)) == (
        300,
        200,
        520,
    )


def test_fp8_operands_need_k_in_16_byte_rows_and_a_bf16_c():
    fp8 = "torch.float8_e4m3fn"
    a, b = _tensor(300, 200, dtype=fp8), _tensor(520, 200, dtype=fp8)
    with pytest.raises(GemmShapeError, match=r"K = 200 must be a multiple of 16"):
        _check_operands(a, b, _tensor(300, 520), "float8_e4m3fn")
    with pytest.raises(GemmShapeError, match=r"C must be bfloat16, got torch.float8_e4m3fn"):
        _check_operands(a, b, _tensor(300, 520, dtype=fp8), "float8_e4m3fn")


class _Strided:
    def __init__(self, shape, strides):
        self.shape, self.dtype = shape, "bfloat16"
        self.__cuda_array_interface__ = {
            "shape": shape,
            "typestr": "<V2",
            "strides": strides,
            "data": (0, False),
            "version": 3,
        }


def test_operands_must_be_row_major():
    a, c = _tensor(512, 256), _tensor(512, 512)
    transposed = _Strided((512, 256), (2, 1024))  # a (256, 512) matrix viewed transposed
    with pytest.raises(GemmShapeError, match=r"B must be dense row-major .*b.contiguous\(\)"):
        _check_operands(a, transposed, c)
    assert _check_operands(a, _Strided((512, 256), (512, 2)), c) == (512, 256, 512)


class _Float8Tensor:
    """Like a torch float8 tensor: the array interface raises KeyError, data_ptr() works."""

    shape, dtype = (128, 128), "torch.float8_e4m3fn"

    @property
    def __cuda_array_interface__(self):
        raise KeyError("float8_e4m3fn")

    def is_contiguous(self):
        return True

    def data_ptr(self):
        return 0x7F0000001000


def test_float8_tensors_are_addressed_through_data_ptr():
    from tilemem.cuda.device import device_pointer, element_bytes

    assert device_pointer(_Float8Tensor()) == 0x7F0000001000
    assert element_bytes(_Float8Tensor()) is None  # unknown, not a crash


@pytest.mark.parametrize(
    ("m", "n", "k", "dtype", "width"),
    [
        # policy (128, 1, 2): 2 x 32 tiles x 2 ranges = 128 units, one round of 224 / 2 K
        # tiles: 112 * 128 * 1.4 = 20070.4. Stream-K: 2 M tiles, groups of 2, 66 groups; at
        # 256, 16 units < 66 groups: 192 instead, 22 units * 224 / 66 = 74.7 steps a CTA
        # (>= 64), 74.7 * 192 * 1.03 = 14766 <= 0.95 * 20070.4
        (256, 4096, 14336, "bfloat16", 192),
        # policy (128, 1, 1): 96 tiles, one round of 64 K tiles. Stream-K at 192: 32 units *
        # 64 / 66 = 31 steps a CTA, below 64: the tiled kernel
        (256, 6144, 4096, "bfloat16", None),
        # policy (256, 1, 1): 128 tiles, one round: 128 * 256 = 32768. Stream-K: groups of 4,
        # 33 groups; 256: 32 units < 33; 192: 43 * 128 / 33 = 166.8 steps, 166.8 * 197.76 =
        # 32986 > 0.95 * 32768: the tiled kernel
        (512, 8192, 8192, "bfloat16", None),
        # policy (240, 2, 1): 4 x 43 = 172 pair units over 66 pairs: 3 rounds, 3 * 128 * 240
        # * 1.01 = 93081.6. Stream-K at 256: groups of 8, 16 groups, 40 units >= 16: 40 * 128
        # / 16 = 320 steps, 320 * 256 = 81920 <= 0.95 * 93081.6 = 88427.5
        (1024, 10240, 8192, "bfloat16", 256),
        # policy (64, 1, 1): 2 x 64 tiles, one round of 192 K tiles: 192 * 64 * 1.9 = 23347.2.
        # Stream-K at 192: 22 units * 192 / 66 = exactly 64 steps a CTA (the least taken),
        # 64 * 197.76 = 12656.6
        (256, 4096, 12288, "bfloat16", 192),
        # policy (256, 1, 2): 2 x 32 tiles x 2 ranges, one round of 448 / 2 K tiles: 224 * 256
        # = 57344. Stream-K: 256 skipped (32 units < 66 groups); 192: 43 * 448 / 66 = 291.9
        # steps, 291.9 * 197.76 = 57725 > 0.95 * 57344: the tiled kernel (its split-K then
        # runs as stream-K with the same ranges, AutoGemm.config)
        (256, 8192, 28672, "bfloat16", None),
        # one M tile: never
        (128, 57344, 8192, "float8_e4m3fn", None),
        # fp8 on the promoted widths: 192 only. Policy (128, 1, 1): 4 x 64 tiles alone
        # (FP8_ALONE_WIDTHS), 256 over 132: 2 rounds of 64 K tiles of 128 bytes: 2 * 64 *
        # 179.2 = 22937.6. Stream-K: groups of 4, 33 groups, 43 units * 64 / 33 = 83.4 steps,
        # 83.4 * 197.76 = 16492 <= 21790.7
        (512, 8192, 8192, "float8_e4m3fn", 192),
    ],
)
def test_stream_k_policy_weighs_rounds_against_steps_a_cta(m, n, k, dtype, width):
    widths = hopper.PROMOTED_TILE_NS if dtype == "float8_e4m3fn" else gemm_plan.TILE_NS
    assert hopper.stream_k_policy(m, n, k, 132, dtype, widths) == width


def test_fp8_128_wide_tiles_run_alone_where_launch_config_pairs_them():
    # 2048^3 on the promoted widths: 16 x 16 = 256 tiles of 128 x 128 (two rounds alone, or
    # two of 66 pairs: 179.2 * 2 = 358.4) against 16 x 11 = 176 of 192 (two rounds, 395.5):
    # launch_config pairs the 128-wide tiles; fp8 runs them alone (FP8_ALONE_WIDTHS)
    fp8, widths = "float8_e4m3fn", hopper.PROMOTED_TILE_NS
    assert hopper.FP8_ALONE_WIDTHS == (160, 128)
    assert launch_config(2048, 2048, 132, widths) == (128, 2)
    assert hopper.policy(2048, 2048, 2048, 132, fp8, widths) == (128, 1, 1)
    assert hopper.policy(1024, 4096, 4096, 132, fp8, widths) == (128, 1, 1)
    # bf16 pairs stay where launch_config pairs (1024 x 6144: 8 x 32 = 256 tiles of 192)
    assert hopper.policy(1024, 6144, 4096, 132) == launch_config(1024, 6144, 132) + (1,)
    assert launch_config(1024, 6144, 132)[1] == 2


@pytest.mark.parametrize(
    ("m", "n", "k", "tiled", "promoted", "width"),
    [
        # the five shapes where the model replaced promoted 128 x 128 tiles and the tiles ran
        # faster on the H200 (STREAM_K_NEVER_REPLACES_PROMOTED); unpromoted, the model's 192
        (512, 8192, 8192, (128, 1, 1), True, None),
        (512, 8192, 8192, (128, 1, 1), False, 192),
        (256, 8192, 28672, (128, 1, 1), True, None),
        (512, 4096, 14336, (128, 1, 1), True, None),
        (512, 8192, 28672, (128, 1, 1), True, None),
        (1024, 4096, 14336, (128, 1, 1), True, None),
        # a 192-wide tiled kernel: stream-K replaces it, promoted or not (1024 x 8192 x 28672:
        # 3.9 rounds of 128 x 192 pairs; ran 0.986 of cuBLASLt against 0.933 for 128 x 128)
        (1024, 8192, 28672, (192, 2, 1), True, 192),
    ],
)
def test_promoted_fp8_keeps_its_128_wide_tiles_from_stream_k(m, n, k, tiled, promoted, width):
    fp8, widths = "float8_e4m3fn", hopper.PROMOTED_TILE_NS
    assert hopper.policy(m, n, k, 132, fp8, widths) == tiled
    assert hopper.stream_k_policy(m, n, k, 132, fp8, widths, promoted) == width
    with pytest.raises(GemmShapeError, match=r"promoted is True or False, got 1"):
        hopper.stream_k_policy(m, n, k, 132, fp8, widths, 1)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0, 4096, 4096, 132), r"M and N as positive ints, got 0 x 4096"),
        ((256.0, 4096, 4096, 132), r"M and N as positive ints, got 256.0 x 4096"),
        ((True, 4096, 4096, 132), r"M and N as positive ints, got True x 4096"),
        ((256, 4096, 0, 132), r"split_count's k must be an integer >= 1, got 0"),
        ((256, 4096, 4096, 0), r"SM count as a positive int, got sms=0"),
        ((256, 4096, 4096, 132, "float16"), r"A and B as one of"),
        ((256, 4096, 4096, 132, "bfloat16", (100,)), r"widths are some of"),
    ],
)
def test_stream_k_policy_refuses_what_the_tiled_policy_refuses(args, match):
    with pytest.raises(GemmShapeError, match=match):
        hopper.stream_k_policy(*args)


def test_every_width_has_a_cost_and_96_fills_the_sms_where_128_leaves_a_quarter_idle():
    # launch_config's cost rounds x tile_n x WIDTH_COST on 132 SMs, worked by hand.
    # 256 x 6144: 128 wide 2 x 48 = 96 tiles, 1 round, 128 x 1.40 = 179.2; 96 wide 2 x 64 =
    # 128 tiles, 1 round, 96 x 1.75 = 168; 64 wide 192 tiles, 2 rounds, 243.2; 192 wide 64
    # tiles, 197.8; 240 wide 52 tiles, 242.4; 256 wide 48 tiles, 256: 96 wide, alone.
    # 128 x 10240: 80 tiles of 128 (179.2) against 107 of 96 (168), 54 of 192 (197.8): 96.
    # 512 x 6144: 96 wide needs 4 x 64 = 256 tiles, 2 rounds (336); 192 wide 128 tiles, 197.8
    assert set(hopper.WIDTH_COST) == set(hopper.POLICY_TILE_NS)
    assert set(gemm_plan.TILE_NS) - set(hopper.POLICY_TILE_NS) == {176, 32}
    assert launch_config(256, 6144, 132) == (96, 1)
    assert launch_config(128, 10240, 132) == (96, 1)
    assert launch_config(512, 6144, 132) == (192, 1)
    assert launch_config(256, 6144, 132, (256, 192, 128, 64)) == (128, 1)  # without 96


@pytest.mark.parametrize(
    ("m", "n", "k", "promoted", "width"),
    [
        # 1024^3 bf16, 16 K tiles: the tiled kernel's 128 tiles of 128 x 64 cost 16 x 64 x 1.9
        # = 1945.6 (no split: 128 tiles x 2 > 132; not stream-K: 6 steps a CTA < 64). 64-row
        # tiles: 16 x 8 = 128 of 64 x 128 in one round, 16 x 128 x 0.9 = 1843.2; 64 x 192:
        # 96 tiles, 16 x 153.6 = 2457.6; 64 x 256: 64 tiles, 2785.3; 64 x 96: 176 tiles, two
        # rounds: 3840. 1843.2 < 1945.6: 64 x 128 (the tile cuBLAS runs there)
        (1024, 1024, 1024, False, 128),
        # 8192^3: 4096 tiles of 64 x 256 are 32 rounds, 32 x 174.08 = 5570.6 a K step against
        # 16 rounds of 128 x 256 pairs, 4096: the 128-row tiles stay
        (8192, 8192, 8192, False, None),
        # fp8 promoted, 128 x 4096 x 4096 (32 K tiles of 128): 64 tiles of 128 x 64, 121.6 a K
        # step (2 ranges would write 8 * 2 * 128 * 4096 = 8.4 MB > 4.3 MB: no split); 64-row:
        # 128 tiles of 64 x 64, 64 x 1.5 = 96 (64 x 128: 115.2, 64 x 96: 120, 64 x 192: 172.8)
        (128, 4096, 4096, True, 64),
        # 256 x 4096 x 14336 bf16: policy's 128 x 128 tiles in 2 K ranges (2 x 32 x 2 = 128
        # units, one round: 224 / 2 x 179.2 = 20070) against 64-row tiles: 4 x 32 = 128 of
        # 64 x 128, 224 x 115.2 = 25805: the other policies stay (stream-K runs there)
        (256, 4096, 14336, False, None),
        # 256 x 8192 x 8192 bf16 (128 K tiles): policy's 128 tiles of 128 x 128, 128 x 179.2 =
        # 22938 (stream-K's model would say 16493 and run it); 4 x 32 = 128 tiles of 64 x 256,
        # 128 x 174.08 = 22282: 64 x 256 (64 x 128: 256 tiles, two rounds, 29491)
        (256, 8192, 8192, False, 256),
    ],
)
def test_rows64_width_runs_64_row_tiles_where_they_cost_less(m, n, k, promoted, width):
    widths = hopper.PROMOTED_TILE_NS if promoted else gemm_plan.TILE_NS
    dtype = "float8_e4m3fn" if promoted else "bfloat16"
    assert hopper.rows64_width(m, n, k, 132, dtype, widths, promoted) == width


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "64", None])
def test_rows64_width_refuses_what_is_not_a_positive_int(bad):
    for args in ((bad, 64, 64, 132), (64, bad, 64, 132), (64, 64, bad, 132), (64, 64, 64, bad)):
        with pytest.raises(GemmShapeError, match=r"rows64_width's (m|n|k|sms)"):
            hopper.rows64_width(*args)


def test_rows64_width_leaves_one_tile_of_m_to_the_other_policies():
    # x 8192 x 8192: launch_config's 128 tiles 64 wide cost 64 x 1.9 = 121.6 a K step, 64-row
    # tiles 128 wide 128 x 0.9 = 115.2 (64 of them for M <= 64, 128 for M = 65: one round
    # either way). M <= 64 is one 64-row tile already (a_rows 16, 32, 64): its width stays
    # launch_config's; M = 65 takes two 64-row tiles
    for m in (1, 16, 64):
        assert hopper.rows64_width(m, 8192, 8192, 132) is None
    assert hopper.rows64_width(65, 8192, 8192, 132) == 128


@pytest.mark.parametrize(
    ("m", "n", "k", "width"),
    [
        # one 64-row M tile (33 to 64 rows), unsplit: the widest width whose ceil(n / w) tiles
        # are at least 0.45 x 132 = 59.4 and at most 132. 6144: 64 x 96 gives 64 tiles (64 x
        # 128: 48, too few); 10240: 160 -> 64 (192: 54); 8192: 128 -> 64; 28672: 256 -> 112
        (64, 6144, 4096, 96),
        (33, 6144, 4096, 96),
        (64, 10240, 8192, 160),
        (64, 8192, 8192, 128),
        (64, 8192, 28672, 128),
        (64, 28672, 4096, 256),
        # the fill's edge: 60 x 128 columns give 60 tiles of 64 x 128 (>= 59.4); 59 x 128 give
        # 59 (< 59.4), then 64 x 96: ceil(7552 / 96) = 79
        (64, 60 * 128, 8192, 128),
        (64, 59 * 128, 8192, 96),
        # None: 57344 has no width in one round (256: 224 tiles); 4096 x 4096 and 4096 x 14336
        # split K (policy: 2 ranges); 32 or fewer rows load 16- or 32-row A stages; 65 rows
        # are two M tiles (rows64_width's)
        (64, 57344, 8192, None),
        (64, 4096, 4096, None),
        (64, 4096, 14336, None),
        (32, 6144, 4096, None),
        (16, 8192, 8192, None),
        (65, 6144, 4096, None),
    ],
)
def test_one_tile_width_takes_the_widest_tile_that_half_fills_the_sms(m, n, k, width):
    assert hopper.one_tile_width(m, n, k, 132) == width


def test_one_tile_width_counts_both_edges_of_the_round():
    # 20 SMs: 0.45 x 20 = 9 tiles exactly; 9 x 256 columns give 9 tiles of 64 x 256 (the
    # fill's edge, included), 8 x 256 give 8 (too few), then 64 x 240: ceil(2048 / 240) = 9.
    # 132 x 256 columns on 132 SMs: 132 tiles, exactly one round (included)
    assert hopper.one_tile_width(64, 9 * 256, 4096, 20) == 256
    assert hopper.one_tile_width(64, 8 * 256, 4096, 20) == 240
    assert hopper.one_tile_width(64, 132 * 256, 4096, 132) == 256


def test_one_tile_width_refuses_an_input_type_the_gemm_does_not_take():
    with pytest.raises(GemmShapeError, match="float16"):
        hopper.one_tile_width(64, 6144, 4096, 132, "float16")


def test_rows64_width_costs_bf16_unless_told_promoted():
    # 128 x 6144 x 4096: 2 x 64 tiles of 64 x 96 cost 96 x 1.15 = 110.4 a K step (bf16), one
    # round; 2 x 48 of 64 x 128, 128 x 0.90 = 115.2: 96 by default. Promoted fp8 costs the 96
    # column 1.25 (120): 128
    assert hopper.rows64_width(128, 6144, 4096, 132) == 96
    assert hopper.rows64_width(128, 6144, 4096, 132, promoted=True) == 128


def test_one_tile_width_leaves_fp8_to_the_other_policies():
    for promoted in (hopper.PROMOTED_TILE_NS, gemm_plan.TILE_NS):
        assert hopper.one_tile_width(64, 6144, 4096, 132, "float8_e4m3fn", promoted) is None


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "64", None])
def test_one_tile_width_refuses_what_is_not_a_positive_int(bad):
    for args in ((bad, 64, 64, 132), (64, bad, 64, 132), (64, 64, bad, 132), (64, 64, 64, bad)):
        with pytest.raises(GemmShapeError, match=r"one_tile_width's (m|n|k|sms)"):
            hopper.one_tile_width(*args)


@pytest.mark.parametrize(
    ("kwargs", "maps"),
    [
        ({}, ["tma_a", "tma_b", "tma_c"]),
        ({"cluster_m": 2, "tile_n": 192}, ["tma_a", "tma_b", "tma_c"]),
        ({"stream_k": True, "a_rows": 64}, ["tma_a", "tma_b", "tma_c"]),
        ({"split_k": True, "tile_n": 128}, ["tma_a", "tma_b"]),  # C goes to the workspace
    ],
)
def test_each_tensor_map_is_prefetched_once_before_the_first_load(kwargs, maps):
    # PTX ISA, "prefetch": prefetch.tensormap takes the map's generic address; one thread
    # issues it for each map the kernel reads, before the barrier set-up and the grid
    # dependency wait, so the first cp.async.bulk.tensor finds the descriptor cached
    src = hopper_gemm_persistent(**kwargs).source
    lines = src.splitlines()
    prefetched = [ln for ln in lines if "prefetch.tensormap" in ln]
    assert [ln.split('"l"(&')[1].split(")")[0] for ln in prefetched] == maps
    first_prefetch = src.index("prefetch.tensormap")
    assert first_prefetch < src.index("mbarrier.init") < src.index("griddepcontrol.wait;")
    assert src.rindex("prefetch.tensormap") < src.index("cp.async.bulk.tensor")
    before = src[:first_prefetch].rsplit("if (", 1)[1]
    assert before.startswith("((int)threadIdx.x == 0))")


@pytest.mark.parametrize("cluster_m", [1, 2])
def test_224_wide_bf16_kernel_compiles_without_spills(cluster_m):
    # 112 fp32 accumulators a thread of the consumer's 232 registers; ptxas must keep
    # setmaxnreg (C7508), not spill, and keep the wgmmas asynchronous (C7514)
    pytest.importorskip("cuda.core")
    info = _ptxas_info(hopper_gemm_persistent(cluster_m=cluster_m, tile_n=224))
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in info, info
    assert "C7508" not in info and "C7514" not in info, info


def test_fp8_32_wide_tiles_ring_fourteen_of_the_eighteen_stages_that_fit():
    # a stage: A 64 x 128 fp8 (8192 bytes, 64 rows whatever a_rows) + B 32 x 128 (4096) + two
    # 8-byte barriers = 12,304; C staging one consumer's two 64 x 32 bf16 tiles = 8192:
    # (232,448 - 8192) / 12,304 = 18.2 -> 18 fit (bf16 keeps them: 64 x 64 x 2 + 32 x 64 x 2,
    # the same bytes); fp8 keeps 14 (RING_CAPS), and 128-row tiles (two consumers) all
    bf16 = gemm_plan.stages("sm_90a", "bfloat16", 32, 64)
    assert (bf16.stages, bf16.bytes_used) == (18, 18 * 12_304 + 8192)
    for rows in (64, 32, 16, 8):
        assert gemm_plan.stages("sm_90a", "float8_e4m3fn", 32, rows).stages == 14
    # 128 rows: A 128 x 128 = 16 KiB a stage, C staging 2 x 2 x 4 KiB: (232,448 - 16,384) /
    # 20,496 = 10.5
    assert gemm_plan.ring_cap("float8_e4m3fn", 32, 128) is None
    assert gemm_plan.stages("sm_90a", "float8_e4m3fn", 32, 128).stages == 10


def test_fp8_64_wide_tiles_of_one_consumer_ring_ten_stages():
    # RING_CAPS: fp8 64-wide tiles that one consumer computes keep 10 of the 13 stages that
    # fit (a 64 x 128-byte A stage and B stage, 16 KiB + two barriers; 16 KiB of C staging:
    # 13 x 16,400 + 16,384 = 229,584 of 232,448 bytes); bf16 keeps 13, and 128-row fp8 tiles
    # (two consumers) all that fit
    assert gemm_plan.RING_CAPS == {("float8_e4m3fn", 64): 10, ("float8_e4m3fn", 32): 14}
    assert gemm_plan.stages("sm_90a", "bfloat16", 64, 32).stages == 13
    assert gemm_plan.stages("sm_90a", "bfloat16", 64, 32).bytes_used == 229_584
    for rows in (64, 32, 16, 8):
        assert gemm_plan.ring_cap("float8_e4m3fn", 64, rows) == 10
        assert gemm_plan.stages("sm_90a", "float8_e4m3fn", 64, rows).stages == 10
    assert gemm_plan.ring_cap("float8_e4m3fn", 64, 128) is None
    assert gemm_plan.stages("sm_90a", "float8_e4m3fn", 64, 128).stages == 8
    assert gemm_plan.ring_cap("float8_e4m3fn", 96, 64) is None
    assert gemm_plan.ring_cap("bfloat16", 64, 64) is None
    with pytest.raises(GemmShapeError, match="one of"):
        gemm_plan.ring_cap("float16", 64, 64)
    with pytest.raises(GemmShapeError, match="got 200"):
        gemm_plan.ring_cap("float8_e4m3fn", 200, 64)
    with pytest.raises(GemmShapeError, match="got 48"):
        gemm_plan.ring_cap("float8_e4m3fn", 64, 48)
    # refused whatever the row count, not only where a cap could apply
    with pytest.raises(GemmShapeError, match="one of"):
        gemm_plan.ring_cap("float16", 64, 128)
    with pytest.raises(GemmShapeError, match="got 200"):
        gemm_plan.ring_cap("bfloat16", 200, 128)
    source = hopper_gemm_persistent(
        dtype="float8_e4m3fn", tile_n=64, a_rows=32, promote=True, promote_every=2
    ).source
    assert "% 10)" in source and "% 13)" not in source
    plan = gemm_plan.hopper_gemm_persistent_plan("float8_e4m3fn", "sm_90a", 64, 32)
    assert plan.buffer("A").shape[0] == plan.buffer("B").shape[0] == 10


@pytest.mark.parametrize(
    ("m", "n", "dtype", "width"),
    [
        # fp8, M <= 64, ceil(N / 32) <= 132: 32-wide tiles
        (64, 4096, "float8_e4m3fn", 32),  # 128 tiles
        (16, 4096, "float8_e4m3fn", 32),
        (1, 9, "float8_e4m3fn", 32),
        (64, 4224, "float8_e4m3fn", 32),  # 132 tiles: one round exactly
        (64, 4225, "float8_e4m3fn", None),  # 133 tiles: a second round
        (64, 6144, "float8_e4m3fn", None),  # 192 tiles (measured slower: 0.876 against 1.113)
        (65, 4096, "float8_e4m3fn", None),  # two 64-row M tiles
        (64, 4096, "bfloat16", None),  # bf16 measured slower (0.904 against 0.921)
    ],
)
def test_narrow_width_takes_32_wide_tiles_for_fp8_products_of_one_small_m_tile(m, n, dtype, width):
    assert hopper.narrow_width(m, n, 132, dtype) == width
    auto = AutoGemm(dtype=dtype)
    auto.sms = 132
    config = auto.config(m, n, 4096)
    if width is None:
        assert config[0] != 32
    else:  # a_rows_for(M): 16 at least
        assert config == (32, 1, 1, max(16, 1 << (m - 1).bit_length()), False)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0, 4096, 132, "float8_e4m3fn"), "narrow_width's m"),
        ((64, 4096.0, 132, "float8_e4m3fn"), "narrow_width's n"),
        ((64, 4096, True, "float8_e4m3fn"), "narrow_width's sms"),
        ((64, 4096, 132, "float16"), "one of"),
    ],
)
def test_narrow_width_refuses_what_it_cannot_weigh(args, match):
    with pytest.raises(GemmShapeError, match=match):
        hopper.narrow_width(*args)


def test_pairs_176_weighs_the_176_wide_tile_at_192s_cost():
    # 512 x 28672 on 132 SMs (4 M tiles): 176 in pairs 2 x 163 = 326 units over 66, 5 rounds,
    # 5 x 176 x 1.03 = 906.4; 224 pairs 256 units, 4 rounds, 922.9; 240 4 x 240 x 1.01 = 969.6;
    # 256 4 x 256 = 1024; 192 5 x 192 x 1.03 = 988.8; 160 6 x 160 x 1.215 = 1166.4: 176 x 2
    assert hopper.PAIRS_176_COST == 1.03
    assert hopper.pairs_176(512, 28672, 132)
    assert not hopper.pairs_176(512, 28672, 132, (256, 224, 192))  # no 176 among the widths
    # 8192^3: 176 pairs 32 x 47 = 1504 units, 23 rounds, 4169.4 against 256's 16 x 256 = 4096
    assert not hopper.pairs_176(8192, 8192, 132)
    # one M tile: no pairs (256 x 28672 has two: 163 units, 3 rounds, 543.8 against 224's 461.4)
    assert not hopper.pairs_176(128, 28672, 132) and not hopper.pairs_176(256, 28672, 132)
    # with the trial cost only: launch_config itself does not weigh 176
    assert launch_config(512, 28672, 132) == (224, 2)
    assert launch_config(512, 28672, 132, costs={**hopper.WIDTH_COST, 176: 1.03}) == (176, 2)
    # in AutoGemm: in place of promoted fp8's 192-wide stream-K (512 x 28672 x 4096) and of
    # bf16's 224 alone; where 176 pairs do not win (4992 x 3072: 176 pairs 20 x 18 = 360 units,
    # 6 rounds) the stream-K stays
    fp8, bf16 = AutoGemm(dtype="float8_e4m3fn"), AutoGemm()
    fp8.sms = bf16.sms = 132
    assert fp8.config(512, 28672, 4096) == (176, 2, 1, 128, False)
    assert bf16.config(512, 28672, 4096) == (176, 2, 1, 128, False)
    assert fp8.config(4992, 3072, 2048) == (192, 1, 1, 128, True)


@pytest.mark.parametrize(
    "costs",
    [
        [1.0],  # no mapping
        {176: 0},
        {176: -1.03},
        {176: float("nan")},
        {176: float("inf")},
        {176: True},
        {176: "1.03"},
        {200: 1.0},  # no kernel width
        {"176": 1.0},
        {176: 1.03, 192: 0.0},  # one good entry does not make the others good
        {176: 1.03, 200: 1.0},
    ],
)
def test_launch_config_refuses_trial_costs_it_cannot_weigh(costs):
    with pytest.raises(GemmShapeError, match=r"costs map widths of .* to positive finite"):
        launch_config(512, 28672, 132, costs=costs)


@pytest.mark.parametrize(
    ("m", "n", "dtype", "width"),
    [
        # bf16, M <= 64, 59.4 (0.45 x 132) <= ceil(N / 64) <= 66: 64-wide tiles
        (64, 4096, "bfloat16", 64),  # 64 tiles
        (16, 4096, "bfloat16", 64),
        (64, 4224, "bfloat16", 64),  # 66: half the SMs exactly
        (64, 4225, "bfloat16", None),  # 67
        (64, 3840, "bfloat16", 64),  # 60
        (64, 3776, "bfloat16", None),  # 59 < 59.4
        (65, 4096, "bfloat16", None),  # two 64-row M tiles
        (64, 4096, "float8_e4m3fn", None),  # fp8 runs narrow_width's 32-wide tiles
    ],
)
def test_beside_width_takes_half_the_sms_for_bf16_products_of_one_small_m_tile(m, n, dtype, width):
    assert hopper.beside_width(m, n, 132, dtype) == width
    auto = AutoGemm(dtype=dtype)
    auto.sms = 132
    if width is not None:
        assert auto.config(m, n, 4096) == (64, 1, 1, max(16, 1 << (m - 1).bit_length()), False)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0, 4096, 132, "bfloat16"), "beside_width's m"),
        ((64, "4096", 132, "bfloat16"), "beside_width's n"),
        ((64, 4096, 0, "bfloat16"), "beside_width's sms"),
        ((64, 4096, 132, "int8"), "one of"),
    ],
)
def test_beside_width_refuses_what_it_cannot_weigh(args, match):
    with pytest.raises(GemmShapeError, match=match):
        hopper.beside_width(*args)


def test_beside_width_takes_a_grid_of_exactly_its_least_fill():
    # 20 SMs: 0.45 x 20 = 9.0 tiles at least, 10 at most; 576 = 9 x 64 columns: 9 tiles, taken
    assert hopper.beside_width(64, 576, 20) == 64
    assert hopper.beside_width(64, 512, 20) is None  # 8 tiles
    assert hopper.beside_width(64, 640, 20) == 64  # 10: half of them
    assert hopper.beside_width(64, 704, 20) is None  # 11


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0, 28672, 132), "positive ints"),
        ((512, 28672.0, 132), "positive ints"),
        ((512, 28672, True), "SM count"),
        ((512, 28672, 132, (200,)), "widths are some of"),
        ((512, 28672, 132, 176), "widths are some of"),
        ((-1, 28672, 132, (256, 224)), "positive ints"),  # refused without 176 too
    ],
)
def test_pairs_176_refuses_what_launch_config_refuses(args, match):
    with pytest.raises(GemmShapeError, match=match):
        hopper.pairs_176(*args)
