"""The intrinsics' argument checks and their generated text, at the boundaries the PTX ISA sets
(tilemem.ir.intrinsics: tma, wgmma, thread, registers, descriptor, registry).

Every bound is from PTX ISA 9.0, cited per test; the generated lines are the instruction
forms of the same sections, written out by hand.
"""

from __future__ import annotations

import numpy as np
import pytest

import tilemem.ir.intrinsics.tcgen05 as tcgen05_module
import tilemem.ir.intrinsics.tma as tma_module
import tilemem.ir.intrinsics.wgmma as wgmma_module
import tilemem.sim as sim
from tilemem import T
from tilemem.errors import IRError, TargetError
from tilemem.plan.target import TARGETS, Target

# -- TMA ("cp.async.bulk.tensor", "cp.async.bulk.wait_group") -------------------------------


def _tma_kernel(body, target="sm_90a", cluster=None):
    @T.kernel(target=target, block=128, cluster=cluster)
    def k(tmap: T.TensorMap, x: T.Buffer((8,), "float32")):
        smem = T.SMEMPool()
        a = smem.alloc_mma((64, 64), "bfloat16", "128B", name="a")
        bar = smem.alloc((1,), "uint64", name="bar")
        smem.commit()
        body(tmap, x, a, bar)

    return k


@pytest.mark.parametrize("rank", [0, 6])
def test_a_bulk_tensor_copy_takes_1_to_5_coordinates(rank):
    # cp.async.bulk.tensor.{1d..5d}: 0 or 6 coordinates name no instruction
    for op in ("load", "store"):

        def body(tmap, x, a, bar, op=op):
            coords = [0] * rank
            if op == "load":
                T.ptx.tma.load(tmap, a, bar, coords)
            else:
                T.ptx.tma.store(tmap, a, coords)

        with pytest.raises(IRError, match=rf"takes 1 to 5 coordinates, got {rank}"):
            _tma_kernel(body)


def test_1_and_5_coordinates_are_accepted():
    def body(tmap, x, a, bar):
        T.ptx.tma.load(tmap, a, bar, [0])
        T.ptx.tma.store(tmap, a, [0, 0, 0, 0, 0])

    src = _tma_kernel(body).source
    assert "cp.async.bulk.tensor.1d.shared::cluster.global" in src
    assert "cp.async.bulk.tensor.5d.global.shared::cta.bulk_group" in src


def test_copies_go_through_a_tensor_map_parameter():
    def load(tmap, x, a, bar):
        T.ptx.tma.load(x, a, bar, [0, 0])

    def store(tmap, x, a, bar):
        T.ptx.tma.store(x, a, [0, 0])

    with pytest.raises(IRError, match=r"tma_load reads through a T.TensorMap kernel parameter"):
        _tma_kernel(load)
    with pytest.raises(IRError, match=r"tma_store writes through a T.TensorMap kernel parameter"):
        _tma_kernel(store)


def _tma_tile_of_tmem():
    @T.kernel(target="sm_100a", block=128)
    def k(tmap: T.TensorMap):
        smem = T.SMEMPool()
        bar = smem.alloc((1,), "uint64", name="bar")
        tmem = T.TMEMPool(smem, 32, name="tmem")
        acc = tmem.alloc((128, 32), "float32", datapath="D", name="acc")
        smem.commit()
        tmem.commit()
        T.ptx.tma.load_tile(tmap, acc, bar, 0, 0)

    return k


def test_a_tile_copy_needs_a_shared_memory_buffer():
    def not_a_buffer(tmap, x, a, bar):
        T.ptx.tma.store_tile(tmap, x, 0, 0)

    with pytest.raises(IRError, match=r"a tile copy needs a shared-memory buffer.*acc"):
        _tma_tile_of_tmem()
    with pytest.raises(IRError, match=r"a tile copy needs a shared-memory buffer"):
        _tma_kernel(not_a_buffer)


