"""Descriptors against CUTLASS/CuTe (tests/oracle): shared-memory descriptors for both majors,
every swizzle, 8/16/32-bit types, several tiles, stages, slices and start addresses; tcgen05
instruction descriptors for every kind and legal M/N. All golden values come from CuTe's
make_gmma_desc / make_umma_desc / make_instr_desc / make_runtime_instr_desc(_block_scaled),
one oracle process per module."""

from __future__ import annotations

import itertools

import pytest

from oracle import cute
from tilemem.errors import LayoutError
from tilemem.layout import ComposeLayout, Iter, SwizzleMode, TileLayout, swizzle_for
from tilemem.layout.operand import (
    BLOCK_SCALED,
    legal_mn,
    operand_byte_offset,
    smem_descriptor,
)
from tilemem.layout.smem import mma_shared_layout

DTYPES = {8: "uint8", 16: "float16", 32: "float32"}
ARCHS = {90: "sm_90a", 100: "sm_100a"}
BASES = (0, 1024, 37 * 1024, 128 * 1024)


@pytest.fixture(scope="module")
def oracle():
    try:
        exe = cute.build()
    except cute.OracleUnavailable as e:
        pytest.skip(f"CuTe oracle unavailable: {e}")
    return lambda queries: cute.run(exe, queries)


