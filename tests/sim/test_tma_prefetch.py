"""``T.ptx.tma.prefetch_descriptor`` (tilemem.ir.intrinsics.tma). PTX ISA 9.0, "prefetch,
prefetchu": ``prefetch{.tensormap_space}.tensormap [a]`` brings a tensor map into the cache
(introduced in PTX 8.0, requires sm_90 or higher); with no state space, ``a`` is a generic
address, here a ``__grid_constant__`` kernel parameter's. A cache hint: the simulator runs the
kernel as without it."""

from __future__ import annotations

import numpy as np
import pytest

import tilemem.sim as sim
from tilemem import T
from tilemem.cuda.tma import tile_map
from tilemem.errors import IRError, TargetError

from . import simkernels as kernels


@pytest.mark.parametrize("schedule", ["random", "adversarial"])
def test_a_prefetched_tma_roundtrip_computes_as_without_it(schedule):
    a = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    outs = []
    for prefetch in (False, True):
        k, buf = kernels.tma_roundtrip(prefetch=prefetch)
        out = np.full_like(a, -1.0)
        result = sim.run(k, tile_map(a, buf), tile_map(out, buf), 0, 0, schedule=schedule, seed=4)
        assert result.ok, result.hazards
        outs.append(out)
    assert np.array_equal(outs[0], a + 1) and np.array_equal(outs[1], a + 1)
    # thread 0 prefetches each of the two maps once
    assert result.instructions["ptx.tma.prefetch_descriptor"] == 2


def _kernel(target: str):
    @T.kernel(target=target, grid=1, block=32)
    def k(m: T.TensorMap, x: T.Buffer((1,), "float32")):
        T.ptx.tma.prefetch_descriptor(m)

    return k


@pytest.mark.parametrize("target", ["sm_90a", "sm_100a"])
def test_it_lowers_to_prefetch_tensormap_on_the_parameter_address(target):
    assert 'asm volatile("prefetch.tensormap [%0];" :  : "l"(&m) : "memory");' in (
        _kernel(target).source
    )


@pytest.mark.parametrize("target", ["sm_80", "sm_89"])
def test_targets_without_tma_refuse_it(target):
    with pytest.raises(TargetError, match=f"prefetch.tensormap does not exist on {target}"):
        _kernel(target)


def test_only_a_tensor_map_parameter_is_prefetched():
    with pytest.raises(IRError, match=r"prefetches a T.TensorMap kernel parameter, got"):

        @T.kernel(target="sm_90a", grid=1, block=32)
        def k(x: T.Buffer((1,), "float32")):
            T.ptx.tma.prefetch_descriptor(x)
