"""tilemem.sim on small kernels: values against numpy, and one planted bug per hazard kind,
each checked for its kind, buffer and the source lines of the accesses."""

from __future__ import annotations

import numpy as np
import pytest

import tilemem.sim as sim
from tilemem import T
from tilemem.cuda.tma import tile_map
from tilemem.errors import HazardError, IRError, SimError
from tilemem.ir.intrinsics import INTRINSICS
from tilemem.ir.intrinsics.tma import swizzle_address
from tilemem.layout.smem import SwizzleMode

from . import simkernels as kernels
from .simkernels import line

MODES = sim.SCHEDULES


def sources(h) -> set:
    return {a.source for a in h.accesses}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("seed", [0, 1])
def test_synchronised_exchange_is_clean_and_right(mode, seed):
    out = np.zeros(64, np.float32)
    result = sim.run(kernels.exchange(), out, schedule=mode, seed=seed)
    assert result.ok, result.hazards
    # out[t] = buf[63 - t] = 2 (63 - t), worked by hand
    assert np.array_equal(out, 2.0 * (63 - np.arange(64, dtype=np.float32)))
    assert result.instructions["cuda.syncthreads"] == 2  # one per warp


@pytest.mark.parametrize("mode", MODES)
def test_missing_syncthreads_is_a_race_naming_both_lines(mode):
    result = sim.run(kernels.exchange(sync=False), np.zeros(64, np.float32), schedule=mode)
    races = result.of_kind("race")
    assert races and all(h.buffer == "buf" and h.space == "shared" for h in races)
    assert any(sources(h) == {line("exchange-write"), line("exchange-read")} for h in races)
    with pytest.raises(HazardError, match="race"):
        result.raise_for_hazards()


def test_uninitialized_read():
    k = kernels.exchange(read_first=True)
    result = sim.run(k, np.zeros(64, np.float32), schedule="in-order")
    (h,) = result.of_kind("uninitialized")
    assert h.buffer == "buf" and sources(h) == {line("early-read")}
    # warp 0 runs first in order and reads buf[0..31] before any write: bytes 0..127
    assert h.where.startswith("bytes 0..127")


def test_out_of_bounds_shared_and_global():
    result = sim.run(kernels.exchange(oob=True), np.zeros(64, np.float32))
    (h,) = result.of_kind("out-of-bounds")
    # thread 63 stores buf[64]: bytes 256..259 of a 256-byte buffer
    assert h.buffer == "buf" and h.where == "bytes 256..259"
    assert sources(h) == {line("exchange-write")}
    result = sim.run(kernels.global_oob(), np.zeros(16, np.float32))
    (h,) = result.of_kind("out-of-bounds")
    assert h.space == "global" and h.buffer == "x" and h.where == "elements 16..31"
    assert sources(h) == {line("global-oob")}


def test_lifetime_inside_a_phase():
    k = kernels.phased("mainloop")
    out = np.zeros(32, np.float32)
    assert sim.run(k, out).ok
    assert np.array_equal(out, np.full(32, 2.0, np.float32))
    k = kernels.phased("epilogue")
    (h,) = sim.run(k, out).of_kind("lifetime")
    assert h.buffer == "stage" and sources(h) == {line("phased-write")}
    assert h.accesses[0].phase == "epilogue"


def test_phase_names_come_from_the_pools():
    with pytest.raises(IRError, match=r"phases \['mainloop', 'epilogue'\]"):
        kernels.phased("prologue")


def _roundtrip(k, buf, a, row0=0, col0=0, **kw):
    out = np.zeros_like(a)
    result = sim.run(k, tile_map(a, buf), tile_map(out, buf), row0, col0, **kw)
    return result, out


@pytest.mark.parametrize("swizzle", ["128B", "64B", "32B", "none"])
@pytest.mark.parametrize("mode", MODES)
def test_tma_roundtrip_through_swizzled_tiles(swizzle, mode):
    cols = {"128B": 32, "64B": 16, "32B": 8, "none": 32}[swizzle]
    k, buf = kernels.tma_roundtrip(swizzle=swizzle, cols=cols)
    a = np.arange(64 * cols, dtype=np.float32).reshape(64, cols)
    result, out = _roundtrip(k, buf, a, schedule=mode, seed=3)
    assert result.ok, result.hazards
    assert np.array_equal(out, a + 1)


