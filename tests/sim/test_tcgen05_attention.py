"""The attention forward kernel (tilemem.kernels.attention_fwd) executed by the simulator.

Reference: S = Q K^T in float64 of the bf16 inputs (exact for small integers), P = bf16(S *
0.125) (the kernel's stand-in softmax), O = sum over KV blocks of P V, rounded to bf16 like
the kernel's output; integer inputs keep every fp32 partial sum exact, so O must match
exactly.

The kernel as shipped does not run right, and the simulator says why (kept as strict
xfails so that fixing the kernel turns them into failures to un-mark):
- Q, KV and O tiles are 128 bf16 = 256 bytes wide but are copied with one TMA box each
  (``T.ptx.tma.load`` / ``store``, not ``load_tile``): the 128B swizzle allows 64-element
  boxes, so half the expected transaction bytes never arrive and every warp deadlocks on
  ``q_full_bar`` ("mbarrier" hazard);
- with whole-tile copies, P_i (TMEM columns 64-127 of S_i) is stored 16 columns per
  32-column chunk of S_i in increasing chunk order, so chunks 0 and 1 overwrite S_i columns
  64-95 before chunk 2 reads them: a "race" on S0 / S1 between the tcgen05.st and the
  tcgen05.ld, and wrong numbers.
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


def whole_tile_copies(monkeypatch, reverse_chunks=False):
    """The attention kernel built with its single-box TMA copies made whole-tile copies and,
    with ``reverse_chunks``, its softmax walking S_i's chunks last to first (so every P
    store lands on S columns already read)."""
    load_tile, store_tile = T.ptx.tma.load_tile, T.ptx.tma.store_tile

    def load(tmap, dst, bar, coords, multicast_mask=None):
        buf, *lead = dst[:-2]
        load_tile(tmap, buf, bar, coords[1], coords[0], *lead)

    def store(tmap, src, coords):
        buf, lead = (src[0], src[1:-2]) if isinstance(src, tuple) else (src, ())
        store_tile(tmap, buf, coords[1], coords[0], *lead)

    tmem_addr = T.tmem_addr

    def reversed_chunks(buf, lane=0, col=0):
        if buf.name in ("S0", "S1"):  # 32-column chunks 0..3 -> 3..0
            col = 96 - col
        elif buf.name in ("P0", "P1"):  # 16-column chunks
            col = 48 - col
        return tmem_addr(buf, lane=lane, col=col)

    monkeypatch.setattr(T.ptx.tma, "load", load)
    monkeypatch.setattr(T.ptx.tma, "store", store)
    if reverse_chunks:
        monkeypatch.setattr(T, "tmem_addr", reversed_chunks)
    program = kernels.attention_fwd()
    _ = program.ir
    monkeypatch.undo()
    return program


@pytest.mark.xfail(strict=True, reason="single-box TMA copies of 256-byte rows: deadlock")
def test_attention_as_shipped_is_right():
    result, o, ref = run_attention(kernels.attention_fwd(), schedule="in-order")
    assert result.hazards == ()
    np.testing.assert_array_equal(o, ref)


@pytest.mark.xfail(strict=True, reason="P_i stored over S_i columns 64-95 before they are read")
def test_attention_with_whole_tile_copies_is_right(monkeypatch):
    result, o, ref = run_attention(whole_tile_copies(monkeypatch), schedule="in-order")
    assert result.hazards == ()
    np.testing.assert_array_equal(o, ref)


@pytest.mark.parametrize("schedule, seed, kv_blocks", [("adversarial", 0, 1), ("random", 2, 2)])
def test_attention_with_both_fixes_is_exact_without_hazards(monkeypatch, schedule, seed, kv_blocks):
    """S = Q K^T (A and B K-major from shared memory), P through tcgen05.ld/st, O += P V with
    P read from TMEM and V read MN-major: the whole tensor-core path of the kernel."""
    program = whole_tile_copies(monkeypatch, reverse_chunks=True)
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

    monkeypatch.setattr(T.ptx.tcgen05, "desc", desc)
    program = whole_tile_copies(monkeypatch, reverse_chunks=True)
    _, o, ref = run_attention(program, schedule="in-order")
    assert not np.array_equal(o, ref)
