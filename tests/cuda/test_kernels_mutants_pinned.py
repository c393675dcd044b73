"""The built-in example kernels (``kernels.py``) pinned where only a GPU, or a simulated grid
of many CTAs, would tell a wrong value: barrier arrival counts, TMA coordinates of every
CTA, launch shapes.

Coordinates are read from the generated source and evaluated at chosen block indices and
loop counters, so the pins hold the numbers, not the emitter's spelling. Each expected value
is worked out from the kernel's design in a comment.
"""

from __future__ import annotations

import re

import pytest
from csource import asm_ops, evaluate, lets, statements

from tilemem.kernels import KERNELS


def _source(name: str) -> str:
    # built for each test (milliseconds), never cached across tests: mutation testing picks
    # the tests that run a builder's lines, and a test reading an earlier test's build runs none
    print(f"building the {name} example kernel")
    return KERNELS[name]().source


def barrier_counts(source: str) -> dict[str, list[int]]:
    """{barrier buffer: the arrival count each of its mbarriers is initialised with}."""
    counts: dict[str, list[int]] = {}
    for address, count in asm_ops(source, "mbarrier.init"):
        name = re.search(r"\(uint8_t\*\)(\w+) \+ (\d+)", address)
        assert name, address
        counts.setdefault(name.group(1), []).append(evaluate(count))
        assert int(name.group(2)) == 8 * (len(counts[name.group(1)]) - 1)  # 8 bytes apart
    return counts


# -- arrival counts ---------------------------------------------------------------------------


def test_hopper_example_barriers():
    # 4 stages; `full` completes on the producer's one arrive.expect_tx (plus the TMA bytes);
    # `empty` on one arrival from each of the two consumer warpgroups (an elected thread of
    # the warpgroup's first warp arrives after its wgmma group retired)
    assert barrier_counts(_source("hopper-gemm")) == {"full_bar": [1] * 4, "empty_bar": [2] * 4}


def test_blackwell_example_barriers():
    # `full`: the producer's arrive.expect_tx; `empty` and `acc_full`: one tcgen05.commit
    # each (a commit arrives once); `acc_empty`: each of the four epilogue warps arrives
    # once it drained its lane quarter. The accumulator is double-buffered: two of each.
    assert barrier_counts(_source("blackwell-gemm")) == {
        "full_bar": [1] * 4,
        "empty_bar": [1] * 4,
        "acc_full_bar": [1, 1],
        "acc_empty_bar": [4, 4],
    }


def test_nvfp4_example_barriers():
    # as the Blackwell GEMM, one accumulator
    assert barrier_counts(_source("nvfp4-gemm")) == {
        "full_bar": [1] * 4,
        "empty_bar": [1] * 4,
        "acc_full_bar": [1],
    }


def test_attention_example_barriers():
    # Q, S, P and O per softmax warpgroup (2), KV per stage (3); P is written by the 128
    # threads of a softmax warpgroup, each arriving once; every other barrier completes on
    # one arrive.expect_tx or one tcgen05.commit
    assert barrier_counts(_source("attention-fwd")) == {
        "q_full_bar": [1, 1],
        "kv_full_bar": [1] * 3,
        "kv_empty_bar": [1] * 3,
        "s_full_bar": [1, 1],
        "p_full_bar": [128, 128],
        "o_full_bar": [1, 1],
    }


# -- TMA coordinates of every CTA -------------------------------------------------------------

LOAD = "cp.async.bulk.tensor.2d.shared::cluster.global"
STORE = "cp.async.bulk.tensor.2d.global.shared::cta"


def _coords(ops: list[list[str]], tmap: str, n_coords: int = 2, **env: int) -> list[tuple]:
    """(coordinate, ...) of each TMA op on ``tmap``, evaluated with ``env``; the coordinates
    are the last ``n_coords`` operands (innermost dimension first, as TMA counts them)."""
    return [tuple(evaluate(c, **env) for c in op[-n_coords:]) for op in ops if op[0] == f"&{tmap}"]


@pytest.mark.parametrize("name", ["hopper-gemm", "blackwell-gemm"])
def test_gemm_examples_load_and_store_their_cta_tile(name):
    # grid (N / 256, M / 128): CTA (bx, by) computes C rows 128 by.., columns 256 bx..; K
    # tile kt starts at element 64 kt (64 bf16 = one 128-byte swizzle row); C leaves in four
    # 64-column slices
    src = _source(name)
    loads, stores = asm_ops(src, LOAD), asm_ops(src, STORE)
    env = {"bx": 3, "by": 5, "kt": 2}
    assert _coords(loads, "tma_a", **env) == [(128, 640)]
    assert _coords(loads, "tma_b", **env) == [(128, 768)]
    assert _coords(stores, "tma_c", **env) == [(768 + 64 * j, 640) for j in range(4)]
    assert len(loads) == 2 and len(stores) == 4


