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
from csource import asm_ops, evaluate, lets

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
