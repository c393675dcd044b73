import dataclasses

import pytest

from tilemem import T
from tilemem.errors import PoolStateError, SwizzleError, TargetError
from tilemem.ir import BuildError, IRError, same
from tilemem.ir.nodes import Const, For, IfThenElse, Store


def body(kernel):
    return kernel.ir.body.stmts


def test_parameters_become_buffers_scalars_tensormaps_and_symbols():
    @T.kernel(target="sm_90a", grid=2, block=64)
    def k(x: T.Buffer(("n", 4), "float32"), scale: T.float32, tmap: T.TensorMap):
        x[T.thread_id(), 0] = x[T.thread_id(), 1] * scale

    kinds = [(p.name, p.kind) for p in k.ir.params]
    assert kinds == [("x", "buffer"), ("scale", "scalar"), ("tmap", "tensormap"), ("n", "scalar")]
    assert (k.ir.grid, k.ir.block) == ((2, 1, 1), (64, 1, 1))
    (store,) = body(k)
    assert isinstance(store, Store) and "scale" in repr(store.value)


def test_if_then_else_frames():
    @T.kernel(target="sm_80", block=32)
    def k(x: T.Buffer((32,), "int32")):
        with T.If(T.thread_id() < 16):
            with T.Then():
                x[T.thread_id()] = 1
            with T.Else():
                x[T.thread_id()] = 2

    (stmt,) = body(k)
    assert isinstance(stmt, IfThenElse) and stmt.else_ is not None
    assert "if threadIdx.x < 16:" in str(k.ir) and "else:" in str(k.ir)


def test_if_without_then_puts_statements_in_the_then_branch():
    @T.kernel(target="sm_80", block=32)
    def k(x: T.Buffer((32,), "int32")):
        with T.If(T.thread_id() == 0):
            x[0] = 7

    (stmt,) = body(k)
    assert stmt.else_ is None and len(stmt.then.stmts) == 1


def test_loops_record_kind_and_extent():
    @T.kernel(target="sm_80", block=32)
    def k(x: T.Buffer((64,), "float32")):
        for i in T.serial(2, 10):
            x[i] = 0.0
        for j in T.unroll(4, name="j"):
            x[j] = 1.0

    loop, unrolled = body(k)
    assert isinstance(loop, For) and loop.kind == "serial" and loop.extent.value == 8
    assert unrolled.kind == "unroll" and "#pragma unroll" in k.source


def test_ir_nodes_are_immutable():
    @T.kernel(target="sm_80", block=32)
    def k(x: T.Buffer((32,), "float32")):
        x[0] = 1.0

    with pytest.raises(dataclasses.FrozenInstanceError):
        body(k)[0].value = Const(2.0)


def test_expressions_fold_constants_and_compare_structurally():
    a = Const(3) * 4 + 1
    assert isinstance(a, Const) and a.value == 13
    assert same(Const(2) + 0, Const(2))


def test_python_truth_of_an_expression_is_refused():
    with pytest.raises(IRError, match=r"T.If"):

        @T.kernel(target="sm_80", block=32)
        def k(x: T.Buffer((1,), "int32")):
            if T.thread_id() == 0:
                x[0] = 1


def test_errors_name_the_users_line():
    with pytest.raises(SwizzleError) as exc:

        @T.kernel(target="sm_90a", block=32)
        def k(x: T.Buffer((1,), "int32")):
            smem = T.SMEMPool()
            smem.alloc_mma((64, 32), "bfloat16", "128B")  # the line that is wrong

    msg = str(exc.value)
    assert (
        "test_builder.py:" in msg
        and "in k" in msg
        and "alloc_mma((64, 32)" in msg
        and "SWIZZLE_64B_ATOM" in msg
    )


def test_missing_annotation_is_explained():
    with pytest.raises(BuildError, match="needs an annotation"):

        @T.kernel(target="sm_80", block=32)
        def k(x):
            pass


def test_instruction_missing_on_target_names_both():
    with pytest.raises(TargetError) as exc:

        @T.kernel(target="sm_90a", block=128)
        def k(x: T.Buffer((1,), "int32")):
            smem = T.SMEMPool()
            T.TMEMPool(smem, 32)

    assert "sm_90a has no tensor memory" in str(exc.value)
    with pytest.raises(TargetError) as exc:

        @T.kernel(target="sm_80", block=128)
        def k2(x: T.Buffer((1,), "int32")):
            T.ptx.wgmma.fence()

    assert "wgmma.fence does not exist on sm_80" in str(exc.value) and "sm_90a" in str(exc.value)


def test_direct_tmem_access_points_to_tcgen05():
    with pytest.raises(PoolStateError, match=r"tcgen05.ld"):

        @T.kernel(target="sm_100a", block=128)
        def k(x: T.Buffer((1,), "float32")):
            smem = T.SMEMPool()
            tmem = T.TMEMPool(smem, 32)
            acc = tmem.alloc((128, 32))
            x[0] = acc[0, 0]


def test_tmem_address_needs_the_base_first():
    with pytest.raises(IRError, match=r"T.tmem_base"):

        @T.kernel(target="sm_100a", block=128)
        def k(x: T.Buffer((1,), "float32")):
            smem = T.SMEMPool()
            tmem = T.TMEMPool(smem, 32)
            acc = tmem.alloc((128, 32))
            smem.commit()
            tmem.commit()
            T.evaluate(T.tmem_addr(acc))


def test_calls_outside_a_kernel_are_refused():
    with pytest.raises(IRError, match=r"inside a @T.kernel"):
        T.cuda.syncthreads()
    with pytest.raises(PoolStateError, match="outside a kernel"):
        T.SMEMPool().alloc((4,))[0]
