"""``T.ptx.ld.wait_ge_acquire_gpu``: a thread spins on ``ld.acquire.gpu.global.u32`` until a
counter reaches a value (tilemem.ir.intrinsics.memory). What it must do comes from the PTX
ISA: ``ld`` with ``.acquire`` (9.7.9.8) reads the location and orders the thread's later
accesses after it, and in the memory consistency model (8.x, "release and acquire patterns")
a release (``fence.acq_rel`` followed by the atomic, here ``atom.acq_rel``) observed by an
acquire makes the writes before the release visible to what follows the acquire; ``bar.sync``
(9.7.13.1) extends that to the waiting thread's CTA. The comparison is unsigned (``.u32``).
"""

from __future__ import annotations

import numpy as np
import pytest

import tilemem.sim as sim
from tilemem import T
from tilemem.cuda.codegen import generate
from tilemem.errors import IRError

THREADS = 64


def _fixup(ctas: int, wait: bool = True, sync: bool = True):
    """CTAs 1.. write their share of ``data``, sync, fence and raise their flag; CTA 0's
    thread 0 waits for every flag, then (after bar.sync) each thread of CTA 0 adds the shares
    of its column. Planted bugs: no wait, or no bar.sync after the wait."""

    @T.kernel(target="sm_90a", grid=ctas, block=THREADS)
    def k(
        data: T.Buffer(("rows", THREADS), "uint32"),
        flags: T.Buffer(("ctas",), "uint32"),
        out: T.Buffer((THREADS,), "uint32"),
    ):
        cta, t = T.block_id(), T.thread_id()
        with T.If(cta > 0):
            with T.Then():
                data[cta, t] = T.cast(cta * 1000 + t, "uint32")
                T.cuda.syncthreads()
                with T.If(t == 0):
                    T.ptx.fence.acq_rel_gpu()
                    T.ptx.atom.add_acq_rel_gpu(flags, cta, 1)
            with T.Else():
                if wait:
                    with T.If(t == 0):
                        for peer in range(1, ctas):
                            T.ptx.ld.wait_ge_acquire_gpu(flags, peer, 1)
                if sync:
                    T.cuda.syncthreads()
                acc = T.alloc_local(1, "uint32", name="acc")
                acc[0] = T.cast(0, "uint32")
                for peer in range(1, ctas):
                    acc[0] = acc[0] + data[peer, t]
                out[t] = acc[0]

    return k


def _arrays(ctas: int):
    return (
        np.zeros((ctas, THREADS), np.uint32),
        np.zeros(ctas, np.uint32),
        np.zeros(THREADS, np.uint32),
    )


@pytest.mark.parametrize(("mode", "seed"), [("random", 0), ("adversarial", 3), ("random", 11)])
def test_the_waiting_cta_reads_every_peer_share(mode, seed):
    data, flags, out = _arrays(4)
    result = sim.run(_fixup(4), data, flags, out, sms=4, schedule=mode, seed=seed)
    assert result.ok, result.hazards
    t = np.arange(THREADS)
    assert out.tolist() == (1000 + t + 2000 + t + 3000 + t).tolist()  # 6000 + 3t
    assert flags.tolist() == [0, 1, 1, 1]


@pytest.mark.parametrize(("wait", "sync"), [(False, True), (True, False)])
def test_a_read_not_ordered_by_the_wait_is_a_race(wait, sync):
    """Without the wait nothing orders CTA 0's reads after the peers' writes; without the
    bar.sync only thread 0 acquired, and the other threads' reads are unordered."""
    data, flags, out = _arrays(3)
    result = sim.run(_fixup(3, wait, sync), data, flags, out, sms=3, schedule="adversarial")
    kinds = {h.kind for h in result.hazards}
    assert "race" in kinds, result.hazards
    assert any(h.buffer == "data" for h in result.hazards if h.kind == "race")


def test_waiting_for_a_cta_that_is_not_resident_is_a_deadlock():
    """With one SM the peers run only after CTA 0 retires, which never happens."""
    data, flags, out = _arrays(2)
    result = sim.run(_fixup(2), data, flags, out, sms=1)
    deadlocks = [h for h in result.hazards if h.kind == "deadlock"]
    assert deadlocks, result.hazards
    assert "flags[1] = 0 < 1" in str(deadlocks[0])


def _waiter(value: int):
    @T.kernel(target="sm_90a", grid=1, block=32)
    def k(flags: T.Buffer((1,), "uint32"), out: T.Buffer((1,), "uint32")):
        with T.If(T.thread_id() == 0):
            T.ptx.ld.wait_ge_acquire_gpu(flags, 0, value)
            out[0] = flags[0]

    return k


@pytest.mark.parametrize(
    ("cell", "value", "passes"),
    [
        (0, 0, True),  # every u32 is >= 0
        (7, 7, True),
        (7, 8, False),
        (0x80000000, 1, True),  # unsigned: a signed compare would read this as negative
        (1, 0xFFFFFFFF, False),
    ],
)
def test_the_comparison_is_unsigned_and_inclusive(cell, value, passes):
    flags, out = np.array([cell], np.uint32), np.zeros(1, np.uint32)
    result = sim.run(_waiter(value), flags, out)
    if passes:
        assert result.ok, result.hazards
        assert out[0] == cell
    else:
        assert [h.kind for h in result.hazards] == ["deadlock"]
        assert out[0] == 0


def test_lowering_spins_on_ld_acquire_gpu():
    src = generate(_fixup(2).ir)
    assert 'asm volatile("ld.acquire.gpu.global.u32 %0, [%1];"' in src
    assert "} while (seen < value);" in src
    assert "tm_wait_ge_acquire_gpu(&flags[" in src


@pytest.mark.parametrize(
    ("dtype", "value", "want"),
    [
        ("int32", 1, "works on uint32 counters, flags holds int32"),
        ("uint32", 1.5, "ld.acquire (wait)'s value must be an integer"),
        ("uint32", -1, "ld.acquire (wait)'s value is a 32-bit unsigned integer, got -1"),
    ],
)
def test_refusals_name_the_operand_and_the_fix(dtype, value, want):
    with pytest.raises(IRError, match=want.replace("(", r"\(").replace(")", r"\)")):
        if dtype == "int32":

            @T.kernel(target="sm_90a", grid=1, block=32)
            def k(flags: T.Buffer((1,), "int32")):
                T.ptx.ld.wait_ge_acquire_gpu(flags, 0, value)

        else:

            @T.kernel(target="sm_90a", grid=1, block=32)
            def k2(flags: T.Buffer((1,), "uint32")):
                T.ptx.ld.wait_ge_acquire_gpu(flags, 0, value)


def test_a_wait_outside_the_counters_is_out_of_bounds_and_does_not_block():
    @T.kernel(target="sm_90a", grid=1, block=32)
    def k(flags: T.Buffer((2,), "uint32")):
        with T.If(T.thread_id() == 0):
            T.ptx.ld.wait_ge_acquire_gpu(flags, 5, 1)

    result = sim.run(k, np.zeros(2, np.uint32))
    assert [h.kind for h in result.hazards] == ["out-of-bounds"]
    assert "ld.acquire at element 5 of global flags, which has 2" in str(result.hazards[0])