def test_tma_fills_outside_with_zeros_and_clips_stores():
    k, buf = kernels.tma_roundtrip(rows=64, cols=32)
    a = np.arange(96 * 64, dtype=np.float32).reshape(96, 64)
    out = np.full_like(a, -1.0)
    # the tile at rows 64..127, cols 48..79 of a 96 x 64 tensor: rows >= 96 and cols >= 64 lie
    # outside, so the load reads zeros there and the store drops them
    result = sim.run(k, tile_map(a, buf), tile_map(out, buf), 64, 48)
    assert result.ok, result.hazards
    expect = np.full_like(a, -1.0)
    expect[64:96, 48:64] = a[64:96, 48:64] + 1
    assert np.array_equal(out, expect)


def test_tma_writes_swizzled_bytes_on_absolute_addresses():
    """The 128B swizzle XORs address bits 4-6 with bits 7-9: row r of a 128-byte-wide tile has
    its 16-byte chunks permuted by r % 8 (CUTLASS Swizzle<3,4,3>)."""
    # row 1, chunk 0 (bytes 128..143 of the box) lands at chunk 1 of row 1: byte 144
    assert swizzle_address(np.array([1024 + 128]), SwizzleMode.SWIZZLE_128B_ATOM)[0] == 1024 + 144
    # row 9 is row 1 of the next 1024-byte period: same permutation
    assert (
        swizzle_address(np.array([1024 + 9 * 128 + 32]), SwizzleMode.SWIZZLE_128B_ATOM)[0]
        == 1024 + 9 * 128 + 48
    )


def test_missing_proxy_fence():
    k, buf = kernels.tma_roundtrip(fence=False)
    a = np.ones((64, 32), np.float32)
    result, _ = _roundtrip(k, buf, a)
    (h,) = result.of_kind("proxy")
    assert h.buffer == "tile" and sources(h) == {line("tma-store"), line("bump")}


def test_expect_tx_bytes_off_never_balance():
    k, buf = kernels.tma_roundtrip(tx=4096)  # the tile is 64 x 32 x 4 = 8192 bytes
    result, _ = _roundtrip(k, buf, np.ones((64, 32), np.float32), schedule="adversarial")
    (h,) = result.of_kind("mbarrier")
    assert "tx-count -4096" in h.message and "full[0]" in h.message


def test_arrivals_that_never_balance():
    k, buf = kernels.tma_roundtrip(arrivals=2, wait=False, fence=True)
    result, _ = _roundtrip(k, buf, np.ones((64, 32), np.float32))
    h = result.of_kind("mbarrier")
    assert h and h[0].buffer == "full[0]" and "1 of 2 arrivals pending" in h[0].message


@pytest.mark.parametrize("mode", MODES)
def test_wrong_parity_wait_reads_before_the_load(mode):
    k, buf = kernels.tma_roundtrip(parity=1)
    result, _ = _roundtrip(k, buf, np.ones((64, 32), np.float32), schedule=mode)
    # either the wait passes at once and the tile is read before the load lands, or (the load
    # already done) it waits for a phase nobody completes
    early = result.of_kind("race") + result.of_kind("uninitialized")
    assert all(h.buffer == "tile" for h in early)
    stuck = [h for h in result.of_kind("deadlock") if "parity(1) on full[0]" in h.message]
    assert any(line("bump") in sources(h) for h in early) or (
        stuck and line("wait") in sources(stuck[0])
    )


def test_missing_wait_races_with_the_tma_load():
    k, buf = kernels.tma_roundtrip(wait=False)
    result, _ = _roundtrip(k, buf, np.ones((64, 32), np.float32), schedule="adversarial")
    races = [h for h in result.of_kind("race") if line("tma-load") in sources(h)]
    assert races and races[0].buffer == "tile" and line("bump") in sources(races[0])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("between", [0, 1, 2])