def atoms_contiguous_first(dtype: str, mode: SwizzleMode, rows: int, contig: int, bits: int):
    """CuTe's tile_to_shape order for MN-major atoms: atoms along the contiguous dimension
    first, then 8-row groups (tilemem's own layout repeats the rows first)."""
    width = mode.row_bytes * 8 // bits  # elements of one atom row (16 bytes: no swizzle)
    iters = [
        Iter(cute.STAGES, rows * contig),
        Iter(rows // 8, 8 * contig),
        Iter(8, width),
        Iter(contig // width, 8 * width),
        Iter(width, 1),
    ]
    tile = TileLayout(iters, shape=(cute.STAGES, rows, contig)).canonicalize()
    return ComposeLayout(swizzle_for(dtype, mode), tile) if mode else tile


def smem_cases():
    for arch, major, mode, bits, order, (rows, contig_bytes) in itertools.product(
        ARCHS, ("K", "MN"), SwizzleMode, DTYPES, (0, 1), cute.SMEM_SHAPES
    ):
        contig = contig_bytes * 8 // bits
        k_mma = 256 // bits  # one MMA's K: 32 bytes
        if major == "K":  # (MN rows, K contiguous): 64-row slices at every K step
            slices = [(r, c) for r in range(0, rows, 64) for c in range(0, contig, k_mma)]
        else:  # (K rows, MN contiguous): whole-MN slices at every K step
            slices = [(r, 0) for r in range(0, rows, k_mma)]
        for stage, (row0, col0), base in itertools.product(range(cute.STAGES), slices, BASES):
            yield arch, major, mode, bits, order, rows, contig_bytes, stage, row0, col0, base


def test_smem_descriptors_match_cute(oracle):
    cases = list(smem_cases())
    queries = [
        f"smem {a} {mj} {int(md)} {b} {o} {r} {cb} {s} {r0} {c0} {base}"
        for a, mj, md, b, o, r, cb, s, r0, c0, base in cases
    ]
    golden = oracle(queries)
    layouts: dict = {}
    mismatches = []
    refused = 0
    for case, want in zip(cases, golden):
        arch, major, mode, bits, order, rows, contig_bytes, stage, row0, col0, base = case
        dtype, contig = DTYPES[bits], contig_bytes * 8 // bits
        key = (mode, bits, order, rows, contig)
        if key not in layouts:
            layouts[key] = (
                mma_shared_layout(dtype, mode, (cute.STAGES, rows, contig))
                if order == 0
                else atoms_contiguous_first(dtype, mode, rows, contig, bits)
            )
        layout = layouts[key]
        start = base + operand_byte_offset(layout, dtype, (stage, row0, col0))
        if arch == 100 and major == "MN" and bits == 32:
            # CuTe encodes it, but the hardware takes an MN-major tf32 operand only with
            # SWIZZLE_128B_BASE32B (PTX ISA tcgen05 "Shared memory descriptor"): refused
            refused += 1
            with pytest.raises(LayoutError, match="128B swizzling with 32-byte atomicity"):
                smem_descriptor(layout, dtype, arch="sm_100a", major="MN", start_address=start)
            continue
        got = smem_descriptor(layout, dtype, arch=ARCHS[arch], major=major, start_address=start)
        if got != want:
            mismatches.append(f"{case}: tilemem {got:#018x} CuTe {want:#018x}")
    assert len(cases) > 3000
    # sm_100a MN-major 32-bit: 4 modes x 2 orders x 5 tiles x 3 stages x K slices x 4 bases
    assert refused > 100
    assert not mismatches, f"{len(mismatches)} of {len(cases)} differ:\n" + "\n".join(
        mismatches[:20]
    )


DENSE_TYPES = {
    "f16": [
        (a, b, d)
        for a in ("float16", "bfloat16")
        for b in ("float16", "bfloat16")
        for d in ("float16", "float32")
    ],
    "tf32": [("float32", "float32", "float32")],
    "i8": [(a, b, "int32") for a in ("int8", "uint8") for b in ("int8", "uint8")],
    "f8f6f4": [
        (a, b, d)
        for a in ("float8_e4m3fn", "float8_e5m2", "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn")
        for b in ("float8_e4m3fn", "float8_e5m2", "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn")
        for d in ("float16", "float32")
    ],
}
MN_OK = {"float16", "bfloat16", "float32", "float8_e4m3fn", "float8_e5m2", "int8", "uint8"}


def majors(a: str, b: str):
    return [
        (am, bm)
        for am in ("K", "MN")
        for bm in ("K", "MN")
        if (am == "K" or a in MN_OK) and (bm == "K" or b in MN_OK)
    ]


def f16_accumulator_refused(kind: str, a: str, b: str, d: str) -> bool:
    """PTX ISA tcgen05.mma: kind::f16 accumulates into f16 only from f16 x f16."""
    return kind == "f16" and d == "float16" and (a, b) != ("float16", "float16")


def dense_cases():
    for kind, types in DENSE_TYPES.items():
        for (a, b, d), cta_group in itertools.product(types, (1, 2)):
            if f16_accumulator_refused(kind, a, b, d):
                continue  # test_refused_dense_combinations
            for am, bm in majors(a, b):
                shapes = [(m, n) for m, ns in legal_mn(kind, cta_group, bm).items() for n in ns]
                for m, n in shapes:
                    yield kind, a, b, d, am, bm, m, n, cta_group, False, False, False
        a, b, d = types[0]
        flags = (
            [(False, False, True)] if kind == "i8" else [(True, False, False), (False, True, False)]
        )
        for na, nb, sat in flags:
            yield kind, a, b, d, "K", "K", 128, 64, 1, na, nb, sat


def test_dense_instr_descriptors_match_cute(oracle):
    from tilemem.layout.operand import instr_descriptor

    cases = list(dense_cases())
    queries = [
        f"instr {k} {a} {b} {d} {int(am == 'MN')} {int(bm == 'MN')} {m} {n} {int(na)} {int(nb)} "
        f"{int(sat)}"
        for k, a, b, d, am, bm, m, n, _, na, nb, sat in cases
    ]
    golden = [v >> 32 for v in oracle(queries)]  # make_runtime_instr_desc: upper 32 bits
    mismatches = []
    for case, want in zip(cases, golden):
        kind, a, b, d, am, bm, m, n, cta_group, na, nb, sat = case
        got = instr_descriptor(
            kind,
            m,
            n,
            a,
            b,
            d,
            a_major=am,
            b_major=bm,
            negate_a=na,
            negate_b=nb,
            saturate=sat,
            cta_group=cta_group,
        )
        if got != want:
            mismatches.append(f"{case}: tilemem {got:#010x} CuTe {want:#010x}")
    assert len(cases) > 5000
    assert not mismatches, f"{len(mismatches)} of {len(cases)} differ:\n" + "\n".join(
        mismatches[:20]
    )


FP8F6F4 = ("float8_e4m3fn", "float8_e5m2", "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn")
SCALED_TYPES = {
    "mxf8f6f4": [(a, b, "float8_e8m0fnu") for a in FP8F6F4 for b in FP8F6F4],
    "mxf4": [("float4_e2m1fn", "float4_e2m1fn", "float8_e8m0fnu")],
    "mxf4nvf4": [
        ("float4_e2m1fn", "float4_e2m1fn", "float8_e8m0fnu"),
        ("float4_e2m1fn", "float4_e2m1fn", "float8_e4m3fn"),
    ],
}


# the scale-factor ids each default scale vector allows (1X: any of 4, 2X: 0 or 2, 4X: 0)
SF_IDS = {"mxf8f6f4": (0, 1, 2, 3), "mxf4": (0, 2)}
SF_IDS_NVF4 = {"float8_e8m0fnu": (0, 2), "float8_e4m3fn": (0,)}


def scaled_cases():
    for kind in BLOCK_SCALED:
        for (a, b, sf), cta_group in itertools.product(SCALED_TYPES[kind], (1, 2)):
            pairs = majors(a, b) if kind == "mxf8f6f4" else [("K", "K")]
            ids = SF_IDS_NVF4[sf] if kind == "mxf4nvf4" else SF_IDS[kind]
            for am, bm in pairs:
                shapes = [(m, n) for m, ns in legal_mn(kind, cta_group, bm).items() for n in ns]
                for m, n in shapes:  # vary the ids over the cases
                    sfa, sfb = ids[(m // 64 + n // 8) % len(ids)], ids[(n // 16) % len(ids)]
                    yield kind, a, b, sf, am, bm, m, n, cta_group, sfa, sfb


def test_block_scaled_instr_descriptors_match_cute(oracle):
    from tilemem.layout.operand import instr_descriptor

    cases = list(scaled_cases())
    # the scale factors' TMEM addresses: bits 30-31 are the ids CuTe copies into the descriptor
    queries = [
        f"bs {k} {a} {b} {sf} {int(am == 'MN')} {int(bm == 'MN')} {m} {n} "
        f"{(sfa << 30) | 0x40010} {(sfb << 30) | 0x20}"
        for k, a, b, sf, am, bm, m, n, _, sfa, sfb in cases
    ]
    golden = [v >> 32 for v in oracle(queries)]
    mismatches = []
    for case, want in zip(cases, golden):
        kind, a, b, sf, am, bm, m, n, cta_group, sfa, sfb = case
        got = instr_descriptor(
            kind,
            m,
            n,
            a,
            b,
            a_major=am,
            b_major=bm,
            cta_group=cta_group,
            sf_dtype=sf,
            sfa_id=sfa,
            sfb_id=sfb,
        )
        if got != want:
            mismatches.append(f"{case}: tilemem {got:#010x} CuTe {want:#010x}")
    assert len(cases) > 1000
    assert not mismatches, f"{len(mismatches)} of {len(cases)} differ:\n" + "\n".join(
        mismatches[:20]
    )


# -- the constants in every example kernel ------------------------------------------------------

MMA_OPS = ("ptx.wgmma.mma_async", "ptx.tcgen05.mma", "ptx.tcgen05.mma_block_scale")


def _calls(node, found):
    """Every intrinsic Call under ``node`` (the IR is frozen dataclasses and tuples)."""
    from tilemem.ir.nodes import Call

    if isinstance(node, Call):
        found.append(node)
    if isinstance(node, (tuple, list)):
        for x in node:
            _calls(x, found)
    elif hasattr(node, "__dataclass_fields__"):
        for name in node.__dataclass_fields__:
            _calls(getattr(node, name), found)
    return found


def _kernel_constants(name: str):
    """(descriptor high parts, instruction descriptors) the example kernel's MMAs use."""
    from tilemem.ir.nodes import BinOp, Const
    from tilemem.kernels import KERNELS

    highs, idescs = set(), set()
    for call in _calls(KERNELS[name]().ir, []):
        if call.op not in MMA_OPS:
            continue
        for arg in call.args:
            if isinstance(arg, BinOp) and arg.op == "|" and isinstance(arg.a, Const):
                highs.add(arg.a.value)
        if call.op != "ptx.wgmma.mma_async":
            idescs.add(call.args[3].value)
    return highs, idescs


# per example: the MMA operand tiles as oracle queries (arch, major, bits, rows, contig bytes;
# a 4-bit tile is byte for byte an 8-bit one of half the columns) and its instruction
# descriptors; the oracle's tiles have 3 stages, which the high fields do not depend on
EXAMPLE_OPERANDS = {
    "hopper-gemm": ([(90, "K", 16, 128, 128), (90, "K", 16, 256, 128)], []),
    "hopper-gemm-persistent": ([(90, "K", 16, 128, 128), (90, "K", 16, 256, 128)], []),
    "blackwell-gemm": (
        [(100, "K", 16, 128, 128), (100, "K", 16, 256, 128)],
        ["instr f16 bfloat16 bfloat16 float32 0 0 128 256 0 0 0"],
    ),
    "attention-fwd": (
        [(100, "K", 16, 128, 256), (100, "MN", 16, 128, 256)],
        [
            "instr f16 bfloat16 bfloat16 float32 0 0 128 128 0 0 0",
            "instr f16 bfloat16 bfloat16 float32 0 1 128 128 0 0 0",
        ],
    ),
    "nvfp4-gemm": (
        [(100, "K", 8, 128, 128), (100, "K", 8, 256, 128)],
        ["bs mxf4nvf4 float4_e2m1fn float4_e2m1fn float8_e4m3fn 0 0 128 256 0 0"],
    ),
}


def test_every_example_kernel_is_checked():
    from tilemem.kernels import KERNELS

    assert set(EXAMPLE_OPERANDS) == set(KERNELS)


@pytest.mark.parametrize("name", sorted(EXAMPLE_OPERANDS))
def test_example_kernel_constants_match_cute(oracle, name):
    pytest.importorskip("cuda.core", reason="building example kernels needs the cuda extra")
    tiles, instrs = EXAMPLE_OPERANDS[name]
    queries = [f"smem {a} {mj} 3 {b} 0 {r} {cb} 0 0 0 0" for a, mj, b, r, cb in tiles]
    golden = oracle(queries + instrs)
    want_highs = {v & ~0x3FFF for v in golden[: len(tiles)]}
    want_idescs = {v >> 32 for v in golden[len(tiles) :]}
    highs, idescs = _kernel_constants(name)
    assert highs == want_highs
    assert idescs == want_idescs


# -- user errors (no oracle needed) ------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"kind": "f32"}, "unknown tcgen05 kind 'f32'"),
        ({"m": 256}, "M=256 N=128 is not a legal shape"),  # M=256 needs cta_group::2
        ({"n": 12}, "M=128 N=12 is not a legal shape"),
        ({"a_dtype": "float8_e4m3fn"}, "kind::f16 takes A in float16, bfloat16"),
        ({"d_dtype": "int32"}, "accumulates into float16 or float32, got int32"),
        ({"saturate": True}, "saturate exists only for kind::i8"),
        ({"sfa_id": 1}, "kind::f16 is not block-scaled"),
        ({"a_major": "M"}, "a_major must be 'K' or 'MN'"),
    ],
)
def test_instr_descriptor_errors(kwargs, match):
    from tilemem.errors import LayoutError
    from tilemem.layout.operand import instr_descriptor

    args = {"kind": "f16", "m": 128, "n": 128, "a_dtype": "bfloat16", "b_dtype": "bfloat16"}
    args.update(kwargs)
    with pytest.raises(LayoutError, match=match):
        instr_descriptor(**args)


def test_block_scaled_errors():
    from tilemem.errors import LayoutError
    from tilemem.layout.operand import instr_descriptor

    fp4 = "float4_e2m1fn"
    with pytest.raises(LayoutError, match="uses scale_vec::2X, got scale_vec::4X"):
        instr_descriptor("mxf4", 128, 128, fp4, fp4, sf_dtype="float8_e8m0fnu", scale_vec=4)
    with pytest.raises(LayoutError, match="takes scale factors in float8_e8m0fnu"):
        instr_descriptor("mxf8f6f4", 128, 128, fp4, fp4, sf_dtype="float8_e4m3fn")
    with pytest.raises(LayoutError, match="can only be read K-major"):
        instr_descriptor("mxf4nvf4", 128, 128, fp4, fp4, b_major="MN")
    with pytest.raises(LayoutError, match=r"sfb_id selects one of 4 .* got 4"):
        instr_descriptor("mxf4", 128, 128, fp4, fp4, sfb_id=4)
    with pytest.raises(LayoutError, match="M=64"):  # block-scaled MMAs are M=128 on one CTA
        instr_descriptor("mxf4", 64, 128, fp4, fp4)


def test_smem_descriptor_errors():
    from tilemem.errors import LayoutError

    layout = mma_shared_layout("bfloat16", "128B", (64, 64))
    with pytest.raises(LayoutError, match="arch 'sm_80'"):
        smem_descriptor(layout, "bfloat16", arch="sm_80")
    with pytest.raises(LayoutError, match="start_address 24 must be a multiple of 16"):
        smem_descriptor(layout, "bfloat16", arch="sm_90a", start_address=24)
    with pytest.raises(LayoutError, match="major must be 'K' or 'MN'"):
        smem_descriptor(layout, "bfloat16", arch="sm_90a", major="k")
    with pytest.raises(LayoutError, match="row 4, column 0"):
        operand_byte_offset(layout, "bfloat16", (4, 0))


# -- what the hardware refuses, though CuTe's runtime makers would encode it -------------------

E4M3, FP4 = "float8_e4m3fn", "float4_e2m1fn"


@pytest.mark.parametrize(
    ("kind", "a", "b", "d", "b_major", "m", "n", "cta_group", "extra", "words"),
    [
        ("i8", "int8", "uint8", "int32", "MN", 128, 24, 1, {}, "N=24"),
        ("i8", "int8", "int8", "int32", "MN", 64, 8, 1, {}, "N=8"),
        ("f8f6f4", E4M3, E4M3, "float32", "MN", 128, 24, 1, {}, "N=24"),
        ("f8f6f4", E4M3, E4M3, "float16", "MN", 256, 48, 2, {}, "N=48"),
        ("mxf8f6f4", E4M3, E4M3, "float32", "MN", 128, 8, 1, {}, "N=8"),
        ("f16", "bfloat16", "bfloat16", "float16", "K", 128, 64, 1, {}, "float32 accumulator"),
        ("f16", "float16", "bfloat16", "float16", "K", 128, 64, 1, {}, "float32 accumulator"),
        ("mxf4", FP4, FP4, "float32", "K", 128, 64, 1, {"sfa_id": 1}, "sfa_id=1"),
        ("mxf4nvf4", FP4, FP4, "float32", "K", 128, 64, 1, {"scale_vec": 4, "sfb_id": 2}, "(0,)"),
    ],
)
def test_refused_by_tilemem(kind, a, b, d, b_major, m, n, cta_group, extra, words):
    """PTX ISA tcgen05.mma "Matrix shape" / "Instruction descriptor" and CuTe's static_asserts
    (SM100_MMA_F8F6F4_SS: N % 16 with an MN-major B; _2x1SM_SS: N % 32) refuse these."""
    from tilemem.layout.operand import instr_descriptor

    with pytest.raises(LayoutError) as err:
        instr_descriptor(kind, m, n, a, b, d, b_major=b_major, cta_group=cta_group, **extra)
    assert words in str(err.value)


# -- CuTe's answers kept as constants: these run without nvcc -------------------------------------


def tilemem_answer(query: str) -> int:
    """tilemem's value for one oracle query line, in the oracle's format."""
    from tilemem.layout.operand import instr_descriptor

    what, *f = query.split()
    if what == "smem":
        arch, major, mode, bits, order, rows, cb, stage, row0, col0, base = (
            int(x) if x not in ("K", "MN") else x for x in f
        )
        dtype, contig, mode = DTYPES[bits], cb * 8 // bits, SwizzleMode(mode)
        layout = (
            mma_shared_layout(dtype, mode, (cute.STAGES, rows, contig))
            if order == 0
            else atoms_contiguous_first(dtype, mode, rows, contig, bits)
        )
        start = base + operand_byte_offset(layout, dtype, (stage, row0, col0))
        return smem_descriptor(layout, dtype, arch=ARCHS[arch], major=major, start_address=start)
    majors = {"0": "K", "1": "MN"}
    if what == "instr":
        kind, a, b, d, am, bm, m, n, na, nb, sat = f
        cta_group = 2 if int(m) == 256 else 1
        value = instr_descriptor(
            kind, int(m), int(n), a, b, d, a_major=majors[am], b_major=majors[bm],
            negate_a=na == "1", negate_b=nb == "1", saturate=sat == "1", cta_group=cta_group,
        )  # fmt: skip
    else:
        kind, a, b, sf, am, bm, m, n, sfa, sfb = f
        cta_group = 2 if int(m) == 256 else 1
        value = instr_descriptor(
            kind, int(m), int(n), a, b, a_major=majors[am], b_major=majors[bm], sf_dtype=sf,
            cta_group=cta_group, sfa_id=int(sfa) >> 30, sfb_id=int(sfb) >> 30,
        )  # fmt: skip
    return value << 32


# printed by tests/oracle/cute.py (CuTe 4.2.0 make_gmma_desc / make_umma_desc /
# make_runtime_instr_desc(_block_scaled)) for the query on the left
CUTE_ANSWERS = [
    ("smem 90 K 3 16 0 128 128 1 64 16 1024", 0x4000004000010642),
    ("smem 90 K 0 16 0 128 128 0 0 0 0", 0x0000000800800000),
    ("smem 90 MN 3 16 0 128 256 2 16 0 2048", 0x4000004004001100),
    ("smem 90 MN 0 16 0 128 256 0 0 0 0", 0x0000008000080000),
    ("smem 90 K 1 8 0 64 128 0 0 32 0", 0xC000001000010080),
    ("smem 100 K 2 32 0 256 128 1 0 8 4096", 0x8000402000010902),
    ("smem 100 MN 3 16 0 128 256 0 0 0 0", 0x4000404004000000),
    ("smem 100 MN 1 8 1 64 512 0 32 0 1024", 0xC000410000100440),
    ("smem 100 MN 0 16 1 128 256 0 16 0 0", 0x0000400800800100),
    ("smem 100 K 0 8 0 64 512 2 0 64 8192", 0x0000400800401300),
    ("instr f16 bfloat16 bfloat16 float32 0 1 128 256 0 0 0", 0x0841049000000000),
    ("instr f16 float16 float16 float16 1 0 64 8 1 0 0", 0x0402A00000000000),
    ("instr tf32 float32 float32 float32 0 0 128 128 0 1 0", 0x0820491000000000),
    # (B K-major: an MN-major 8-bit B at N = 24 is illegal, test_refused_by_tilemem)
    ("instr i8 int8 uint8 int32 1 0 128 24 0 0 1", 0x080680A800000000),
    ("instr f8f6f4 float6_e3m2fn float4_e2m1fn float32 0 0 256 16 0 0 0", 0x1004161000000000),
    ("instr f8f6f4 float8_e5m2 float8_e4m3fn float16 1 0 128 248 0 0 0", 0x083E808000000000),
    (
        "bs mxf4nvf4 float4_e2m1fn float4_e2m1fn float8_e4m3fn 0 0 128 256 0 0",  # 4X: ids 0
        0x0840048000000000,
    ),
    (
        "bs mxf8f6f4 float6_e2m3fn float8_e5m2 float8_e8m0fnu 0 1 256 64 2147483648 0",
        0x5091058000000000,
    ),
    (
        "bs mxf4 float4_e2m1fn float4_e2m1fn float8_e8m0fnu 0 0 128 8 0 2147483648",  # 2X: 0, 2
        0x088204A000000000,
    ),
]


@pytest.mark.parametrize("query, want", CUTE_ANSWERS)
def test_recorded_cute_answers(query, want):
    assert tilemem_answer(query) == want


def test_recorded_cute_answers_are_current(oracle):
    """The constants above are what the oracle says today."""
    queries = [q for q, _ in CUTE_ANSWERS]
    assert oracle(queries) == [v for _, v in CUTE_ANSWERS]