def test_the_bulk_waits_wait_for_every_group_by_default():
    # "cp.async.bulk.wait_group N": N = 0 waits until no bulk group is pending
    def body(tmap, x, a, bar):
        T.ptx.tma.store(tmap, a, [0, 0])
        T.ptx.tma.commit_group()
        T.ptx.tma.wait_group_read()
        T.ptx.tma.wait_group()

    src = _tma_kernel(body).source
    assert "cp.async.bulk.wait_group.read 0;" in src
    assert "cp.async.bulk.wait_group 0;" in src


def test_multicast_needs_a_target_with_clusters():
    # a target with TMA but no clusters (a user-made Target): .multicast::cluster needs one
    base = TARGETS["sm_90a"]
    no_cluster = Target(
        "sm_90a_nocluster",
        base.smem_per_sm,
        base.max_smem_per_block,
        base.max_threads_per_sm,
        base.max_blocks_per_sm,
        instructions=base.instructions - {"cluster"},
    )

    def body(tmap, x, a, bar):
        T.ptx.tma.load(tmap, a, bar, [0, 0], multicast_mask=1)

    with pytest.raises(TargetError, match=r"TMA multicast does not exist on sm_90a_nocluster"):
        _tma_kernel(body, target=no_cluster)


# -- wgmma ("wgmma.mma_async": matrix shapes, types, register fragments) ---------------------


