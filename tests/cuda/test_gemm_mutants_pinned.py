"""The persistent Hopper GEMM (``gemm/``) pinned where only a GPU, or a simulated grid of
many CTAs and tiles, would tell a wrong value: the tile schedule of every CTA, barrier
arrival counts, multicast shares, TMA coordinates and byte counts; and the host-side rules
no kernel run reaches.

The schedule and coordinates are read from the generated source and evaluated at chosen
block indices, grid sizes and loop counters (``csource``), so the pins hold numbers; every
expected value is worked out by hand from the kernel's design in a comment.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from csource import asm_ops, evaluate, run_lets, statements

from tilemem.errors import GemmShapeError
from tilemem.gemm import hopper
from tilemem.gemm import plan as gemm_plan
from tilemem.gemm.hopper import hopper_gemm_persistent, launch_config


def _source(cluster_m: int = 1, dtype: str = "bfloat16", tile_n: int = 256) -> str:
    # built for each test (milliseconds), never cached across tests: mutation testing picks
    # the tests that run a builder's lines, and a test reading an earlier test's build runs none
    print(f"building the persistent GEMM: cluster_m={cluster_m}, {dtype}, tile_n={tile_n}")
    return hopper_gemm_persistent(cluster_m, dtype, tile_n).source


# -- the tile schedule ------------------------------------------------------------------------


def _cta_tiles(src: str, cluster_m: int, grid: int, m_tiles: int, n_tiles: int, group_m: int):
    """{blockIdx.x: [(M tile, N tile) of its units, in order]}, as its producer and its
    consumers compute them (the two must agree)."""
    out = {}
    for bx in range(grid):
        base = {
            "bx": bx,
            "gx": grid,
            "tx": 128,
            "m_tiles": m_tiles,
            "n_tiles": n_tiles,
            "k_tiles": 1,
            "group_m": group_m,
            "cta_rank": bx % cluster_m,
            "t": 0,
            "t_1": 0,
            "kt": 0,
            "kt_1": 0,
        }
        count = run_lets(src, base)["my_units"]
        tiles = []
        for t in range(count):
            env = run_lets(src, {**base, "t": t, "t_1": t})
            m_name = "m_unit" if cluster_m == 1 else "m_tile"
            producer = (env[m_name], env["n_tile"])
            assert (env[m_name + "_1"], env["n_tile_1"]) == producer  # the consumers agree
            assert env["my_units_1"] == count
            tiles.append(producer)
        out[bx] = tiles
    return out


def test_grouped_tile_order_over_three_ctas():
    # 5 x 3 tiles in groups of 2 M tiles: every N tile of M tiles 0-1, then of 2-3, then of
    # the last M tile alone (group_rows = min(5 - 4, 2) = 1); within a group M runs fastest.
    # CTA c of 3 takes units c, c + 3, c + 6, ...
    order = [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]
    order += [(2, 0), (3, 0), (2, 1), (3, 1), (2, 2), (3, 2)]
    order += [(4, 0), (4, 1), (4, 2)]
    got = _cta_tiles(_source(1), 1, grid=3, m_tiles=5, n_tiles=3, group_m=2)
    assert got == {c: order[c::3] for c in range(3)}


def test_uneven_split_of_units_over_ctas():
    # 3 x 2 tiles, group_m 8 (one group: rows = min(3, 8) = 3), 4 CTAs: units 0-5 are
    # (0,0) (1,0) (2,0) (0,1) (1,1) (2,1); CTAs 0 and 1 take two units, 2 and 3 one
    got = _cta_tiles(_source(1), 1, grid=4, m_tiles=3, n_tiles=2, group_m=8)
    assert got == {0: [(0, 0), (1, 1)], 1: [(1, 0), (2, 1)], 2: [(2, 0)], 3: [(0, 1)]}


def test_cluster_pairs_take_adjacent_m_tiles_of_one_n_tile():
    # cluster_m 2: 5 M tiles make 3 M units (ceil(5 / 2)), 2 N tiles: 6 units in groups of
    # 2 M units: (0,0) (1,0) (0,1) (1,1), then M unit 2 alone: (2,0) (2,1). Cluster c (CTAs
    # 2c, 2c + 1) takes units c, c + 2, c + 4; rank r computes M tile 2 x unit + r (tile 5
    # lies past M: TMA clips its stores)
    got = _cta_tiles(_source(2), 2, grid=4, m_tiles=5, n_tiles=2, group_m=2)
    assert got == {
        0: [(0, 0), (0, 1), (4, 0)],
        1: [(1, 0), (1, 1), (5, 0)],
        2: [(2, 0), (2, 1), (4, 1)],
        3: [(3, 0), (3, 1), (5, 1)],
    }


def test_an_even_number_of_m_tiles_makes_whole_pairs():
    # 4 M tiles in pairs: ceil(4 / 2) = 2 M units, one N tile; one cluster (2 CTAs) takes
    # both units: rank r computes M tiles r and 2 + r, and nothing past M
    got = _cta_tiles(_source(2), 2, grid=2, m_tiles=4, n_tiles=1, group_m=8)
    assert got == {0: [(0, 0), (2, 0)], 1: [(1, 0), (3, 0)]}


def test_ring_slot_and_parity_run_on_across_tiles():
    # the ring is not reset between a CTA's tiles: K step kt of its t-th tile is step
    # t * k_tiles + kt overall, slot (that) mod 4 and parity (that / 4) mod 2, for the
    # producer and the consumers alike
    src = _source(1)
    for t, kt in [(0, 3), (1, 2), (2, 0), (3, 1)]:
        env = run_lets(
            src,
            {
                "bx": 0,
                "gx": 1,
                "tx": 128,
                "t": t,
                "t_1": t,
                "kt": kt,
                "kt_1": kt,
                "k_tiles": 3,
                "m_tiles": 4,
                "n_tiles": 1,
                "group_m": 8,
            },
        )
        step = 3 * t + kt
        assert (env["stage"], env["phase"]) == (step % 4, step // 4 % 2)
        assert (env["stage_1"], env["phase_1"]) == (step % 4, step // 4 % 2)


# -- barriers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("cluster_m", [1, 2, 4])
def test_barrier_counts_and_release_arrivals(cluster_m):
    # `full` completes on the producer's arrive.expect_tx; `empty` on one arrival from each
    # of the 2 consumer warpgroups of every CTA whose B share was multicast into the stage
    # (all cluster_m of them); a release arrives on that stage's `empty` in every CTA of the
    # cluster (ranks 0..cluster_m-1: lane r of the warpgroup's first warp on rank r, lanes
    # r < cluster_m only), once inside the K loop and once after it
    src = _source(cluster_m)
    inits = asm_ops(src, "mbarrier.init")
    counts = [(a.split("*)")[1].split(" ")[0], evaluate(c)) for a, c in inits]
    assert counts == [("full_bar", 1), ("empty_bar", 2 * cluster_m)] * 4
    if cluster_m == 1:
        assert len(asm_ops(src, "{\\n.reg .b64 st;\\nmbarrier.arrive.shared::cta")) == 2
        assert "mapa" not in src
    else:
        remote = asm_ops(src, "{\\n.reg .b32 remote;\\nmapa")
        assert len(remote) == 2
        for _, rank in remote:
            assert [evaluate(rank, tx=128 + t) for t in range(32)] == list(range(32))
        assert src.count(f"(((int)threadIdx.x % 32) < {cluster_m}))") == 2


@pytest.mark.parametrize(
    ("cluster_m", "dtype", "tile_n", "k_step", "stage_bytes"),
    [
        # a stage: A 128 rows and B tile_n rows of one 128-byte K row each
        (1, "bfloat16", 256, 64, 128 * 128 + 256 * 128),
        (2, "bfloat16", 256, 64, 128 * 128 + 256 * 128),
        (4, "float8_e4m3fn", 256, 128, 128 * 128 + 256 * 128),
        (2, "bfloat16", 192, 64, 128 * 128 + 192 * 128),
    ],
)
def test_loads_of_a_k_step(cluster_m, dtype, tile_n, k_step, stage_bytes):
    # K step kt reads K elements k_step * kt.. (128 bytes: 64 bf16 or 128 e4m3); A's rows of
    # M tile m; the CTA of rank r loads B rows n_tile * tile_n + r * tile_n / cluster_m..,
    # multicast to every CTA of the cluster (mask: all cluster_m bits)
    src = _source(cluster_m, dtype, tile_n)
    (expect,) = asm_ops(src, "{\\n.reg .b64 st;\\nmbarrier.arrive.expect_tx")
    assert evaluate(expect[1]) == stage_bytes
    env = {"kt": 3, "m_tile": 5, "m_unit": 5, "n_tile": 7, "cta_rank": cluster_m - 1}
    loads = asm_ops(src, "cp.async.bulk.tensor.2d.shared::cluster.global")
    (a_load,) = [op for op in loads if op[0] == "&tma_a"]
    (b_load,) = [op for op in loads if op[0] == "&tma_b"]
    assert [evaluate(c, **env) for c in a_load[3:5]] == [3 * k_step, 5 * 128]
    b_row = 7 * tile_n + (cluster_m - 1) * tile_n // cluster_m
    assert [evaluate(c, **env) for c in b_load[3:5]] == [3 * k_step, b_row]
    if cluster_m == 1:
        assert len(b_load) == 5 and "multicast" not in src
    else:
        assert evaluate(b_load[5]) == (1 << cluster_m) - 1


def test_c_slices_of_each_consumer():
    # consumer warpgroup w (1, 2) owns C rows m_tile * 128 + 64 (w - 1)..; its four slices
    # are columns n_tile * 256 + 64 j.., j = 0..3, alternating between its two staging tiles
    stores = asm_ops(_source(1), "cp.async.bulk.tensor.2d.global.shared::cta")
    assert len(stores) == 4
    for warpgroup in (1, 2):
        env = {"warpgroup": warpgroup, "m_unit_1": 5, "n_tile_1": 7}
        coords = [tuple(evaluate(c, **env) for c in op[2:4]) for op in stores]
        assert coords == [(7 * 256 + 64 * j, 5 * 128 + 64 * (warpgroup - 1)) for j in range(4)]


@pytest.mark.parametrize("cluster_m", [1, 2])
def test_barriers_are_initialised_fenced_and_synced_before_use(cluster_m):
    # PTX ISA, "mbarrier.init" / "fence.mbarrier_init": thread 0 initialises the 4 stages'
    # two barriers, fence.mbarrier_init.release.cluster makes the inits visible to TMA and to
    # the cluster's peers, then the block (cluster_m 1) or the whole cluster (barrier.cluster
    # arrive.release / wait.acquire) syncs before any thread or peer arrives on them
    stmts = statements(_source(cluster_m))
    first = stmts.index("mbarrier.init.shared::cta.b64")
    sync = (
        ["__syncthreads"]
        if cluster_m == 1
        else [
            "barrier.cluster.arrive.release",
            "barrier.cluster.wait.acquire",
        ]
    )
    block = ["mbarrier.init.shared::cta.b64"] * 8 + ["fence.mbarrier_init.release.cluster", "}"]
    assert stmts[first - 1 : first + 10 + len(sync)] == ["if", *block, *sync]
    assert "if (((int)threadIdx.x == 0)) {" in _source(cluster_m).split("mbarrier.init", 1)[0]


# -- the host side ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cluster_m", "dtype", "shape"),
    # B's rows split into cluster_m shares of one 128-byte K row each (64 bf16, 128 e4m3)
    [(1, "bfloat16", (256, 64)), (2, "bfloat16", (128, 64)), (4, "float8_e4m3fn", (64, 128))],
)
def test_b_share_is_this_ctas_rows_of_a_b_stage(cluster_m, dtype, shape):
    share = gemm_plan.b_share(cluster_m, dtype)
    assert (share.shape, share.dtype.name, share.nbytes) == (shape, dtype, shape[0] * 128)


@pytest.mark.parametrize(
    ("ctas", "cluster_m", "match"),
    [
        (0, 1, r"positive number of CTAs, got 0"),
        (-3, 2, r"positive number of CTAs, got -3"),
        (2.0, 1, r"positive number of CTAs, got 2.0"),
        (True, 1, r"positive number of CTAs, got True"),
        (1, 2, r"ctas=1 is below one cluster: .* clusters of 2, .* ctas >= 2"),
        (3, 4, r"ctas=3 is below one cluster: .* at least 4"),
    ],
)
def test_ctas_cap_is_refused_below_one_cluster(ctas, cluster_m, match):
    with pytest.raises(GemmShapeError, match=match):
        hopper._check_ctas(ctas, cluster_m)


@pytest.mark.parametrize(("ctas", "cluster_m"), [(None, 4), (1, 1), (2, 2), (5, 4)])
def test_ctas_cap_of_a_whole_cluster_or_more_is_taken(ctas, cluster_m):
    hopper._check_ctas(ctas, cluster_m)  # taken: returns without raising


@pytest.mark.parametrize("group_m", [0, -1, 2.5, "8", None])
def test_group_m_is_a_positive_int(group_m):
    with pytest.raises(GemmShapeError, match=r"group_m is a positive number of M tiles"):
        hopper._check_group_m(group_m)


def test_group_m_of_one_is_taken():
    hopper._check_group_m(1)  # taken: returns without raising


@pytest.mark.parametrize(
    ("m", "n", "sms", "match"),
    [
        (0, 256, 132, r"M and N as positive ints, got 0 x 256"),
        (128, 0, 132, r"got 128 x 0"),
        (128.0, 256, 132, r"got 128.0 x 256"),
        (128, 256, 0, r"SM count as a positive int, got sms=0"),
        (128, 256, 2.0, r"sms=2.0"),
    ],
)
def test_launch_config_refuses_what_is_not_a_shape(m, n, sms, match):
    with pytest.raises(GemmShapeError, match=match):
        launch_config(m, n, sms)


@pytest.mark.parametrize(
    ("m", "n", "sms", "config"),
    [
        # one SM cannot hold a pair: 4 x 2 tiles of 256 run alone, 8 rounds (2048)
        (512, 512, 1, (256, 1)),
        # exactly one wave: 2 x 1 tiles on 2 SMs run alone (a cluster only adds barriers)
        (256, 256, 2, (256, 1)),
    ],
)
def test_launch_config_small_machines(m, n, sms, config):
    assert launch_config(m, n, sms) == config


class _Interface:
    def __init__(self, shape, strides, typestr="<V2"):
        self.shape = shape
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "strides": strides}


@pytest.mark.parametrize(
    ("x", "row_major"),
    [
        (_Interface((4, 8), None), True),  # no strides: C order by the interface's rule
        (_Interface((4, 8), (16, 2)), True),
        (_Interface((4, 8), (32, 2)), False),  # padded rows
        (_Interface((1, 8), (999, 2)), True),  # one row: its stride is never used
        (_Interface((4, 8), (2, 8)), False),  # transposed
        (_Interface((4, 8), (32, 4), "<f4"), True),  # the element size from the type string
        (SimpleNamespace(is_contiguous=lambda: False), False),  # torch's own answer
        (SimpleNamespace(is_contiguous=lambda: True), True),
        (object(), True),  # unknown kind: passes to the tensor map's own checks
    ],
)
def test_row_major_reads_strides(x, row_major):
    assert hopper._row_major(x) is row_major


@pytest.mark.parametrize(
    ("dtype", "name"),
    [("torch.float8_e4m3fnuz", "float8_e4m3fnuz"), ("bfloat16", "bfloat16"), (None, "None")],
)
def test_dtype_name_drops_only_the_torch_prefix(dtype, name):
    assert hopper.dtype_name(SimpleNamespace(dtype=dtype)) == name


@pytest.mark.parametrize(
    ("kwargs", "a", "b", "c"),
    [
        # 128-row tiles alone: the plan's A stage (stages x 128 x 64 bf16) and C staging tile
        # (2 consumers x 2 buffers x 64 x 64), B whole (256 x 64)
        ({}, "A", (256, 64), "C_stage"),
        # pairs along M: each rank loads and multicasts 128 of B's 256 rows
        ({"cluster_m": 2}, "A", (128, 64), "C_stage"),
        # pairs along N: each rank loads 64 of A's 128 rows (the top-rows box)
        ({"cluster_n": 2}, (64, 64), (256, 64), "C_stage"),
        # 32-row tiles: A's top 32 rows; C's top 32 rows of a 64-column slice (c_box)
        ({"a_rows": 32}, (32, 64), (256, 64), (32, 64)),
        # fp8: K tiles of 128 one-byte elements; 64-row tiles store the staging tile whole
        ({"a_rows": 64, "dtype": "float8_e4m3fn"}, (64, 128), (256, 128), "C_stage"),
    ],
)
def test_tma_boxes_are_the_plan_buffers_or_their_top_rows(kwargs, a, b, c):
    kw = {"dtype": "bfloat16", "a_rows": 128, **kwargs}
    boxes = gemm_plan.tma_boxes(kw.pop("dtype"), 256, **kw)
    for box, want in ((boxes.a, a), (boxes.b, b), (boxes.c, c)):
        if isinstance(want, str):
            assert box.name == want
        else:
            assert tuple(box.shape) == want


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"dtype": "float16"}, "the GEMM takes A and B as one of"),
        ({"cluster_m": 0}, r"cluster_m is one of \(1, 2, 4\), got 0"),
        ({"cluster_m": 3}, r"cluster_m is one of \(1, 2, 4\), got 3"),
        ({"cluster_m": True}, r"cluster_m is one of \(1, 2, 4\), got True"),
        ({"cluster_m": -1}, r"cluster_m is one of \(1, 2, 4\), got -1"),
        ({"cluster_n": 0}, r"cluster_n is one of \(1, 2, 4\), got 0"),
        ({"cluster_n": 1.5}, r"cluster_n is one of \(1, 2, 4\), got 1.5"),
        ({"cluster_n": True}, r"cluster_n is one of \(1, 2, 4\), got True"),
        ({"cluster_m": 2, "cluster_n": 2}, "along M .* or along N .*, not both"),
        ({"a_rows": 48}, "a stage loads one of"),
        ({"a_rows": 16, "cluster_n": 4}, "a stage loads one of"),  # 4-row shares
        ({"tile_n": 100}, "one of"),
    ],
)
def test_tma_boxes_refuse_what_no_kernel_builds(kwargs, match):
    kw = {"dtype": "bfloat16", "tile_n": 256, **kwargs}
    with pytest.raises(GemmShapeError, match=match):
        gemm_plan.tma_boxes(kw.pop("dtype"), kw.pop("tile_n"), **kw)
