"""The attention forward kernel (tilemem.kernels.attention_fwd) executed by the simulator.

Reference: S = Q K^T in float64 of the bf16 inputs (exact for small integers), P = bf16(S *
0.125) (the kernel's stand-in softmax), O = sum over KV blocks of P V, rounded to bf16 like
the kernel's output; integer inputs keep every fp32 partial sum exact, so O must match
exactly. Planted bugs: P stored over S in increasing chunk order (S columns overwritten
before they are read) and a wrong LBO on the MN-major V descriptor.

The simulator found two bugs in the kernel, both fixed in kernels.py: Q, KV and O tiles are
128 bf16 = 256 bytes wide but were copied with one 64-element TMA box each (half the expected
transaction bytes never arrived: every warp deadlocked on ``q_full_bar``, an "mbarrier"
hazard), and P_i (TMEM columns 64-127 of S_i) was stored chunk by chunk in increasing order,
overwriting S_i columns 64-95 before they were read (a "race" between tcgen05.st and
tcgen05.ld). The kernel now copies whole tiles and walks S_i's chunks last to first.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tilemem.sim as sim
from tilemem import T, examples, kernels
from tilemem.cuda.tma import tile_map

BF16 = ml_dtypes.bfloat16


def run_attention(program, kv_blocks=1, schedule="random", seed=0):
    smem = examples.attention_fwd_fa4(3, 128, target="sm_100a")
    q_buf, kv_buf, o_buf = smem.buffer("Q"), smem.buffer("KV"), smem.buffer("O_epilogue")
    rng = np.random.default_rng(seed)
    q = rng.integers(-2, 3, (256, 128)).astype(BF16)
    kv = rng.integers(-2, 3, (128 * kv_blocks, 128)).astype(BF16)
    o = np.zeros((256, 128), BF16)
    maps = tile_map(q, q_buf), tile_map(kv, kv_buf), tile_map(o, o_buf)
    result = sim.run(program, *maps, kv_blocks, schedule=schedule, seed=seed)
    ref = np.zeros((256, 128))
    for j in range(kv_blocks):
        block = kv[128 * j : 128 * (j + 1)].astype(np.float64)
        s = q.astype(np.float64) @ block.T
        p = (s.astype(np.float32) * np.float32(0.125)).astype(BF16).astype(np.float64)
        ref += p @ block
    return result, o.astype(np.float32), ref.astype(np.float32).astype(BF16).astype(np.float32)


def build(monkeypatch, owner=None, name=None, fn=None):
    """The attention kernel, built with one kernel-language name replaced (or as it is)."""
    if owner is not None:
        monkeypatch.setattr(owner, name, fn, raising=False)
    program = kernels.attention_fwd()
    _ = program.ir
    monkeypatch.undo()
    return program


def test_attention_as_shipped_is_right():
    """Whole-tile TMA copies of the 256-byte rows, P stored behind the reads of S."""
    result, o, ref = run_attention(kernels.attention_fwd(), schedule="in-order")
    assert result.hazards == ()
    np.testing.assert_array_equal(o, ref)


@pytest.mark.parametrize("schedule, seed, kv_blocks", [("adversarial", 0, 1), ("random", 2, 2)])
def test_attention_is_exact_without_hazards(monkeypatch, schedule, seed, kv_blocks):
    """S = Q K^T (A and B K-major from shared memory), P through tcgen05.ld/st, O += P V with
    P read from TMEM and V read MN-major: the whole tensor-core path of the kernel."""
    program = build(monkeypatch)
    result, o, ref = run_attention(program, kv_blocks, schedule, seed)
    assert result.hazards == ()
    np.testing.assert_array_equal(o, ref)


def test_a_wrong_lbo_on_the_mn_major_v_gives_wrong_numbers(monkeypatch):
    """V is read MN-major through two 128B swizzle atoms of head_dim: LBO is their distance
    (8 KiB here), and one 16-byte step more reads other bytes as V."""
    original = T.ptx.tcgen05.desc

    def desc(buf, *args, major="K"):
        right = original(buf, *args, major=major)
        return right ^ (1 << 16) if major == "MN" else right

    program = build(monkeypatch, T.ptx.tcgen05, "desc", desc)
    _, o, ref = run_attention(program, schedule="in-order")
    assert not np.array_equal(o, ref)


def test_p_stored_over_s_before_s_is_read(monkeypatch):
    """The softmax walking S's chunks first to last (``reversed`` undone): chunk 0's P store
    lands on S columns 64-79, which chunk 2 reads later."""
    program = build(monkeypatch, kernels, "reversed", lambda chunks: chunks)
    result, o, ref = run_attention(program, schedule="random")
    race = next(h for h in result.hazards if h.kind == "race")
    assert race.space == "tmem" and race.buffer in ("S0", "S1")
    assert {a.op.split(".")[1] for a in race.accesses} == {"ld", "st"}
    assert not np.array_equal(o, ref)