def test_two_tma_loads_of_one_thread_into_one_tile_race_unless_one_waits(mode, between):
    # PTX ISA, "cp.async.bulk.tensor": the copies a thread issues are asynchronous and
    # complete in no order among themselves; only the mbarrier's completion orders them.
    # ``between`` loads into other tiles go between the two (each of the four in flight has
    # an agent of its own)
    a = np.arange(128 * 32, dtype=np.float32).reshape(128, 32)
    k, buf = kernels.tma_twice(wait_between=False, between=between)
    result = sim.run(k, tile_map(a, buf), schedule=mode)
    (h,) = [h for h in result.of_kind("race") if h.buffer == "tile"]
    assert sources(h) == {line("twice-load-1"), line("twice-load-2")}
    k, buf = kernels.tma_twice(wait_between=True)
    result = sim.run(k, tile_map(a, buf), schedule=mode)
    assert result.ok, result.hazards


@pytest.mark.parametrize("mode", MODES)
def test_a_load_that_reuses_an_earlier_loads_agent_is_still_waited_for(mode):
    # in-order, the fifth load lands at its issue and the read comes after it: only the
    # load's own clock on its agent, past what the first load's wait acquired, tells that
    # the read is not ordered after it; later schedules find the read first
    a = np.arange(128 * 32, dtype=np.float32).reshape(128, 32)
    k, buf = kernels.tma_fifth(wait_last=False)
    result = sim.run(k, tile_map(a, buf), np.zeros(32, np.float32), schedule=mode)
    races = [h for h in result.of_kind("race") if h.buffer == "tile"]
    assert races and sources(races[0]) == {line("fifth-load"), line("fifth-read")}
    out = np.zeros(32, np.float32)
    k, buf = kernels.tma_fifth(wait_last=True)
    result = sim.run(k, tile_map(a, buf), out, schedule="adversarial")
    assert result.ok, result.hazards
    assert np.array_equal(out, a[64:96, 0])  # the fifth load's rows


def test_every_warp_and_queue_agent_has_a_thread_of_its_own():
    # the vector clocks' threads: each CTA of a wave has warps_per_cta warp threads, then one
    # row of warps_per_cta per queue agent (four for the TMA loads, last: they never read
    # shared memory, whose read clocks cover the rows before them); no two coincide, and all
    # of them index the clocks
    from tilemem.sim.machine import QUEUE_SLOTS, QUEUES, Machine

    assert QUEUE_SLOTS == {"tma": 4} and QUEUES[-1] == "tma"
    k, _ = kernels.tma_roundtrip()  # 128 threads: 4 warps
    m = Machine(k.ir, grid=(4, 1, 1), cluster=(2, 1, 1), sms=2, seed=0, schedule="in-order")
    assert m.warps_per_cta == 4 and m.threads_per_cta == 4 * (1 + 5 + 4)
    assert m.smem_readers == 4 * (1 + 5)
    assert m.nthreads == 2 * 2 * 4 * 10  # 2 SMs x a pair of CTAs
    assert min(m.agents(0, 0, "tma")) == m.smem_readers
    seen = []
    for cta in range(4):
        first = cta * m.threads_per_cta
        for warp in range(4):
            seen.append(first + warp)  # the warp's own thread
            for queue in QUEUES:
                agents = m.agents(first, warp, queue)
                assert len(agents) == QUEUE_SLOTS.get(queue, 1)
                seen += agents
    assert sorted(seen) == list(range(m.nthreads))


def test_deadlock_names_the_waiting_warp():
    result = sim.run(kernels.never_arrives(), np.zeros(64, np.float32))
    (h,) = result.of_kind("deadlock")
    assert "warp 1 waits: mbarrier.try_wait.parity(0) on ready[0]" in h.message
    assert sources(h) == {line("stuck")}


def test_same_seed_same_result():
    runs = [
        sim.run(kernels.exchange(sync=False), np.zeros(64, np.float32), seed=5) for _ in range(2)
    ]
    assert runs[0].hazards == runs[1].hazards and runs[0].instructions == runs[1].instructions


