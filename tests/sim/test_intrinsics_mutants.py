"""Simulated semantics of small intrinsics that the kernels of the other simulator tests do not
reach: thread indices of 3-D blocks, named barriers with a run-time id, stmatrix, remote
mbarrier arrivals in a cluster, arrive.expect_tx from several threads, try_wait's value, and
integer wgmma with scale-d = 0.

Expected values come from the CUDA C++ Programming Guide ("Thread Hierarchy": x fastest, then
y, then z) and PTX ISA 9.0 (sections cited per test), worked out with numpy in the tests.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tilemem.sim as sim
from tilemem import T
from tilemem.cuda.tma import tile_map

from .hwfake import place
from .test_wgmma import A_BASE, B_BASE, fragment_of, simulate

BLOCK = (16, 2, 2)  # every axis > 1, x not a multiple of the others' product


def test_thread_indices_of_a_3d_block():
    """Thread (x, y, z) has linear index x + 16 (y + 2 z); T.thread_id(axis) reads x, y, z and
    T.warp_id / T.lane_id cut warps from the linear index."""

    @T.kernel(target="sm_90a", grid=1, block=BLOCK)
    def k(out: T.Buffer((64, 5), "int32")):
        x, y, z = T.thread_id(0), T.thread_id(1), T.thread_id(2)
        linear = x + 16 * (y + 2 * z)
        out[linear, 0] = x
        out[linear, 1] = y
        out[linear, 2] = z
        out[linear, 3] = T.warp_id()
        out[linear, 4] = T.lane_id()

    out = np.full((64, 5), -1, np.int32)
    assert sim.run(k, out).ok
    t = np.arange(64)
    want = np.stack([t % 16, (t // 16) % 2, t // 32, t // 32, t % 32], axis=1)
    np.testing.assert_array_equal(out, want)


def test_a_named_barrier_with_a_run_time_id():
    """Warps 0-1 meet at barrier 1 and warps 2-3 at barrier 2 (``bar.sync warp / 2 + 1, 64``):
    each warp reads what its partner wrote before the barrier."""

    @T.kernel(target="sm_90a", grid=1, block=128)
    def k(out: T.Buffer((128,), "float32")):
        smem = T.SMEMPool(name="smem")
        buf = smem.alloc((128,), "float32", name="buf")
        smem.commit()
        t = T.thread_id()
        buf[t] = T.cast(t, "float32")
        T.cuda.named_barrier(T.warp_id() // 2 + 1, 64)
        out[t] = buf[t ^ 32]  # the partner warp's lane

    out = np.zeros(128, np.float32)
    result = sim.run(k, out, schedule="adversarial")
    assert result.ok, result.hazards
    np.testing.assert_array_equal(out, np.arange(128) ^ 32)


def test_stmatrix_x4_places_rows_and_halves():
    """PTX ISA "stmatrix" (.m8n8.x4.b16): lane 8 i + r gives the address of row r of matrix i;
    lane l's word i holds the elements (row l / 4, columns 2 (l % 4), +1) of matrix i, low half
    first. Word i of lane l is (l * 16 + 2 i) | (l * 16 + 2 i + 1) << 16 here."""

    @T.kernel(target="sm_90a", grid=1, block=32)
    def k(out: T.Buffer((256,), "uint16")):
        smem = T.SMEMPool(name="smem")
        buf = smem.alloc((256,), "uint16", name="buf")
        smem.commit()
        lane = T.thread_id()
        base = lane * 16
        words = [(base + 2 * i) | ((base + 2 * i + 1) << 16) for i in range(4)]
        T.ptx.stmatrix_x4((buf, lane * 8), words)  # row (lane % 8) of matrix lane / 8
        T.cuda.syncthreads()
        for j in T.serial(8, name="j"):
            out[lane * 8 + j] = buf[lane * 8 + j]

    out = np.zeros(256, np.uint16)
    assert sim.run(k, out).ok
    want = np.zeros((4, 8, 8), np.int64)  # matrix, row, column
    for i in range(4):
        for r in range(8):
            for c in range(8):
                lane = 4 * r + c // 2
                want[i, r, c] = lane * 16 + 2 * i + c % 2
    np.testing.assert_array_equal(out, want.reshape(-1))


def test_remote_arrivals_reach_the_named_cta():
    """Lanes 0 and 1 of each CTA of a 2-CTA cluster arrive on the other CTA's mbarrier
    (init count 2: two arrivals complete phase 0); each CTA then waits on its own."""

    @T.kernel(target="sm_90a", grid=2, block=32, cluster=2)
    def k(out: T.Buffer((2,), "float32")):
        smem = T.SMEMPool(name="smem")
        pad = smem.alloc((4,), "uint64", name="pad")  # the barrier not at offset 0
        bar = smem.alloc((1,), "uint64", name="bar")
        smem.commit()
        rank = T.ptx.cluster.ctarank()
        with T.If(T.thread_id() == 0):
            T.ptx.mbarrier.init((bar, 0), 2)
            T.ptx.mbarrier.init((pad, 0), 1)
            T.ptx.fence.mbarrier_init()
        T.ptx.cluster.sync()
        with T.If(T.thread_id() < 2):
            T.ptx.mbarrier.arrive_cluster((bar, 0), 1 - rank)
        T.ptx.mbarrier.wait((bar, 0), 0)
        with T.If(T.thread_id() == 0):
            out[rank] = 1.0
        T.ptx.cluster.sync()

    out = np.zeros(2, np.float32)
    result = sim.run(k, out)
    assert result.ok, result.hazards
    assert out.tolist() == [1.0, 1.0]


def _two_expecters(holder: dict):
    """Threads 0 and 1 each announce half of a 4096-byte TMA load (arrive.expect_tx 2048, init
    count 2), thread 0 issues it; try_wait then reports the completed phase."""

    @T.kernel(target="sm_90a", grid=1, block=32)
    def k(tma_in: T.TensorMap, out: T.Buffer((2,), "float32")):
        smem = T.SMEMPool(name="smem")
        tile = smem.alloc_mma((32, 32), "float32", "128B", name="tile")
        bar = smem.alloc((1,), "uint64", name="full")
        smem.commit()
        holder["tile"] = tile
        t = T.thread_id()
        with T.If(t == 0):
            T.ptx.mbarrier.init((bar, 0), 2)
            T.ptx.fence.mbarrier_init()
        T.cuda.syncthreads()
        with T.If(t < 2):
            T.ptx.mbarrier.arrive_expect_tx((bar, 0), 2048)
        with T.If(t == 0):
            T.ptx.tma.load_tile(tma_in, tile, (bar, 0), 0, 0)
        T.ptx.mbarrier.wait((bar, 0), 0)
        with T.If(t == 0):
            out[0] = tile[31, 31]
            with T.If(T.ptx.mbarrier.try_wait_parity((bar, 0), 0)):
                out[1] = 1.0

    _ = k.ir
    return k


def test_expect_tx_of_several_threads_adds_up():
    # PTX ISA "mbarrier.expect_tx": each thread's expect-tx raises the tx-count by its own
    # bytes; 2 x 2048 balances the load's 4096 bytes, so phase 0 completes with no hazard.
    # try_wait.parity on a completed phase returns true ("mbarrier.test_wait/try_wait").
    holder: dict = {}
    k = _two_expecters(holder)
    a = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    out = np.zeros(2, np.float32)
    result = sim.run(k, tile_map(a, holder["tile"]), out)
    assert result.hazards == ()
    assert out.tolist() == [1023.0, 1.0]


def test_integer_wgmma_with_scale_d_zero_overwrites():
    """s8 x s8 with scale-d = 0 ("wgmma.mma_async": D = A B, the old D is not read) on
    accumulators holding 1000."""
    rng = np.random.default_rng(8)
    a = rng.integers(-128, 128, (64, 32)).astype(np.float32)
    b = rng.integers(-128, 128, (16, 32)).astype(np.float32)
    smem = np.zeros(1 << 17, np.uint8)
    a_desc = place(smem, A_BASE, a, "int8", "none", "K")
    b_desc = place(smem, B_BASE, b, "int8", "none", "K")
    d = a.astype(np.int64) @ b.T.astype(np.int64)
    init = np.full((64, 16), 1000)
    got = simulate(smem, a_desc, b_desc, 16, "int8", acc_type="int32", init=init, scale_d=0)
    for warp, regs in enumerate(got):
        np.testing.assert_array_equal(regs, fragment_of(d, warp, 16))


@pytest.mark.parametrize("scale_d", [1, 2])
def test_integer_wgmma_with_scale_d_adds(scale_d):
    """Any non-zero scale-d predicate accumulates: D = A B + D."""
    rng = np.random.default_rng(9)
    a = rng.integers(-128, 128, (64, 32)).astype(np.float32)
    b = rng.integers(-128, 128, (16, 32)).astype(np.float32)
    smem = np.zeros(1 << 17, np.uint8)
    a_desc = place(smem, A_BASE, a, "int8", "none", "K")
    b_desc = place(smem, B_BASE, b, "int8", "none", "K")
    init = rng.integers(-5000, 5000, (64, 16))
    d = init + a.astype(np.int64) @ b.T.astype(np.int64)
    got = simulate(smem, a_desc, b_desc, 16, "int8", acc_type="int32", init=init, scale_d=scale_d)
    for warp, regs in enumerate(got):
        np.testing.assert_array_equal(regs, fragment_of(d, warp, 16))


def _tmem_moves(lane_offset: int = 0):
    """Each warp, in its lane quarter (PTX ISA "tcgen05.ld": warp w reaches lanes 32 (w % 4)
    .. + 31), stores (t, 1000 + t) to columns 4-5 with .x2, then 2000 + t to column 5 with .x1
    from a 2-register array, loads column 5 with .x1 into a 2-register array holding 7, and
    columns 4-5 with .x2."""

    @T.kernel(target="sm_100a", grid=1, block=128)
    def k(out: T.Buffer((128, 4), "float32")):
        smem = T.SMEMPool(name="smem")
        tmem = T.TMEMPool(smem, 32, name="tmem")
        acc = tmem.alloc((128, 32), "float32", datapath="D", name="acc")
        smem.commit()
        tmem.commit()
        T.tmem_base(tmem)
        t = T.thread_id()
        lane = (T.warp_id() % 4) * 32 + lane_offset
        regs = T.alloc_local(2, "float32", name="regs")
        regs[0] = T.cast(t, "float32")
        regs[1] = T.cast(t + 1000, "float32")
        T.ptx.tcgen05.st(T.tmem_addr(acc, lane=lane, col=4), regs, num=2)  # @x2-st
        T.ptx.tcgen05.wait_st()
        regs[0] = T.cast(t + 2000, "float32")
        regs[1] = T.cast(t + 3000, "float32")
        T.ptx.tcgen05.st(T.tmem_addr(acc, lane=lane, col=5), regs, num=1)
        T.ptx.tcgen05.wait_st()
        regs[0] = 7.0
        regs[1] = 7.0
        T.ptx.tcgen05.ld(regs, T.tmem_addr(acc, lane=lane, col=5), num=1)
        T.ptx.tcgen05.wait_ld()
        out[t, 0] = regs[0]
        out[t, 1] = regs[1]
        T.ptx.tcgen05.ld(regs, T.tmem_addr(acc, lane=lane, col=4), num=2)
        T.ptx.tcgen05.wait_ld()
        out[t, 2] = regs[0]
        out[t, 3] = regs[1]
        T.ptx.tcgen05.fence_before_thread_sync()
        T.cuda.syncthreads()
        tmem.dealloc()

    return k


def test_tcgen05_ld_and_st_move_num_columns_only():
    out = np.zeros((128, 4), np.float32)
    result = sim.run(_tmem_moves(), out)
    assert result.ok, result.hazards
    t = np.arange(128)
    # .x1 at column 5 wrote 2000 + t and read it back into register 0 only (register 1 keeps
    # 7); column 4 still holds t, column 5 the .x1 store's 2000 + t (not 3000 + t)
    np.testing.assert_array_equal(out, np.stack([t + 2000, 0 * t + 7, t, t + 2000], axis=1))


def test_tcgen05_st_one_lane_past_the_quarter_is_out_of_bounds():
    # lanes 32 w + 1 .. 32 w + 32: lane 32 (w + 1) is the next warp's quarter
    result = sim.run(_tmem_moves(lane_offset=1), np.zeros((128, 4), np.float32))
    assert result.hazards
    for h in result.hazards:
        assert h.kind == "out-of-bounds" and h.space == "tmem"
        m = re.search(r"at TMEM lane (\d+): warp (\d) reaches only lanes (\d+)-(\d+)", h.message)
        assert m is not None, h.message
        lane, warp, lo, hi = (int(g) for g in m.groups())
        assert (lane, lo, hi) == (32 * warp + 1, 32 * warp, 32 * warp + 31)
        assert h.where == f"lanes {lane}-{lane + 31}"


@pytest.mark.parametrize("trans_a, trans_b", [(1, 0), (0, 1)])
def test_wgmma_reads_each_operand_with_its_own_major(trans_a, trans_b):
    """f16 with one operand MN-major and the other K-major ("wgmma.mma_async": imm-trans-a
    and imm-trans-b are separate): D = A B^T either way."""
    rng = np.random.default_rng(10 + trans_a)
    n, k = 32, 16
    a = rng.integers(-4, 5, (64, k)).astype(np.float32)
    b = rng.integers(-4, 5, (n, k)).astype(np.float32)
    smem = np.zeros(1 << 17, np.uint8)
    a_src, a_major = (np.ascontiguousarray(a.T), "MN") if trans_a else (a, "K")
    b_src, b_major = (np.ascontiguousarray(b.T), "MN") if trans_b else (b, "K")
    a_desc = place(smem, A_BASE, a_src, "float16", "64B", a_major)
    b_desc = place(smem, B_BASE, b_src, "float16", "64B", b_major)
    got = simulate(smem, a_desc, b_desc, n, "float16", trans_a=trans_a, trans_b=trans_b)
    d = a.astype(np.float64) @ b.T.astype(np.float64)
    for warp, regs in enumerate(got):
        np.testing.assert_array_equal(regs, fragment_of(d, warp, n).astype(np.float32))
