"""Pools inside @T.kernel: kernels that would be broken are refused, errors keep their class.

Each test pins a fix; the numbers come from the CUDA C++ Programming Guide (1024 threads per
block, warps cut from the linear thread index) and PTX ISA 9.0 (tcgen05.dealloc before exit).
"""

import pytest

from tilemem import T
from tilemem.errors import AllocationError, CapacityError, PoolStateError
from tilemem.ir import IRError
from tilemem.ir.interpret import interpret
from tilemem.ir.nodes import BinOp, Var


def test_an_uncommitted_smem_pool_is_refused():
    with pytest.raises(PoolStateError, match="0 bytes of dynamic shared memory"):

        @T.kernel(target="sm_90a", block=128)
        def k(x: T.Buffer((1,), "float32")):
            smem = T.SMEMPool()
            tile = smem.alloc((128,), "float32")
            tile[T.thread_id()] = x[0]


def test_tmem_never_deallocated_is_refused():
    with pytest.raises(PoolStateError, match="never deallocated"):

        @T.kernel(target="sm_100a", block=128)
        def k(x: T.Buffer((1,), "float32")):
            smem = T.SMEMPool()
            tmem = T.TMEMPool(smem, 512)
            smem.commit()
            tmem.commit()


def test_an_alloc_warp_outside_the_block_is_refused():
    with pytest.raises(AllocationError, match=r"alloc_warp=4 is outside the block: 128 threads"):

        @T.kernel(target="sm_100a", block=128)
        def k(x: T.Buffer((1,), "float32")):
            T.TMEMPool(T.SMEMPool(), 32, alloc_warp=4)


def test_more_than_1024_threads_is_refused():
    with pytest.raises(
        IRError, match=r"block \(32, 33, 1\) has 1056 threads; sm_90a allows at most"
    ):

        @T.kernel(target="sm_90a", block=(32, 33))
        def k(x: T.Buffer((1,), "float32")):
            pass


def test_the_warp_guard_counts_warps_over_all_block_dimensions():
    # block (32, 4): warp w is threadIdx.y == w, so the guard must read threadIdx.y
    @T.kernel(target="sm_100a", block=(32, 4))
    def k(x: T.Buffer((1,), "float32")):
        smem = T.SMEMPool()
        tmem = T.TMEMPool(smem, 32, alloc_warp=3)
        smem.commit()
        tmem.commit()
        tmem.dealloc()

    guards = [line for line in k.source.splitlines() if "if (" in line]
    assert guards and all("threadIdx.y" in g for g in guards), guards


def test_a_capacity_error_inside_a_kernel_keeps_its_class_and_names_the_line():
    with pytest.raises(CapacityError) as exc:

        @T.kernel(target="sm_90a", block=128)
        def k(x: T.Buffer((1,), "float32")):
            smem = T.SMEMPool()
            smem.alloc((300 * 1024,), "uint8")
            smem.commit()  # 307,200 > 232,448 bytes

    msg = str(exc.value)
    assert "test_kernel_mode.py:" in msg and "smem.commit()" in msg and "232448" in msg


def _names(expr) -> set[str]:
    if isinstance(expr, Var):
        return {expr.name}
    if isinstance(expr, BinOp):
        return _names(expr.a) | _names(expr.b)
    return set()


def test_a_tmem_stage_chosen_at_run_time_becomes_column_arithmetic():
    # acc (128, 512) float32 at column 0; 4 stages of 128 columns: stage s starts at 128 * s
    addrs = []

    @T.kernel(target="sm_100a", block=128)
    def k(x: T.Buffer((1,), "float32")):
        smem = T.SMEMPool()
        tmem = T.TMEMPool(smem, 512)
        acc = tmem.alloc((128, 512), name="acc")
        stages = tmem.stages(acc, 0, 128, 4)
        smem.commit()
        tmem.commit()
        T.tmem_base(tmem)
        for i in T.serial(4):
            addrs.append(T.tmem_addr(stages[i], lane=0, col=1))
        tmem.dealloc()

    (addr,) = addrs
    (base,) = {n for n in _names(addr) if "base" in n}
    (index,) = _names(addr) - {base}
    assert [interpret(addr, {base: 0, index: s}) for s in range(4)] == [1, 129, 257, 385]


def test_a_run_time_stage_over_a_folded_layout_is_refused():
    # data path B folds columns 128.. onto lanes 64..: stage 1 is no column shift of stage 0
    with pytest.raises(IRError, match="not whole-column shifts"):

        @T.kernel(target="sm_100a", block=128)
        def k(x: T.Buffer((1,), "float32")):
            smem = T.SMEMPool()
            tmem = T.TMEMPool(smem, 128)
            acc = tmem.alloc((64, 256), datapath="B", name="acc")
            stages = tmem.stages(acc, 0, 128, 2)
            smem.commit()
            tmem.commit()
            for i in T.serial(2):
                stages[i]
            tmem.dealloc()