def test_an_intrinsic_without_semantics_is_a_sim_error(monkeypatch):
    spec = INTRINSICS["cuda.syncthreads"]
    monkeypatch.setitem(
        INTRINSICS, "cuda.syncthreads", type(spec)(**{**spec.__dict__, "sim": None})
    )
    with pytest.raises(SimError, match=r"cuda\.syncthreads"):
        sim.run(kernels.exchange(), np.zeros(64, np.float32))


def test_bad_arguments_are_refused():
    k = kernels.exchange()
    with pytest.raises(SimError, match="takes 1 arguments"):
        sim.run(k)
    with pytest.raises(SimError, match="schedule"):
        sim.run(k, np.zeros(64, np.float32), schedule="fifo")
    with pytest.raises(SimError, match="expected shape"):
        sim.run(k, np.zeros(65, np.float32))


def _staged(**kw):
    k, tile = kernels.staged_store(**kw)
    out = np.zeros((16, 64), np.float32)
    return sim.run(k, tile_map(out, tile), schedule="adversarial"), out


def test_staged_stores_are_clean_and_right():
    result, out = _staged()
    assert result.ok, result.hazards
    rows, cols = np.indices((16, 32))
    # store rep r of tile[t, j] = 32 t + j + r at columns 32 r .. 32 r + 31
    assert np.array_equal(out, np.hstack([32 * rows + cols, 32 * rows + cols + 1]))


def test_refill_before_the_store_read_it():
    result, _ = _staged(wait_before_reuse=False)
    races = [h for h in result.of_kind("race") if h.buffer == "tile"]
    assert races and any(sources(h) == {line("fill"), line("store")} for h in races)


@pytest.mark.parametrize("full_wait", [False, True])
def test_a_read_of_stored_bytes_needs_the_full_bulk_wait(full_wait):
    # cp.async.bulk.wait_group.read waits for the stores' reads of shared memory only (PTX
    # ISA, "cp.async.bulk.wait_group": with .read, "the reads from source locations ... have
    # completed"); the writes to global memory need the wait without it. A generic read of the
    # stored bytes after the .read wait races with the store; after the full wait it is clean
    k, tile = kernels.store_then_read(full_wait)
    out, back = np.zeros((16, 32), np.float32), np.zeros(16, np.float32)
    result = sim.run(k, tile_map(out, tile), out, back, schedule="adversarial")
    races = [h for h in result.of_kind("race") if h.buffer != "tile"]
    if full_wait:
        assert result.ok, result.hazards
        assert np.array_equal(back, 33 * np.arange(16, dtype=np.float32))
    else:
        assert races and all(sources(h) == {line("bulk-store"), line("read-back")} for h in races)


def test_named_barrier_short_of_warps_deadlocks():
    # bar.sync 1 expects 3 warps (96 threads) from a 2-warp block
    result, _ = _staged(threads_in_barrier=96)
    (h,) = result.of_kind("deadlock")
    assert "bar.sync 1: 2 of 3 warps arrived" in h.message
    assert line("named") in sources(h)


def test_named_barrier_reached_with_two_thread_counts():
    # warps 0 and 1 give bar.sync 2 64 threads, warp 2 gives it 32: what happens depends on
    # the order. Warp 2 first, or after both others: each meeting has one count and passes.
    # Warp 2 between them: its count disagrees with the generation's first (reported at its
    # arrival), it passes alone and the other warp of 0-1 waits in vain (a deadlock). Random
    # schedules find that order (seeds 1 and 6 of these 8)
    @T.kernel(target="sm_90a", grid=1, block=96)
    def k(out: T.Buffer((96,), "int32")):
        with T.If(T.warp_id() < 2):
            with T.Then():
                T.cuda.named_barrier(2, 64)
            with T.Else():
                T.cuda.named_barrier(2, 32)
        out[T.thread_id()] = T.thread_id()

    mismatch = "bar.sync 2 with 32 threads, where this generation was first reached with 64"
    caught = []
    for seed in range(8):
        result = sim.run(k, np.zeros(96, np.int32), schedule="random", seed=seed)
        assert all(h.kind == "deadlock" for h in result.hazards), result.hazards
        if any(mismatch in h.message for h in result.hazards):
            caught.append(seed)
            assert any("bar.sync 2: 1 of 2 warps arrived" in h.message for h in result.hazards)
    assert caught, "no schedule put warp 2 between warps 0 and 1"


