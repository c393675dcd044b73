"""Descriptor decoding and operand addresses: by hand from the PTX ISA bit positions, and
against CUTLASS/CuTe (tests/oracle): CuTe encodes a descriptor of a slice of its own swizzled
shared-memory tile; decoding it must give the tile's element addresses as CuTe places them
(&slice(mn, k)), for both majors, every swizzle, 8/16/32-bit elements, stages, K steps and
start addresses, including a tile that does not start on its swizzle period."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from oracle import cute
from tilemem.errors import LayoutError
from tilemem.layout.decode import (
    SmemDescriptor,
    decode_instr_descriptor,
    decode_tcgen05_descriptor,
    decode_wgmma_descriptor,
    operand_addresses,
    swizzle_address,
)

SWIZZLES = ("none", "32B", "64B", "128B")


@pytest.fixture(scope="module")
def oracle_exe():
    try:
        return cute.build()
    except cute.OracleUnavailable as e:
        pytest.skip(f"CuTe oracle unavailable: {e}")


def test_wgmma_fields_by_hand():
    # PTX ISA "Matrix Descriptor Format": start 0-13, LBO 16-29, SBO 32-45, base offset
    # 49-51, layout 62-63 (1 = 128B). start 0x1230 >> 4 = 0x123, LBO 16 -> 1, SBO 1024 -> 64
    word = 0x123 | (1 << 16) | (64 << 32) | (5 << 49) | (1 << 62)
    d = decode_wgmma_descriptor(word)
    assert (d.start, d.lbo, d.sbo, d.base_offset, d.swizzle) == (0x1230, 16, 1024, 5, "128B")
    layouts = [decode_wgmma_descriptor(code << 62).swizzle for code in range(4)]
    assert layouts == ["none", "128B", "64B", "32B"]


def test_tcgen05_fields_by_hand():
    # tcgen05 "Shared Memory Descriptor": version 46-48 (0b001), LBO mode 52, layout 61-63
    word = 0x3FFF | (2 << 16) | (8 << 32) | (1 << 46) | (1 << 52) | (4 << 61)
    d = decode_tcgen05_descriptor(word)
    assert (d.start, d.lbo, d.sbo, d.version, d.lbo_mode) == (0x3FFF0, 32, 128, 1, 1)
    assert d.swizzle == "64B"
    layouts = [decode_tcgen05_descriptor(code << 61).swizzle for code in (0, 1, 2, 4, 6)]
    assert layouts == ["none", "128B_base32B", "128B", "64B", "32B"]


@pytest.mark.parametrize("code", [3, 5, 7])
def test_undefined_tcgen05_layout_is_refused(code):
    with pytest.raises(LayoutError, match=f"layout type {code}"):
        decode_tcgen05_descriptor(code << 61)


def test_descriptor_must_be_a_64_bit_integer():
    with pytest.raises(LayoutError, match="64-bit"):
        decode_wgmma_descriptor(1 << 64)
    with pytest.raises(LayoutError, match="integer"):
        decode_wgmma_descriptor(1.5)  # type: ignore[arg-type]


def test_swizzle_acts_on_absolute_addresses():
    # Swizzle<3,4,3>: bits 4-6 ^= bits 7-9. 0x2480: bits 7-9 = 1, chunk 0 -> 0x2490
    assert swizzle_address(np.array([0x2480, 0x24A0]), "128B").tolist() == [0x2490, 0x24B0]
    # Swizzle<1,4,3> (32B): bit 4 ^= bit 7; Swizzle<2,4,3> (64B): bits 4-5 ^= bits 7-8
    assert swizzle_address(np.array([0x80, 0x90]), "32B").tolist() == [0x90, 0x80]
    assert swizzle_address(np.array([0x180]), "64B").tolist() == [0x1B0]
    # Swizzle<2,5,2> (128B with 32-byte atoms): bits 5-6 ^= bits 7-8
    assert swizzle_address(np.array([0x180]), "128B_base32B").tolist() == [0x1E0]
    # base offset 1: the pattern starts at a row with (addr >> 7) & 7 == 1 (PTX ISA "Matrix
    # Descriptor Format"), so 0x80 is its row 0 (no XOR) and 0x0 its row 7 (chunk 0 -> 7)
    assert swizzle_address(np.array([0x80, 0x0]), "128B", base_offset=1).tolist() == [0x80, 0x70]


def test_k_major_128b_addresses_by_hand():
    # bf16, 128B swizzle, start 1024: row r, element k at 1024 + 128 r + 2 k before the XOR;
    # 8-row groups SBO = 1024 apart. Row 9 = group 1, row 1: 1024 + 1024 + 128 = 0x880,
    # element 8 adds 16 -> 0x890, XOR (row 1) << 4 -> 0x880
    d = SmemDescriptor(start=1024, lbo=16, sbo=1024, swizzle="128B", base_offset=0, arch="wgmma")
    a = operand_addresses(d, 16, 16, 16, "K")
    assert a[9, 8] == 0x880
    assert a[0, 0] == 1024 and a[0, 1] == 1026


def test_mn_major_none_addresses_by_hand():
    # MN-major, no swizzle: (K row k, MN chunk c) at (k % 8) * 16 + (k // 8) * LBO + c * SBO
    d = SmemDescriptor(start=0, lbo=256, sbo=2048, swizzle="none", base_offset=0, arch="wgmma")
    a = operand_addresses(d, 16, 16, 16, "MN")  # 16 K rows x 16 MN elements (2 chunks)
    assert a[9, 8] == 1 * 16 + 1 * 256 + 1 * 2048
    assert a[3, 5] == 3 * 16 + 5 * 2


def test_fp4_elements_share_bytes():
    d = SmemDescriptor(start=0, lbo=16, sbo=1024, swizzle="128B", base_offset=0, arch="tcgen05")
    a = operand_addresses(d, 8, 64, 4, "K")  # 64 fp4 = 32 bytes: one MMA's K
    assert a[0, :4].tolist() == [0, 0, 1, 1]


def test_operand_must_be_whole_core_matrices():
    d = SmemDescriptor(start=0, lbo=16, sbo=1024, swizzle="128B", base_offset=0, arch="wgmma")
    with pytest.raises(LayoutError, match="rows % 8"):
        operand_addresses(d, 12, 16, 16, "K")
    with pytest.raises(LayoutError, match="swizzle-row"):
        operand_addresses(d, 8, 128, 16, "K")  # 256 bytes of K in a 128-byte row


def test_every_field_moves_the_addresses():
    """A wrong LBO, SBO, swizzle, base offset or start reads other bytes (what lets a
    simulator catch a wrong descriptor)."""
    right = SmemDescriptor(start=2048, lbo=128, sbo=256, swizzle="none", base_offset=0, arch="x")
    wrongs = [
        SmemDescriptor(2048, 256, 256, "none", 0, "x"),
        SmemDescriptor(2048, 128, 512, "none", 0, "x"),
        SmemDescriptor(2064, 128, 256, "none", 0, "x"),
    ]
    ref = operand_addresses(right, 16, 16, 16, "K")
    for w in wrongs:
        assert not np.array_equal(operand_addresses(w, 16, 16, 16, "K"), ref)
    sw = SmemDescriptor(1024, 16, 1024, "128B", 0, "x")
    ref = operand_addresses(sw, 16, 16, 16, "K")
    for w in (
        SmemDescriptor(1024, 16, 1024, "64B", 0, "x"),
        SmemDescriptor(1024, 16, 1024, "128B", 3, "x"),
    ):
        assert not np.array_equal(operand_addresses(w, 16, 16, 16, "K"), ref)


# -- against CuTe ------------------------------------------------------------------------------

SHAPES = ((64, 128), (128, 256))  # of cute.SMEM_SHAPES: (strided, contiguous bytes)
BASES = (37 * 1024, 640)  # 640: not on any swizzle period (256 / 512 / 1024 bytes)


def address_cases():
    for arch, major, mode, bits, order, (rows, cb) in itertools.product(
        (90, 100), ("K", "MN"), range(4), (8, 16, 32), (0, 1), SHAPES
    ):
        k_mma = 256 // bits
        contig = cb * 8 // bits
        if major == "K":  # 64-row slices; first and last K step
            slices = [(0, 0), (rows - 64, contig - k_mma)]
        else:
            slices = [(0, 0), (rows - k_mma, 0)]
        for (row0, col0), base in itertools.product(slices, BASES):
            yield arch, major, mode, bits, order, rows, cb, 1, row0, col0, base


def test_decoded_addresses_match_cute(oracle_exe):
    cases = list(address_cases())
    query = [" ".join(map(str, c)) for c in cases]
    descs = cute.run(oracle_exe, [f"smem {q}" for q in query])
    addrs = cute.run_lines(oracle_exe, [f"saddr {q}" for q in query])
    mismatches = []
    for case, desc, line in zip(cases, descs, addrs):
        arch, major, mode, bits, _, rows, cb, *_ = case
        want = np.array([int(x, 16) for x in line.split()], dtype=np.int64)
        k_mma = 256 // bits
        mn = min(rows, 64) if major == "K" else cb * 8 // bits
        want = want.reshape(mn, k_mma)  # CuTe's slice is (MN, K)
        d = decode_wgmma_descriptor(desc) if arch == 90 else decode_tcgen05_descriptor(desc)
        assert d.swizzle == SWIZZLES[mode]
        if major == "K":
            got = operand_addresses(d, mn, k_mma, bits, "K")
        else:
            got = operand_addresses(d, k_mma, mn, bits, "MN").T
        if not np.array_equal(got, want):
            bad = np.argwhere(got != want)[0]
            mismatches.append(
                f"{case}: at {tuple(bad)} decoded {got[tuple(bad)]:#x} CuTe {want[tuple(bad)]:#x}"
            )
    assert len(cases) > 700
    assert not mismatches, f"{len(mismatches)} of {len(cases)} differ:\n" + "\n".join(
        mismatches[:10]
    )


def test_instr_descriptor_decodes_cute_dense(oracle_exe):
    cases = [
        ("f16", "bfloat16", "bfloat16", "float32", 1, 0, 128, 256, 0, 1, 0),
        ("f16", "float16", "bfloat16", "float16", 0, 1, 64, 8, 1, 0, 0),
        ("tf32", "float32", "float32", "float32", 1, 1, 128, 120, 0, 0, 0),
        ("i8", "int8", "uint8", "int32", 0, 0, 128, 16, 0, 0, 1),
        ("f8f6f4", "float8_e5m2", "float4_e2m1fn", "float32", 0, 0, 256, 32, 1, 1, 0),
    ]
    queries = ["instr " + " ".join(map(str, c)) for c in cases]
    for case, word in zip(cases, cute.run(oracle_exe, queries)):
        kind, a, b, dty, am, bm, m, n, na, nb, sat = case
        d = decode_instr_descriptor(word >> 32, kind)  # CuTe's runtime form: upper 32 bits
        a_name = "tf32" if a == "float32" else a
        b_name = "tf32" if b == "float32" else b
        assert (d.a, d.b, d.d, d.m, d.n) == (a_name, b_name, dty, m, n)
        assert (d.a_major, d.b_major) == (("K", "MN")[am], ("K", "MN")[bm])
        assert (d.negate_a, d.negate_b, d.saturate, d.sparse) == (
            bool(na),
            bool(nb),
            bool(sat),
            False,
        )


def test_instr_descriptor_decodes_cute_block_scaled(oracle_exe):
    # the scale factors' TMEM addresses carry the ids in bits 30-31 (CuTe copies them)
    cases = [
        ("mxf4nvf4", "float4_e2m1fn", "float4_e2m1fn", "float8_e4m3fn", 128, 256, 2, 3),
        ("mxf4nvf4", "float4_e2m1fn", "float4_e2m1fn", "float8_e8m0fnu", 128, 64, 1, 0),
        ("mxf8f6f4", "float8_e4m3fn", "float6_e3m2fn", "float8_e8m0fnu", 256, 128, 0, 2),
    ]
    queries = [
        f"bs {k} {a} {b} {sf} 0 0 {m} {n} {sa << 30} {sb << 30}"
        for k, a, b, sf, m, n, sa, sb in cases
    ]
    for case, word in zip(cases, cute.run(oracle_exe, queries)):
        kind, a, b, sf, m, n, sa, sb = case
        d = decode_instr_descriptor(word >> 32, kind)
        want_sf = "ue4m3" if sf == "float8_e4m3fn" else sf
        assert (d.a, d.b, d.d, d.m, d.n, d.scale_format) == (a, b, "float32", m, n, want_sf)
        assert (d.sfa_id, d.sfb_id) == (sa, sb)


def test_instr_descriptor_by_hand():
    # kind::f16, bf16 x bf16 -> f32, M=128, N=64, A MN-major: D fmt 1 << 4, A/B fmt 1 << 7 / 10,
    # a_major 1 << 15, N >> 3 = 8 << 17, M >> 4 = 8 << 24
    word = (1 << 4) | (1 << 7) | (1 << 10) | (1 << 15) | (8 << 17) | (8 << 24)
    d = decode_instr_descriptor(word, "f16")
    assert (d.a, d.b, d.d, d.m, d.n, d.a_major, d.b_major) == (
        "bfloat16",
        "bfloat16",
        "float32",
        128,
        64,
        "MN",
        "K",
    )
    with pytest.raises(LayoutError, match="A format 2"):
        decode_instr_descriptor(2 << 7, "f8f6f4")


def test_128b_base32b_operands_are_refused():
    d = decode_tcgen05_descriptor((1 << 61) | (1 << 46))
    with pytest.raises(LayoutError, match="not modeled"):
        operand_addresses(d, 8, 8, 16, "MN")