def test_nvfp4_example_loads_and_stores_its_cta_tile():
    # K tile kt: 256 fp4 elements (128 bytes) of A and B from element 256 kt; their scale
    # factors, one per 16 elements, from factor 16 kt; C leaves in eight 32-column slices
    src = _source("nvfp4-gemm")
    loads, stores = asm_ops(src, LOAD), asm_ops(src, STORE)
    env = {"bx": 3, "by": 5, "kt": 2}
    assert _coords(loads, "tma_a", **env) == [(512, 640)]
    assert _coords(loads, "tma_b", **env) == [(512, 768)]
    assert _coords(loads, "tma_sfa", **env) == [(32, 640)]
    assert _coords(loads, "tma_sfb", **env) == [(32, 768)]
    assert _coords(stores, "tma_c", **env) == [(768 + 32 * j, 640) for j in range(8)]


def test_attention_example_loads_and_stores_its_query_rows():
    # CTA bx owns query rows 256 bx.. as two 128-row tiles, each loaded and stored as two
    # 64-column boxes (head_dim 128 = two 128-byte swizzle rows of bf16); KV block j is rows
    # 128 j.. of the KV matrix, also two 64-column boxes
    src = _source("attention-fwd")
    loads, stores = asm_ops(src, LOAD), asm_ops(src, STORE)
    env = {"bx": 3, "j": 2}
    rows = [768, 768 + 128]
    q_boxes = [(col, row) for row in rows for col in (0, 64)]
    assert _coords(loads, "tma_q", **env) == q_boxes
    assert _coords(loads, "tma_kv", **env) == [(0, 256), (64, 256)]
    assert _coords(stores, "tma_o", **env) == q_boxes


@pytest.mark.parametrize(
    ("name", "threads"),
    [("hopper-gemm", 384), ("blackwell-gemm", 256), ("nvfp4-gemm", 256), ("attention-fwd", 512)],
)
def test_example_kernels_launch_their_warp_roles(name, threads):
    # hopper: a producer and two consumer warpgroups (3 x 128); blackwell and nvfp4: warps
    # 0-3 (load, MMA) and 4-7 (epilogue); attention: load/MMA, two softmax warpgroups and
    # the epilogue warpgroup (4 x 128); one CTA each in these one-tile examples
    header = f"// grid (1, 1, 1), block ({threads}, 1, 1),"
    assert header in _source(name)


# -- ring slots and their parities ------------------------------------------------------------


def _over_counter(expr: str, steps: int) -> list[int]:
    """``expr`` (in one loop counter) evaluated at counter 0, 1, ..., steps - 1."""
    (counter,) = set(re.findall(r"\b[a-z_]+(?:_\d+)?\b", expr)) - {"int"}
    return [evaluate(expr, **{counter: i}) for i in range(steps)]