def _wgmma_kernel(n, dtype="bfloat16", b_dtype=None, acc=None, target="sm_90a", **kw):
    acc_type = acc or ("int32" if "int" in dtype else "float32")

    @T.kernel(target=target, block=128)
    def k(x: T.Buffer((128,), "float32")):
        smem = T.SMEMPool()
        a = smem.alloc_mma((64, 64), "bfloat16", "128B", name="a")
        smem.commit()
        regs = T.alloc_local(max(n // 2, 1), acc_type, name="acc")
        d = T.ptx.wgmma.desc(a, 0, 0)
        T.ptx.wgmma.mma_async(regs, d, d, n=n, dtype=dtype, b_dtype=b_dtype, **kw)
        T.ptx.wgmma.commit_group()
        T.ptx.wgmma.wait_group()

    return k


# PTX ISA 9.0 "wgmma.mma_async", integer types (.s8/.u8): N in 8, 16, 24, 32, 48, ..., 256
INTEGER_N = [8, 16, 24, *range(32, 257, 16)]


@pytest.mark.parametrize("n", [8, 16, 24, 32, 48, 240, 256])
def test_integer_wgmma_takes_the_n_of_its_table(n):
    src = _wgmma_kernel(n, "int8").source
    assert f"wgmma.mma_async.sync.aligned.m64n{n}k32.s32.s8.s8" in src
    assert f"wgmma.mma_async.sync.aligned.m64n{n}k32.s32.u8.u8" in _wgmma_kernel(n, "uint8").source


@pytest.mark.parametrize("n", [7, 9, 23, 25, 40, 56, 72, 248, 264])
def test_integer_wgmma_refuses_other_n(n):
    assert n not in INTEGER_N
    with pytest.raises(IRError, match=rf"wgmma m64nNk32 s8: N={n} is not one of \[8, 16, 24, 32"):
        _wgmma_kernel(n, "int8")


@pytest.mark.parametrize("n", [40, 56, 248])
def test_float_wgmma_takes_every_multiple_of_8(n):
    # .f16/.bf16: N in 8, 16, 24, ..., 256 (every multiple of 8)
    assert f"m64n{n}k16.f32.bf16.bf16" in _wgmma_kernel(n).source


def test_float_wgmma_refuses_n_past_256():
    with pytest.raises(IRError, match=r"wgmma m64nNk16 bf16: N=264 is not one of \[8, 16"):
        _wgmma_kernel(264)


def test_8_bit_inputs_mix_within_their_family_only():
    # e4m3 x e5m2 and s8 x u8 are instructions (.atype and .btype chosen separately for
    # K = 32); f16 x bf16 is not (16-bit inputs must have one type)
    assert "m64n64k32.f32.e4m3.e5m2" in _wgmma_kernel(64, "float8_e4m3fn", "float8_e5m2").source
    assert "m64n64k32.s32.s8.u8" in _wgmma_kernel(64, "int8", "uint8").source
    with pytest.raises(IRError, match=r"wgmma cannot multiply float16 by bfloat16"):
        _wgmma_kernel(64, "float16", "bfloat16")
    with pytest.raises(IRError, match=r"wgmma cannot multiply int8 by float8_e4m3fn"):
        _wgmma_kernel(64, "int8", "float8_e4m3fn")
    with pytest.raises(IRError, match=r"wgmma inputs are float16, bfloat16, .*; got float64"):
        _wgmma_kernel(64, "float64")


def test_wgmma_majors_and_accumulators_are_checked():
    with pytest.raises(IRError, match=r"a_major must be 'K' or 'MN', got 'M'"):
        _wgmma_kernel(64, a_major="M")
    with pytest.raises(IRError, match=r"accumulates into T.alloc_local\(32, 'float32'\)"):
        _wgmma_kernel(64, acc="int32")  # float inputs accumulate in float32


def test_the_transpose_bits_follow_each_operand():
    # imm-trans-a then imm-trans-b: A MN-major, B K-major -> ", 1, 1, 1, 0"
    src = _wgmma_kernel(64, a_major="MN", b_major="K").source
    assert "m64n64k16.f32.bf16.bf16 {" in src and "p, 1, 1, 1, 0;" in src
    src = _wgmma_kernel(64, a_major="K", b_major="MN").source
    assert "p, 1, 1, 0, 1;" in src


def test_wgmma_waits_for_every_group_by_default():
    assert "wgmma.wait_group.sync.aligned 0;" in _wgmma_kernel(64).source


def test_the_wgmma_descriptor_needs_a_wgmma_target():
    with pytest.raises(TargetError, match=r"wgmma descriptor does not exist on sm_100a"):
        _wgmma_kernel(64, target="sm_100a")


# -- MMA descriptors of buffers (descriptor.py) ---------------------------------------------


def test_a_descriptor_describes_a_shared_memory_buffer_with_all_its_coordinates():
    def make(which):
        @T.kernel(target="sm_100a", block=128)
        def k(x: T.Buffer((8,), "float32")):
            smem = T.SMEMPool()
            a = smem.alloc_mma((2, 128, 64), "bfloat16", "128B", name="a")
            tmem = T.TMEMPool(smem, 32, name="tmem")
            acc = tmem.alloc((128, 32), "float32", datapath="D", name="acc")
            smem.commit()
            tmem.commit()
            if which == "tmem":
                T.ptx.tcgen05.desc(acc, 0, 0)
            elif which == "global":
                T.ptx.tcgen05.desc(x, 0)
            else:
                T.ptx.tcgen05.desc(a, 0, 0)  # 2 of its 3 coordinates

    with pytest.raises(IRError, match=r"an MMA descriptor describes a shared-memory buffer.*acc"):
        make("tmem")
    with pytest.raises(IRError, match=r"an MMA descriptor describes a shared-memory buffer"):
        make("global")
    with pytest.raises(IRError, match=r"a has 3 dimensions; give all of them"):
        make("short")


# -- thread: named barriers, shared addresses (thread.py) ----------------------------------


def _barrier_kernel(barrier_id, threads):
    @T.kernel(target="sm_90a", block=128)
    def k(x: T.Buffer((8,), "float32")):
        T.cuda.named_barrier(barrier_id, threads)

    return k


@pytest.mark.parametrize("barrier_id, threads", [(0, 32), (15, 128), (15, 32)])
def test_bar_sync_takes_ids_0_to_15_and_multiples_of_32(barrier_id, threads):
    # PTX ISA "bar.sync": 16 barriers per CTA, a thread count that is a multiple of the warp
    assert f"bar.sync {barrier_id}, {threads};" in _barrier_kernel(barrier_id, threads).source


BAD_BARRIERS = [(16, 32), (17, 32), (-1, 32), (0, 0), (0, 48), (0, -32)]


@pytest.mark.parametrize("barrier_id, threads", BAD_BARRIERS)
def test_bar_sync_refuses_other_ids_and_counts(barrier_id, threads):
    message = rf"bar.sync takes an id in \[0, 16\).*got {barrier_id}, {threads}"
    with pytest.raises(IRError, match=message):
        _barrier_kernel(barrier_id, threads)


def _smem_addr_of_tmem():
    @T.kernel(target="sm_100a", block=128)
    def k(x: T.Buffer((8,), "float32")):
        smem = T.SMEMPool()
        tmem = T.TMEMPool(smem, 32, name="tmem")
        acc = tmem.alloc((128, 32), "float32", datapath="D", name="acc")
        smem.commit()
        tmem.commit()
        T.smem_addr(acc)

    return k


def test_smem_addr_takes_a_shared_memory_buffer():
    with pytest.raises(IRError, match=r"smem_addr takes a shared-memory buffer, got .*acc"):
        _smem_addr_of_tmem()


def test_a_sub_byte_element_is_addressed_by_its_byte():
    # e2m1 (4 bits) in a 16 x 32 row-major buffer: element (1, 6) is element 38, bits 152-155,
    # byte 19; float32 element (1, 6) of a 16 x 32 buffer is byte 38 * 4 = 152
    @T.kernel(target="sm_100a", block=32)
    def k(x: T.Buffer((8,), "float32"), row: T.int32):
        smem = T.SMEMPool()
        f4 = smem.alloc((16, 32), "float4_e2m1fn", name="f4")
        f32 = smem.alloc((16, 32), "float32", name="f32")
        smem.commit()
        x[0] = T.cast(T.smem_addr(f4, 1, 6) - T.smem_addr(f4), "float32")
        x[1] = T.cast(T.smem_addr(f32, 1, 6) - T.smem_addr(f32), "float32")

    out = np.zeros(8, np.float32)
    assert sim.run(k, out, 0).ok
    assert out[:2].tolist() == [19.0, 152.0]


# -- setmaxnreg ("setmaxnreg": a multiple of 8 in [24, 256]) ---------------------------------


@pytest.mark.parametrize("count", [24, 32, 248, 256])
def test_setmaxnreg_takes_multiples_of_8_from_24_to_256(count):
    @T.kernel(target="sm_90a", block=128)
    def k(x: T.Buffer((8,), "float32")):
        T.ptx.setmaxnreg.inc(count)
        T.ptx.setmaxnreg.dec(count)

    assert f"setmaxnreg.inc.sync.aligned.u32 {count};" in k.source
    assert f"setmaxnreg.dec.sync.aligned.u32 {count};" in k.source


@pytest.mark.parametrize("count", [16, 23, 25, 255, 257, 264, True, 24.0])
def test_setmaxnreg_refuses_other_counts(count):
    with pytest.raises(IRError, match=r"setmaxnreg takes a multiple of 8 in \[24, 256\]"):

        @T.kernel(target="sm_90a", block=128)
        def k(x: T.Buffer((8,), "float32")):
            T.ptx.setmaxnreg.inc(count)

        _ = k.source


# -- the language registry (registry.py) -----------------------------------------------------


def test_exposed_functions_stay_callable_under_their_module_names():
    # @expose registers a function under T.<path> and must hand the function back unchanged
    assert tma_module.tma_load_tile is T.ptx.tma.load_tile
    assert wgmma_module.wgmma_desc is T.ptx.wgmma.desc
    assert tcgen05_module.tcgen05_desc is T.ptx.tcgen05.desc


# -- tcgen05 ("tcgen05.alloc/dealloc/relinquish_alloc_permit", "tcgen05.ld/st", "tcgen05.mma") --


def _tcgen05_kernel(body):
    @T.kernel(target="sm_100a", block=128)
    def k(x: T.Buffer((8,), "float32")):
        smem = T.SMEMPool()
        slot = smem.alloc((1,), "uint32", name="slot")
        a = smem.alloc_mma((128, 64), "bfloat16", "128B", name="a")
        tmem = T.TMEMPool(smem, 32, name="tmem")
        acc = tmem.alloc((128, 32), "float32", datapath="D", name="acc")
        smem.commit()
        tmem.commit()
        base = T.tmem_base(tmem)
        body(slot=slot, a=a, tmem=tmem, acc=acc, base=base)
        tmem.dealloc()

    return k


# tcgen05.ld/st .32x32b: .num = .x1, .x2, .x4, .x8, .x16, .x32, .x64, .x128
LD_NUMS = [1, 2, 4, 8, 16, 32, 64, 128]


@pytest.mark.parametrize("num", LD_NUMS)
def test_tcgen05_ld_and_st_take_each_num_of_the_isa(num):
    def body(acc, **_):
        regs = T.alloc_local(num, "float32", name="regs")
        T.ptx.tcgen05.ld(regs, T.tmem_addr(acc), num=num)
        T.ptx.tcgen05.st(T.tmem_addr(acc), regs, num=num)

    src = _tcgen05_kernel(body).source
    assert f"tcgen05.ld.sync.aligned.32x32b.x{num}.b32" in src
    assert f"tcgen05.st.sync.aligned.32x32b.x{num}.b32" in src


@pytest.mark.parametrize("num", [3, 5, 63, 65, 127, 129, 0])
def test_tcgen05_ld_and_st_refuse_other_nums(num):
    for op in ("ld", "st"):

        def body(acc, op=op, **_):
            regs = T.alloc_local(130, "float32", name="regs")
            if op == "ld":
                T.ptx.tcgen05.ld(regs, T.tmem_addr(acc), num=num)
            else:
                T.ptx.tcgen05.st(T.tmem_addr(acc), regs, num=num)

        with pytest.raises(IRError, match=rf"tcgen05.{op} .32x32b.x{num}: num in \(1, 2, 4"):
            _tcgen05_kernel(body)


@pytest.mark.parametrize("regs", ["short", "16-bit"])
def test_tcgen05_ld_and_st_need_enough_32_bit_registers(regs):
    for op in ("ld", "st"):

        def body(acc, op=op, **_):
            r = T.alloc_local(2, "float32") if regs == "short" else T.alloc_local(4, "float16")
            if op == "ld":
                T.ptx.tcgen05.ld(r, T.tmem_addr(acc), num=4)
            else:
                T.ptx.tcgen05.st(T.tmem_addr(acc), r, num=4)

        with pytest.raises(IRError, match=rf"tcgen05.{op} .32x32b.x4: .* a 32-bit T.alloc_local"):
            _tcgen05_kernel(body)


def test_tcgen05_allocation_instructions_default_to_cta_group_1():
    def body(slot, base, **_):
        T.ptx.tcgen05.alloc(slot, 32)
        T.ptx.tcgen05.relinquish_alloc_permit()
        T.ptx.tcgen05.dealloc(base, 32)

    src = _tcgen05_kernel(body).source
    assert "cta_group::2" not in src  # the pool's own alloc/relinquish/dealloc are ::1 too
    assert (
        '"tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" :  : '
        '"r"(tm_smem_addr((uint8_t*)slot + 0))' in src
    )
    assert src.count('"tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;"') == 2
    assert '"tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" :  : "r"(tmem_base)' in src


@pytest.mark.parametrize("group", [0, 3])
def test_cta_group_is_1_or_2(group):
    def body(slot, **_):
        T.ptx.tcgen05.alloc(slot, 32, cta_group=group)

    with pytest.raises(IRError, match=rf"cta_group must be 1 or 2, got {group}"):
        _tcgen05_kernel(body)


def test_tmem_addr_defaults_to_lane_0_column_0_and_takes_tmem_buffers_only():
    # lane 0, column 0 of the buffer is the pool's base itself: base + (0 << 16) + 0
    def body(acc, **_):
        regs = T.alloc_local(4, "float32", name="regs")
        T.ptx.tcgen05.ld(regs, T.tmem_addr(acc), num=4)

    assert '"r"(tmem_base) : "memory");' in _tcgen05_kernel(body).source

    def smem_buf(a, **_):
        T.tmem_addr(a)

    with pytest.raises(IRError, match=r"tmem_addr takes a TMEM buffer, got Buffer\('a'"):
        _tcgen05_kernel(smem_buf)


def test_tmem_base_is_read_once_and_only_after_commit():
    seen = []

    def body(tmem, base, **_):
        seen.append(T.tmem_base(tmem) is base)

    _tcgen05_kernel(body)
    assert seen == [True]

    with pytest.raises(Exception, match=r"TMEM pool 'tmem': commit\(\) it .* before reading"):

        @T.kernel(target="sm_100a", block=128)
        def k(x: T.Buffer((8,), "float32")):
            smem = T.SMEMPool()
            tmem = T.TMEMPool(smem, 32, name="tmem")
            tmem.alloc((128, 32), "float32", datapath="D", name="acc")
            smem.commit()
            T.tmem_base(tmem)


def test_the_tmem_protocol_comments_name_the_warps_and_columns():
    src = _tcgen05_kernel(lambda **_: None).source
    assert (
        "// TMEM: warp 0 allocates 32 columns (cta_group::1); the base address lands in "
        "tmem_addr" in src
    )
    assert "// TMEM: publish the base address of tmem to every warp" in src
    assert "// TMEM: warp 0 gives back 32 columns" in src


def test_the_tcgen05_descriptor_needs_a_tcgen05_target():
    with pytest.raises(TargetError, match=r"tcgen05 shared-memory descriptor does not exist on"):

        @T.kernel(target="sm_90a", block=128)
        def k(x: T.Buffer((8,), "float32")):
            smem = T.SMEMPool()
            a = smem.alloc_mma((128, 64), "bfloat16", "128B", name="a")
            smem.commit()
            T.ptx.tcgen05.desc(a, 0, 0)


def test_a_col_only_moves_an_a_operand_in_tmem():
    def body(a, acc, **_):
        d = T.ptx.tcgen05.desc(a, 0, 0)
        T.ptx.tcgen05.mma(acc, d, d, 0, a_col=4)

    with pytest.raises(IRError, match=r"a_col offsets an A operand in TMEM"):
        _tcgen05_kernel(body)


def test_mma_operands_accumulate_by_default():
    # enable_input_d defaults to 1 (D = A B + D), as the PTX predicate p = (1 != 0)
    def body(a, acc, **_):
        d = T.ptx.tcgen05.desc(a, 0, 0)
        T.ptx.tcgen05.mma_block_scale(acc, d, d, 0, acc, acc, kind="mxf8f6f4", scale_vec=1)

    src = _tcgen05_kernel(body).source
    assert "block_scale.scale_vec::1X [%0], %1, %2, %3, [%4], [%5], p;" in src
    assert '"r"((int32_t)(1)) : "memory");' in src

    def dense(a, acc, **_):
        d = T.ptx.tcgen05.desc(a, 0, 0)
        T.ptx.tcgen05.mma(acc, d, d, 0)

    src = _tcgen05_kernel(dense).source
    assert "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;" in src
    assert '"r"((int32_t)(1)) : "memory");' in src


def test_tcgen05_cp_takes_its_shapes_only():
    def body(a, acc, **_):
        T.ptx.tcgen05.cp(acc, T.ptx.tcgen05.desc(a, 0, 0), shape="16x256b")

    with pytest.raises(IRError, match=r"tcgen05.cp shape must be one of 128x256b, 4x256b"):
        _tcgen05_kernel(body)


def test_wgmma_accumulates_by_default():
    # scale-d defaults to 1: the predicate p = (1 != 0) keeps D = A B + D
    assert '"r"((int32_t)(1)) : "memory");' in _wgmma_kernel(64).source
