"""``atom.acq_rel.gpu.global.add.u32`` and ``fence.acq_rel.gpu`` (tilemem.ir.intrinsics.memory):
what the atomic returns, how it orders the CTAs around it in the simulator, its lowering and
its refusals.

Expected values come from the PTX ISA's definition of ``atom`` (9.7.13.5: "atomically loads
the original value at location a into destination register d, performs a reduction
operation with operand b and the value in location a, and stores the result"): the values
the threads get back are exactly 0 .. n - 1, once each, and the counter ends at n.
"""

from __future__ import annotations

import numpy as np
import pytest

import tilemem.sim as sim
from tilemem import T
from tilemem.cuda.codegen import generate
from tilemem.errors import IRError


def _counter_kernel(ctas: int, threads: int):
    @T.kernel(target="sm_90a", grid=ctas, block=threads)
    def k(ctr: T.Buffer((1,), "uint32"), got: T.Buffer(("n",), "uint32")):
        gid = T.block_id() * threads + T.thread_id()
        got[gid] = T.ptx.atom.add_acq_rel_gpu(ctr, 0, 1)

    return k


@pytest.mark.parametrize(("ctas", "sms", "mode"), [(1, 1, "random"), (4, 2, "adversarial")])
def test_every_thread_gets_a_distinct_previous_value(ctas, sms, mode):
    ctr = np.array([5], np.uint32)  # counting starts from what is there
    got = np.zeros(ctas * 64, np.uint32)
    result = sim.run(_counter_kernel(ctas, 64), ctr, got, sms=sms, schedule=mode, seed=1)
    assert result.ok, result.hazards  # atomics on one element are not races
    assert sorted(got.tolist()) == list(range(5, 5 + ctas * 64))
    assert ctr[0] == 5 + ctas * 64


def test_the_add_wraps_at_32_bits():
    ctr = np.array([0xFFFFFFFF], np.uint32)
    got = np.zeros(32, np.uint32)
    assert sim.run(_counter_kernel(1, 32), ctr, got).ok
    assert got.min() == 0 and got.max() == 0xFFFFFFFF and ctr[0] == 31


def _last_arriver(ctas: int, release_after_store: bool = True, acquire: bool = True):
    """Each CTA's thread 0 writes data[cta] = cta + 1 and counts its arrival; the CTA that
    reads ``ctas - 1`` adds all of data into total. Planted bugs: the store after the
    atomic (nothing released), or the sum read without looking at the count."""

    @T.kernel(target="sm_90a", grid=ctas, block=32)
    def k(
        data: T.Buffer(("ctas",), "uint32"),
        ctr: T.Buffer((1,), "uint32"),
        total: T.Buffer((1,), "uint32"),
    ):
        cta = T.block_id()
        with T.If(T.thread_id() == 0):
            if release_after_store:
                data[cta] = T.cast(cta + 1, "uint32")
                T.ptx.fence.acq_rel_gpu()
            seen = T.ptx.atom.add_acq_rel_gpu(ctr, 0, 1)
            if not release_after_store:
                data[cta] = T.cast(cta + 1, "uint32")
            with T.If(T.any_of(seen == ctas - 1, not acquire)):
                T.ptx.fence.acq_rel_gpu()
                acc = T.alloc_local(1, "uint32", name="acc")
                acc[0] = T.cast(0, "uint32")
                for i in range(ctas):
                    acc[0] = acc[0] + data[i]
                total[0] = acc[0]

    return k


@pytest.mark.parametrize(
    ("sms", "mode", "seed"), [(1, "random", 0), (4, "adversarial", 2), (4, "random", 7)]
)
def test_the_last_arriver_sees_every_share(sms, mode, seed):
    data, ctr, total = np.zeros(4, np.uint32), np.zeros(1, np.uint32), np.zeros(1, np.uint32)
    result = sim.run(_last_arriver(4), data, ctr, total, sms=sms, schedule=mode, seed=seed)
    assert result.ok, result.hazards
    assert total[0] == 1 + 2 + 3 + 4 and ctr[0] == 4


@pytest.mark.parametrize("seed", range(4))
def test_a_share_stored_after_the_atomic_is_a_race(seed):
    # the last arriver's acquire cannot see a store that its writer makes after its release
    data, ctr, total = np.zeros(4, np.uint32), np.zeros(1, np.uint32), np.zeros(1, np.uint32)
    kernel = _last_arriver(4, release_after_store=False)
    result = sim.run(kernel, data, ctr, total, sms=4, schedule="random", seed=seed)
    races = result.of_kind("race")
    assert races and all(h.space == "global" and h.buffer == "data" for h in races)


def test_reading_the_shares_without_the_count_is_a_race():
    data, ctr, total = np.zeros(4, np.uint32), np.zeros(1, np.uint32), np.zeros(1, np.uint32)
    result = sim.run(_last_arriver(4, acquire=False), data, ctr, total, sms=4, seed=0)
    assert {h.buffer for h in result.of_kind("race")} >= {"data"}


def test_an_index_outside_the_counters_is_out_of_bounds():
    @T.kernel(target="sm_90a", grid=1, block=32)
    def k(ctr: T.Buffer((2,), "uint32")):
        T.ptx.atom.add_acq_rel_gpu(ctr, T.thread_id(), 1)

    ctr = np.zeros(2, np.uint32)
    result = sim.run(k, ctr)
    oob = result.of_kind("out-of-bounds")
    assert oob and "element 2 of global ctr, which has 2" in oob[0].message
    assert ctr.tolist() == [1, 1]  # lanes 0 and 1 added; the others added nothing


def test_lowering_names_the_ptx_instructions():
    src = generate(_last_arriver(2).ir)
    assert "atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" in src
    assert 'asm volatile("fence.acq_rel.gpu;"' in src
    assert "tm_atom_add_acq_rel_gpu(&ctr[0], (uint32_t)(1u))" in src


def test_refusals():
    with pytest.raises(IRError, match=r"ctr holds int32.*'uint32'"):

        @T.kernel(target="sm_90a", grid=1, block=32)
        def bad_type(ctr: T.Buffer((1,), "int32")):
            T.ptx.atom.add_acq_rel_gpu(ctr, 0, 1)

    with pytest.raises(IRError, match=r"global uint32 buffer.*got SharedBuffer|global uint32"):

        @T.kernel(target="sm_90a", grid=1, block=32)
        def bad_space(out: T.Buffer((1,), "uint32")):
            smem = T.SMEMPool(name="smem")
            ctr = smem.alloc((1,), "uint32", name="ctr")
            smem.commit()
            T.ptx.atom.add_acq_rel_gpu(ctr, 0, 1)


def test_a_kernel_expression_as_the_value_is_added():
    # each of 32 threads adds its own index: 0 + 1 + ... + 31 = 496
    @T.kernel(target="sm_90a", grid=1, block=32)
    def k(ctr: T.Buffer((1,), "uint32")):
        T.ptx.atom.add_acq_rel_gpu(ctr, 0, T.cast(T.thread_id(), "uint32"))

    ctr = np.zeros(1, np.uint32)
    assert sim.run(k, ctr).ok
    assert ctr[0] == 496