def test_named_barrier_reused_with_another_count_in_a_later_generation():
    # bar.sync 2 first meets both warps (64 threads); once it has completed, warp 0 alone
    # reuses it with 32: a new generation, a new count, no hazard (and the value warp 1 wrote
    # before the first meeting is what warp 0 reads)
    @T.kernel(target="sm_90a", grid=1, block=64)
    def k(out: T.Buffer((64,), "int32")):
        smem = T.SMEMPool(name="smem")
        buf = smem.alloc((64,), "int32", name="buf")
        smem.commit()
        t = T.thread_id()
        buf[t] = t
        T.cuda.named_barrier(2, 64)
        with T.If(T.warp_id() == 0):
            T.cuda.named_barrier(2, 32)
            out[t] = buf[t + 32]

    out = np.zeros(64, np.int32)
    result = sim.run(k, out, schedule="adversarial")
    assert result.ok, result.hazards
    np.testing.assert_array_equal(out[:32], np.arange(32, 64))


@pytest.mark.parametrize(("offset", "bad"), [(-1, -1), (15, 16)])
def test_a_named_barrier_id_computed_outside_the_16_barriers_is_refused(offset, bad):
    # PTX ISA, "bar.sync": operand a is a barrier "with value 0 through 15", whether an
    # immediate (refused when the kernel is built) or a register (refused when it runs): one
    # barrier per warp, id warp + offset, reaches -1 for warp 0 or 16 for warp 1
    @T.kernel(target="sm_90a", grid=1, block=64)
    def k(out: T.Buffer((64,), "int32")):
        T.cuda.named_barrier(T.warp_id() + offset, 32)
        out[T.thread_id()] = T.thread_id()

    with pytest.raises(SimError, match=rf"bar\.sync: barrier id {bad} \(CTA \(0, 0, 0\) warp"):
        sim.run(k, np.zeros(64, np.int32))
    with pytest.raises(IRError, match=r"bar\.sync takes an id in"):
        T.cuda.named_barrier(16, 32)

    @T.kernel(target="sm_90a", grid=1, block=64)
    def ok(out: T.Buffer((64,), "int32")):  # ids 14 and 15: the edge of the range
        T.cuda.named_barrier(T.warp_id() + 14, 32)
        out[T.thread_id()] = T.thread_id()

    out = np.zeros(64, np.int32)
    assert sim.run(ok, out).ok
    np.testing.assert_array_equal(out, np.arange(64))


def test_arrive_on_an_uninitialised_mbarrier():
    result, _ = _staged(init=False)
    (h,) = result.of_kind("mbarrier")
    assert h.buffer == "done[0]" and sources(h) == {line("arrive")}


def test_bf16_arguments_as_ml_dtypes_or_as_bits():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    values = np.linspace(-3, 3, 64, dtype=np.float32)
    as_ml = values.astype(ml_dtypes.bfloat16)
    bits = as_ml.view(np.uint16).copy()  # the same numbers as their bit patterns
    assert sim.run(kernels.halve_bf16(), as_ml).ok
    assert sim.run(kernels.halve_bf16(), bits).ok
    # halving is exact in bf16 for these normal numbers
    expect = (values.astype(ml_dtypes.bfloat16).astype(np.float32) / 2).astype(ml_dtypes.bfloat16)
    assert np.array_equal(as_ml.view(np.uint16), expect.view(np.uint16))
    assert np.array_equal(bits, expect.view(np.uint16))


def test_a_phase_changes_no_generated_cuda():
    assert kernels.halve_bf16("epilogue").source == kernels.halve_bf16().source
    assert "phase epilogue:" in str(kernels.halve_bf16("epilogue").ir)
