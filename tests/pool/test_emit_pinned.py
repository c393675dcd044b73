"""The emitter seam: a pool made inside a kernel emits into it; once the kernel is built the
pools are plan-only again (docs/DESIGN.md#plan-only-use: plan-only mode outside any kernel)."""

import pytest

from tilemem import SMEMPool, T
from tilemem.errors import CapacityError
from tilemem.pool import current_emitter


def test_a_pool_made_after_a_kernel_is_plan_only():
    inside = []

    @T.kernel(target="sm_90a", block=128)
    def k(x: T.Buffer((1,), "float32")):
        smem = T.SMEMPool()
        inside.append(smem)
        smem.alloc((4,), "float32")
        smem.commit()

    assert inside[0].emitter is not None
    assert current_emitter() is None
    after = SMEMPool()
    assert (after.emitter, after.target) == (None, None)


def test_a_kernel_that_fails_leaves_plan_only_mode_behind():
    with pytest.raises(CapacityError):

        @T.kernel(target="sm_90a", block=128)
        def k(x: T.Buffer((1,), "float32")):
            smem = T.SMEMPool()
            smem.alloc((300 * 1024,), "uint8")
            smem.commit()  # 307,200 > 232,448 bytes

    assert current_emitter() is None
    assert SMEMPool().emitter is None
