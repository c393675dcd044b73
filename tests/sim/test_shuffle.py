"""``T.cuda.shfl_sync`` in the simulator: CUDA C++ Programming Guide, "Warp Shuffle
Functions": ``__shfl_sync(mask, var, srcLane)`` returns ``var`` as held by lane ``srcLane`` of
the calling thread's warp, and every lane named in ``mask`` (here all 32) must execute it."""

from __future__ import annotations

import numpy as np
import pytest

import tilemem.sim as sim
from tilemem import T
from tilemem.errors import IRError, SimError

from . import simkernels as kernels


@pytest.mark.parametrize("lane", [0, 5, 31])
def test_every_lane_gets_the_source_lanes_value(lane):
    out = np.full(128, -1, np.int32)
    result = sim.run(kernels.shuffle(lane), out)
    assert result.ok, result.hazards
    # thread t of warp w reads lane `lane` of warp w: thread 32 w + lane, which holds 7 x + 1
    warp = np.arange(128) // 32
    assert np.array_equal(out, 7 * (32 * warp + lane) + 1)


def test_a_shuffle_from_half_a_warp_is_refused():
    with pytest.raises(SimError, match="16 of 32 lanes active"):
        sim.run(kernels.shuffle(0, half_warp=True), np.zeros(128, np.int32))


@pytest.mark.parametrize("lane", [-1, 32, 1.0, "0"])
def test_a_lane_outside_the_warp_is_refused_when_the_kernel_is_built(lane):
    with pytest.raises(IRError, match=r"lane is an int in \[0, 32\)"):

        @T.kernel(target="sm_90a", grid=1, block=32)
        def k(out: T.Buffer((32,), "int32")):
            out[T.thread_id()] = T.cuda.shfl_sync(T.thread_id(), lane)


def test_the_generated_source_shuffles_with_the_full_mask():
    source = kernels.shuffle(5).source
    assert "__shfl_sync(0xffffffffu, (int)(" in source and "), 5)" in source


@pytest.mark.parametrize(
    "value",
    [1.5, True, 2**31, "T.cast(T.thread_id(), 'float32')", "T.thread_id() < 3"],
    ids=["float", "bool", "int64", "float32 expression", "bool expression"],
)
def test_a_value_that_is_not_a_32_bit_integer_is_refused(value):
    """The lowering passes the value through ``(int)``: a float or a 64-bit value would come
    back truncated, so it is refused when the kernel is built."""
    with pytest.raises(IRError, match=r"shfl_sync moves a 32-bit integer"):

        @T.kernel(target="sm_90a", grid=1, block=32)
        def k(out: T.Buffer((32,), "int32")):
            x = eval(value) if isinstance(value, str) else value
            out[T.thread_id()] = T.cuda.shfl_sync(x)


def test_uint32_bits_travel_whole():
    @T.kernel(target="sm_90a", grid=1, block=32)
    def k(out: T.Buffer((32,), "int32")):
        t = T.thread_id()
        out[t] = T.cuda.shfl_sync(T.cast(t, "uint32") + 0xFFFFFF00, 3)

    out = np.zeros(32, np.int32)
    assert sim.run(k, out).ok
    # lane 3 holds 0xFFFFFF03: as int32 bits, -253
    assert (out == np.int32(-253)).all()
