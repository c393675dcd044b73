"""MMA operand intrinsics compiled by NVRTC (ptxas must accept each instruction): MN-major
descriptors, every wgmma input type, every dense tcgen05 kind, block-scaled MMA, tcgen05.cp,
and descriptors at run-time stage coordinates for every swizzle mode."""

import dataclasses

import pytest

from tilemem import T
from tilemem.ir.interpret import interpret
from tilemem.ir.nodes import UINT32, BinOp, Call, Cast, Const
from tilemem.layout import SwizzleMode
from tilemem.layout.operand import instr_descriptor, operand_byte_offset, smem_descriptor
from tilemem.layout.smem import mma_shared_layout


@pytest.mark.parametrize(
    "dtype, n, majors",
    [
        ("bfloat16", 128, ("K", "K")),
        ("float16", 64, ("MN", "MN")),
        ("bfloat16", 256, ("K", "MN")),
        ("float32", 64, ("K", "K")),  # tf32
        ("float8_e4m3fn", 128, ("K", "K")),
        ("float8_e5m2", 64, ("K", "K")),
        ("int8", 96, ("K", "K")),
    ],
)
def test_wgmma_types_and_majors_compile(dtype, n, majors):
    acc_type = "int32" if dtype == "int8" else "float32"

    @T.kernel(target="sm_90a", block=128, name="probe")
    def k(x: T.Buffer((128,), acc_type)):
        smem = T.SMEMPool()
        a = smem.alloc_mma((64, 64), dtype, name="a")  # K-major (M, K) or MN-major (K, M)
        b = smem.alloc_mma((64, n), dtype, name="b")
        smem.commit()
        acc = T.alloc_local(n // 2, acc_type)
        T.ptx.wgmma.fence()
        T.ptx.wgmma.mma_async(
            acc,
            T.ptx.wgmma.desc(a, major=majors[0]),
            T.ptx.wgmma.desc(b, major=majors[1]),
            n=n,
            dtype=dtype,
            a_major=majors[0],
            b_major=majors[1],
        )
        T.ptx.wgmma.commit_group()
        T.ptx.wgmma.wait_group(0)
        x[T.thread_id()] = acc[0]

    k.compile()
    if majors[1] == "MN":
        assert ", 1, 1, 1, 1;" in k.source or ", 1, 1, 0, 1;" in k.source


def test_wgmma_mn_major_needs_16_bit_inputs():
    with pytest.raises(Exception, match="MN-major needs f16/bf16"):

        @T.kernel(target="sm_90a", block=128)
        def k(x: T.Buffer((128,), "float32")):
            smem = T.SMEMPool()
            a = smem.alloc_mma((64, 64), "float8_e4m3fn")
            smem.commit()
            acc = T.alloc_local(32, "float32")
            d = T.ptx.wgmma.desc(a)
            T.ptx.wgmma.mma_async(acc, d, d, n=64, dtype="float8_e4m3fn", b_major="MN")


def _free(tmem):
    T.ptx.tcgen05.fence_before_thread_sync()
    T.cuda.syncthreads()
    tmem.dealloc()


@pytest.mark.parametrize(
    "kind, dtype, d_dtype",
    [
        ("f16", "float16", "float16"),
        ("tf32", "float32", "float32"),
        ("f8f6f4", "float8_e4m3fn", "float32"),
        ("i8", "int8", "int32"),
    ],
)
def test_tcgen05_dense_kinds_compile(kind, dtype, d_dtype):
    idesc = instr_descriptor(kind, 128, 64, dtype, dtype, d_dtype, b_major="MN")

    @T.kernel(target="sm_100a", block=128, name="probe")
    def k(x: T.Buffer((128,), "float32")):
        smem = T.SMEMPool()
        a = smem.alloc_mma((128, 64), dtype, name="a")
        b = smem.alloc_mma((64, 64), dtype, name="b")  # (K, N): read MN-major
        tmem = T.TMEMPool(smem, 64)
        d = tmem.alloc((128, 64), d_dtype, datapath="D", name="d")
        smem.commit(100_000)
        tmem.commit()
        T.tmem_base(tmem)
        with T.If(T.all_of(T.warp_id() == 0, T.ptx.elect_sync())):
            T.ptx.tcgen05.mma(
                d, T.ptx.tcgen05.desc(a), T.ptx.tcgen05.desc(b, major="MN"), idesc, kind=kind
            )
        _free(tmem)

    k.compile()
    assert f"kind::{kind} [" in k.source


@pytest.mark.parametrize(
    "kind, dtype, sf, vec",
    [
        ("mxf4nvf4", "float4_e2m1fn", "float8_e4m3fn", 4),
        ("mxf4nvf4", "float4_e2m1fn", "float8_e8m0fnu", 2),
        ("mxf4", "float4_e2m1fn", "float8_e8m0fnu", 2),
        ("mxf8f6f4", "float8_e4m3fn", "float8_e8m0fnu", 1),
    ],
)
def test_block_scaled_mma_and_tcgen05_cp_compile(kind, dtype, sf, vec):
    idesc = instr_descriptor(kind, 128, 128, dtype, dtype, sf_dtype=sf, scale_vec=vec)

    @T.kernel(target="sm_100a", block=128, name="probe")
    def k(x: T.Buffer((128,), "float32")):
        smem = T.SMEMPool()
        a = smem.alloc_mma((128, 256), dtype, name="a")
        b = smem.alloc_mma((128, 256), dtype, name="b")
        sfa_s = smem.alloc((128, 16), sf, align=128, name="sfa_s")
        tmem = T.TMEMPool(smem, 256)
        d = tmem.alloc((128, 128), datapath="D", name="d")
        sfa = tmem.alloc_sf((128, 16), sf, sf_per_mma=4, name="sfa")
        smem.commit(100_000)
        tmem.commit()
        T.tmem_base(tmem)
        with T.If(T.all_of(T.warp_id() == 0, T.ptx.elect_sync())):
            for g in range(4):
                T.ptx.tcgen05.cp(
                    T.tmem_addr(sfa, col=g),
                    T.ptx.tcgen05.desc(sfa_s, 32 * g, 0),
                    shape="32x128b",
                    multicast="warpx4",
                )
            T.ptx.tcgen05.mma_block_scale(
                d,
                T.ptx.tcgen05.desc(a),
                T.ptx.tcgen05.desc(b),
                idesc,
                T.tmem_addr(sfa),
                T.tmem_addr(sfa, col=1),
                kind=kind,
                scale_vec=vec,
                accumulate=0,
            )
        _free(tmem)

    k.compile()
    assert f"kind::{kind}.block_scale.scale_vec::{vec}X" in k.source
    assert "tcgen05.cp.cta_group::1.32x128b.warpx4" in k.source


def test_block_scale_vector_must_fit_the_kind():
    with pytest.raises(Exception, match="scale_vec"):

        @T.kernel(target="sm_100a", block=128)
        def k(x: T.Buffer((128,), "float32")):
            T.ptx.tcgen05.mma_block_scale(0, 0, 0, 0, 0, 0, kind="mxf4", scale_vec=4)


def test_tcgen05_cp_shape_needs_its_multicast():
    with pytest.raises(Exception, match="warpx4"):

        @T.kernel(target="sm_100a", block=128)
        def k(x: T.Buffer((128,), "float32")):
            T.ptx.tcgen05.cp(0, 0, shape="32x128b")


def _at_base(expr, base: int):
    """``expr`` with every shared-memory address call replaced by ``base``."""
    if isinstance(expr, Call):
        return Const(base, UINT32)
    if isinstance(expr, BinOp):
        return dataclasses.replace(expr, a=_at_base(expr.a, base), b=_at_base(expr.b, base))
    if isinstance(expr, Cast):
        return dataclasses.replace(expr, a=_at_base(expr.a, base))
    return expr


@pytest.mark.parametrize("mode", list(SwizzleMode))
@pytest.mark.parametrize("major", ["K", "MN"])
@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_runtime_stage_descriptor_every_swizzle(mode, major, arch):
    """A run-time stage gives, at every stage, smem_descriptor of that stage's slice (the
    CuTe-checked host value), for every swizzle mode including none."""
    shape, row, col = (3, 64, 64), 16, (0 if major == "MN" else 32)
    layout = mma_shared_layout("bfloat16", mode, shape)
    exprs = {}
    desc = T.ptx.wgmma.desc if arch == "sm_90a" else T.ptx.tcgen05.desc

    @T.kernel(target=arch, block=128, name="probe")
    def k(x: T.Buffer((8,), "uint64"), stage: T.int32):
        smem = T.SMEMPool()
        a = smem.alloc_mma(shape, "bfloat16", mode, name="a")
        smem.commit()
        exprs["runtime"] = desc(a, stage, row, col, major=major)
        x[0] = exprs["runtime"]

    k.compile()
    base = 2048  # any swizzle-period-aligned shared address of the buffer
    for s in range(shape[0]):
        start = base + operand_byte_offset(layout, "bfloat16", (s, row, col))
        want = smem_descriptor(layout, "bfloat16", arch=arch, major=major, start_address=start)
        assert interpret(_at_base(exprs["runtime"], base), {"stage": s}) == want


def _mma_calls(kernel, op):
    from tilemem.ir.nodes import Call

    found = []

    def walk(node):
        if isinstance(node, Call) and node.op == op:
            found.append(node)
        if isinstance(node, (tuple, list)):
            for x in node:
                walk(x)
        elif hasattr(node, "__dataclass_fields__"):
            for name in node.__dataclass_fields__:
                walk(getattr(node, name))

    walk(kernel.ir)
    return found


def test_nvfp4_example_is_a_block_scaled_gemm():
    """Per K tile: 4 kind::mxf4nvf4 MMAs (K=64 each over a 256-wide tile) and the scale
    factors of each step copied to TMEM (1 copy for SFA's 128 rows, 2 for SFB's 256)."""
    from tilemem.kernels import nvfp4_gemm

    k = nvfp4_gemm()
    mmas = _mma_calls(k, "ptx.tcgen05.mma_block_scale")
    assert len(mmas) == 4 and {m.attr("kind") for m in mmas} == {"mxf4nvf4"}
    assert len(_mma_calls(k, "ptx.tcgen05.cp")) == 4 * 3
    assert "kind::mxf4nvf4.block_scale.scale_vec::4X" in k.source
    k.compile()


def test_nvfp4_scale_factor_columns_follow_alloc_sf():
    """The copies land where sf_tmem_layout puts each row's factors: SFA row 32g + l of MMA
    step ko, stage t is in column g + 4 ko + 16 t of SFA (docs/DESIGN.md#named-layouts formula, M =
    4 groups, Ko = 4: TCol = 4 g + 16 ko + j in 8-bit units, 64 per stage)."""
    from tilemem.examples import blockscaled_nvfp4_gemm
    from tilemem.kernels import _sf_col

    sfa = blockscaled_nvfp4_gemm().tmem_pools[0].buffer("SFA")
    for t, ko, g in [(0, 0, 0), (1, 2, 3), (0, 3, 1)]:
        assert _sf_col(sfa, t, 32 * g, 4 * ko) == g + 4 * ko + 16 * t


def test_attention_pv_reads_v_mn_major_in_eight_k_steps():
    """O_i += P_i V over 128 KV rows: eight K=16 MMAs per Q tile, P stepping 8 TMEM columns,
    V through an MN-major descriptor whose LBO is one 128 x 64 bf16 swizzle-atom column
    (16384 bytes, CuTe's value for head_dim 128)."""
    from tilemem.ir.nodes import BinOp, Const
    from tilemem.kernels import attention_fwd

    k = attention_fwd()
    pv = [m for m in _mma_calls(k, "ptx.tcgen05.mma") if m.attr("a_tmem")]
    assert len(pv) == 2 * 8
    highs = {
        m.args[2].a.value
        for m in pv
        if isinstance(m.args[2], BinOp) and isinstance(m.args[2].a, Const)
    }
    assert len(highs) == 1
    (high,) = highs
    assert ((high >> 16) & 0x3FFF) << 4 == 16384  # LBO
    assert ((high >> 32) & 0x3FFF) << 4 == 1024  # SBO: 8 rows of 128 bytes
    assert (pv[0].args[3].value >> 16) & 1 == 1  # instruction descriptor: B MN-major