@pytest.mark.parametrize(
    ("name", "stages", "rings"),
    [
        ("hopper-gemm", 4, 2),
        ("blackwell-gemm", 4, 2),
        ("nvfp4-gemm", 4, 2),
        ("attention-fwd", 3, 2),
    ],
)
def test_ring_slot_and_parity_of_every_k_step(name, stages, rings):
    # step i uses slot i mod stages; an mbarrier's phase completes once per pass over the
    # ring, so the parity to wait for is the pass number mod 2 (PTX ISA, mbarrier phases);
    # both the producer's and the consumer's loop compute them
    src = _source(name)
    slots, parities = lets(src, "stage"), lets(src, "phase")
    assert len(slots) == len(parities) == rings
    steps = 4 * stages  # four passes: parity 0, 1, 0, 1
    for expr in slots:
        assert _over_counter(expr, steps) == [i % stages for i in range(steps)]
    for expr in parities:
        assert _over_counter(expr, steps) == [(i // stages) % 2 for i in range(steps)]


def test_nvfp4_scale_factors_alternate_between_two_tmem_column_sets():
    # alloc_sf double-buffers the factors in TMEM: K tile kt copies into set kt mod 2 while
    # the MMAs of tile kt - 1 may still read the other
    (expr,) = lets(_source("nvfp4-gemm"), "sf_stage")
    assert _over_counter(expr, 6) == [0, 1, 0, 1, 0, 1]


# -- ordering: barrier init, tcgen05 fences, wgmma fences ------------------------------------

INIT = "mbarrier.init.shared::cta.b64"
AFTER_SYNC = "tcgen05.fence::after_thread_sync"


@pytest.mark.parametrize(
    ("name", "barriers"),
    [("hopper-gemm", 8), ("blackwell-gemm", 12), ("nvfp4-gemm", 9), ("attention-fwd", 14)],
)
def test_barriers_are_initialised_fenced_and_synced_before_use(name, barriers):
    # PTX ISA, "mbarrier.init" / "fence.mbarrier_init": one thread initialises every barrier,
    # fence.mbarrier_init.release.cluster makes the inits visible to the TMA unit's and
    # tcgen05.commit's arrivals, and a CTA barrier orders them before any thread's wait
    stmts = statements(_source(name))
    first = stmts.index(INIT)
    assert stmts[first - 1] == "if"
    block = stmts[first : first + barriers + 3]
    assert block == [INIT] * barriers + [
        "fence.mbarrier_init.release.cluster",
        "}",
        "__syncthreads",
    ]
    assert stmts.count(INIT) == barriers
    # by thread 0, as _init_barriers says: the line before the first init opens its block
    head = _source(name).split(INIT, 1)[0].splitlines()
    assert head[-2].strip() == "if (((int)threadIdx.x == 0)) {"


@pytest.mark.parametrize(
    ("name", "fenced"),
    [
        ("blackwell-gemm", {"full_bar": 1, "acc_full_bar": 1}),
        ("nvfp4-gemm", {"full_bar": 1, "acc_full_bar": 1}),
        ("attention-fwd", {"kv_full_bar": 1, "s_full_bar": 2, "p_full_bar": 2, "o_full_bar": 1}),
    ],
)
def test_tcgen05_work_after_a_wait_is_fenced(name, fenced):
    # PTX ISA, "tcgen05.fence": tcgen05 operations that follow a thread synchronisation (an
    # mbarrier wait on TMA data or on a tcgen05.commit) need tcgen05.fence::after_thread_sync
    # between the wait and them; the producer's waits for a free stage issue only TMA
    stmts = statements(_source(name))
    waits: dict[str, int] = {}
    for i, stmt in enumerate(stmts):
        barrier = stmt.removeprefix("wait ")
        if stmt.startswith("wait ") and barrier in fenced:
            assert stmts[i + 1] == AFTER_SYNC, (barrier, stmts[i : i + 3])
            waits[barrier] = waits.get(barrier, 0) + 1
    assert waits == fenced  # each wait site appears in the source that many times


@pytest.mark.parametrize("name", ["blackwell-gemm", "nvfp4-gemm", "attention-fwd"])
def test_tmem_is_freed_after_every_warps_tcgen05_work(name):
    # PTX ISA, "tcgen05.dealloc" and "tcgen05.fence": the warps' tcgen05 operations are
    # ordered before the CTA barrier by tcgen05.fence::before_thread_sync; only then does the
    # allocating warp give the columns back
    stmts = statements(_source(name))
    last = len(stmts) - 1 - stmts[::-1].index("tcgen05.fence::before_thread_sync")
    assert stmts[last + 1 : last + 3] == ["__syncthreads", "if"]
    assert stmts[last + 3 : last + 5] == [
        "tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned",
        "tcgen05.dealloc.cta_group::1.sync.aligned.b32",
    ]


def test_hopper_example_consumer_k_tile():
    # the 128 accumulators of m64n256 (N / 2 a thread, PTX ISA "wgmma register fragments")
    # start at zero; per K tile: wait for the stage, wgmma.fence (orders the register
    # writes before wgmma reads them), four k16 wgmma over the 64-wide K tile, commit, wait
    # for all (0 pending) before the stage is given back; the epilogue starts after a CTA
    # barrier, as it reuses the stages' bytes
    src = _source("hopper-gemm")
    assert "float acc[128];\n" in src
    assert "for (int r = 0; r < 128; ++r) {\n      acc[r] = 0.0f;\n" in src
    stmts = statements(src)
    k_tile = stmts.index("wait full_bar")
    mma = "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"
    assert stmts[k_tile : k_tile + 10] == [
        "wait full_bar",
        "wgmma.fence.sync.aligned",
        *[mma] * 4,
        "wgmma.commit_group.sync.aligned",
        "wgmma.wait_group.sync.aligned",
        "if",
        "mbarrier.arrive.shared::cta.b64",
    ]
    assert "wgmma.wait_group.sync.aligned 0;" in src
    assert stmts[k_tile + 10 : k_tile + 14] == ["}", "}", "}", "__syncthreads"]
