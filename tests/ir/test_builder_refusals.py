"""Refusals of the kernel builder that no other test reached: each names the buffer and what
to do instead, and nothing is built."""

from __future__ import annotations

import pytest

from tilemem import T
from tilemem.errors import IRError, PoolStateError


def test_a_global_buffer_indexed_with_the_wrong_number_of_indices():
    # x is (4, 8): two indices; one is refused with both counts
    with pytest.raises(IRError, match=r"x has 2 dimensions, indexed with 1"):

        @T.kernel(target="sm_90a", block=32)
        def k(x: T.Buffer((4, 8), "float32")):
            x[T.thread_id()] = 1.0


def test_a_shared_buffer_of_another_kernel_is_refused():
    # indexing it (the pool's path) and taking its address (the builder's) both refuse it
    held = {}

    @T.kernel(target="sm_90a", block=32)
    def first(x: T.Buffer((1,), "float32")):
        smem = T.SMEMPool()
        held["buf"] = smem.alloc((32,), "float32", name="theirs")
        smem.commit()

    with pytest.raises(PoolStateError, match=r"buffer 'theirs' here: it belongs to the pools of"):

        @T.kernel(target="sm_90a", block=32)
        def second(x: T.Buffer((1,), "float32")):
            smem = T.SMEMPool()
            smem.alloc((32,), "float32", name="mine")
            smem.commit()
            x[0] = held["buf"][T.thread_id()]

    with pytest.raises(IRError, match=r"buffer 'theirs' does not belong to this kernel's pools"):

        @T.kernel(target="sm_90a", block=32)
        def third(x: T.Buffer((1,), "float32")):
            smem = T.SMEMPool()
            smem.alloc((32,), "float32", name="mine")
            smem.commit()
            T.smem_addr(held["buf"])


def test_a_4_bit_buffer_is_read_through_a_byte_view():
    # two e2m1 values share a byte: an element load has no byte of its own
    with pytest.raises(
        IRError, match=r"f4 holds float4_e2m1fn, 4-bit elements packed .* uint8 view"
    ):

        @T.kernel(target="sm_100a", block=32)
        def k(x: T.Buffer((32,), "float32")):
            smem = T.SMEMPool()
            f4 = smem.alloc((32,), "float4_e2m1fn", name="f4")
            smem.commit()
            x[T.thread_id()] = T.cast(f4[T.thread_id()], "float32")


def test_a_run_time_tmem_stage_needs_an_integer_index():
    # stages of acc chosen by a float expression: no column arithmetic exists for it
    with pytest.raises(IRError, match=r"a TMEM stage index must be an integer expression"):

        @T.kernel(target="sm_100a", block=128)
        def k(x: T.Buffer((1,), "float32")):
            smem = T.SMEMPool()
            tmem = T.TMEMPool(smem, 512)
            acc = tmem.alloc((128, 512), name="acc")
            stages = tmem.stages(acc, 0, 128, 4)
            smem.commit()
            tmem.commit()
            stages[T.cast(T.thread_id(), "float32")]
            tmem.dealloc()
