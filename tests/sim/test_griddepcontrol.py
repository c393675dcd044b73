"""``T.ptx.griddepcontrol.wait`` / ``.launch_dependents`` (tilemem.ir.intrinsics.grid). PTX ISA
9.0, "Parallel Synchronization and Communication Instructions: griddepcontrol": introduced in
PTX 7.8, "requires sm_90 or higher"; both take no operands. A grid launched without
programmatic serialization has no prerequisite grid, so ``wait`` returns at once; the
simulator runs one grid, so both leave the kernel's results and hazards as they are."""

from __future__ import annotations

import numpy as np
import pytest

import tilemem.sim as sim
from tilemem import T
from tilemem.errors import TargetError


def _kernel(target: str = "sm_90a"):
    @T.kernel(target=target, grid=2, block=64)
    def k(x: T.Buffer((128,), "int32"), y: T.Buffer((128,), "int32")):
        T.ptx.griddepcontrol.wait()
        T.ptx.griddepcontrol.launch_dependents()
        i = T.block_id() * 64 + T.thread_id()
        y[i] = x[i] * 3 + 1

    return k


@pytest.mark.parametrize("schedule", ["random", "adversarial"])
def test_the_kernel_computes_as_without_the_instructions(schedule):
    x = np.arange(128, dtype=np.int32) - 40
    y = np.zeros(128, np.int32)
    result = sim.run(_kernel(), x, y, schedule=schedule, seed=5)
    assert result.ok, result.hazards
    assert y.tolist() == [3 * v + 1 for v in range(-40, 88)]
    # each of the 4 warps (2 CTAs x 2) issues each instruction once
    assert result.instructions["ptx.griddepcontrol.wait"] == 4
    assert result.instructions["ptx.griddepcontrol.launch_dependents"] == 4


@pytest.mark.parametrize("target", ["sm_90a", "sm_90", "sm_100a", "sm_120"])
def test_sm_90_and_later_targets_have_them(target):
    source = _kernel(target).source
    assert 'asm volatile("griddepcontrol.wait;"' in source
    assert 'asm volatile("griddepcontrol.launch_dependents;"' in source


@pytest.mark.parametrize("target", ["sm_80", "sm_86", "sm_89"])
def test_earlier_targets_refuse_them_naming_the_targets_that_have_them(target):
    with pytest.raises(TargetError, match=f"griddepcontrol.wait does not exist on {target}") as e:
        _kernel(target)
    assert "sm_90" in str(e.value)
