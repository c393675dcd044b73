"""What the tensor cores decode: shared-memory matrix descriptors, tcgen05 instruction
descriptors, and the shared-memory address of every operand element they name.

The inverse of :mod:`tilemem.layout.operand`, written from the PTX ISA rather than from
tilemem's encoders, so that a simulator reading a kernel's descriptor bits fetches what the
hardware fetches: a wrong LBO, SBO, swizzle or base offset gives wrong operands.

Shared-memory descriptor, 64 bits (PTX ISA 9.0, "Matrix Descriptor Format" of wgmma for
sm_90a; "Shared Memory Descriptor" of tcgen05 for sm_100a):

========  =================================================================
bits      field
========  =================================================================
0-13      start address >> 4 (the low 18 bits of the shared-window address)
16-29     leading-dimension byte offset (LBO) >> 4
32-45     stride-dimension byte offset (SBO) >> 4
46-48     tcgen05: version, fixed 0b001
49-51     base offset: (pattern start >> 7) & 7 when the swizzle's repeating pattern
          does not start on its boundary (1024 / 512 / 256 bytes), else 0
52        tcgen05: LBO mode (0: relative byte offset)
62-63     wgmma layout: 0 none (interleave), 1 128B, 2 64B, 3 32B
61-63     tcgen05 layout: 0 none, 1 128B with 32-byte atoms, 2 128B, 4 64B, 6 32B
========  =================================================================

Canonical layouts, in 16-byte units (PTX ISA "Shared Memory Matrix Layout"; CuTe's
``make_gmma_desc`` / ``make_umma_desc`` comments give the same), ``W`` the swizzle row in
16-byte chunks (1 none, 2 for 32B, 4 for 64B, 8 for 128B):

=========  =========  ========================================================
major      swizzle    (row r of the strided dim, 16-byte chunk c of the contiguous dim)
=========  =========  ========================================================
K          none       (r % 8) * 1  + (r // 8) * SBO + c * LBO
K          W          (r % 8) * W  + (r // 8) * SBO + c            (c < W)
MN         none       (k % 8) * 1  + (k // 8) * LBO + c * SBO
MN         W          (k % 8) * W  + (k // 8) * SBO + (c % W) + (c // W) * LBO
=========  =========  ========================================================

(K-major: r is the M/N row, c the K chunk; MN-major: k is the K row, c the M/N chunk.) The
swizzle ``Swizzle<B, M, S>`` then XORs address bits ``[M, M+B)`` with bits ``[M+S, M+S+B)``
of the *absolute* address: 32B ``<1,4,3>``, 64B ``<2,4,3>``, 128B ``<3,4,3>``, 128B with
32-byte atoms ``<2,5,2>``. The base offset moves the pattern's origin (PTX ISA 9.0,
9.7.15.5.1.2.2 "Matrix Descriptor Format" and 9.7.16.4.1 "Shared Memory Descriptor": 0 when
the repeating pattern starts on a 1024 / 512 / 256-byte boundary, else ``(pattern start
addr >> 7) & 7``): a pattern starting at P puts row r at P + 128 r with phase r, so the
phase of address ``a`` is ``((a >> 7) - base_offset) & 7``, i.e. the XOR takes its bits
from ``a - 128 * base_offset``. CuTe and tilemem always encode 0 (operands start on a
pattern repeat, and TMA swizzles absolute addresses, so its tiles' pattern does too).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..dtype import bits_to_float32
from ..errors import LayoutError

# layout field -> (name, swizzle bits B, base M, shift S, row width W in 16-byte chunks)
_SWIZZLES = {
    "none": (0, 4, 3, 1),
    "32B": (1, 4, 3, 2),
    "64B": (2, 4, 3, 4),
    "128B": (3, 4, 3, 8),
    "128B_base32B": (2, 5, 2, 8),
}
_WGMMA_LAYOUTS = {0: "none", 1: "128B", 2: "64B", 3: "32B"}
_TCGEN05_LAYOUTS = {0: "none", 1: "128B_base32B", 2: "128B", 4: "64B", 6: "32B"}


def _bits(word: int, lo: int, width: int) -> int:
    return (word >> lo) & ((1 << width) - 1)


@dataclass(frozen=True)
class SmemDescriptor:
    """A decoded shared-memory matrix descriptor (byte values, not the >> 4 fields)."""

    start: int  # shared-window byte address of the operand's first 16-byte chunk
    lbo: int
    sbo: int
    swizzle: str  # "none", "32B", "64B", "128B", "128B_base32B"
    base_offset: int
    arch: str  # "wgmma" (sm_90) or "tcgen05" (sm_100)
    version: int = 0  # tcgen05 bits 46-48 (must be 1)
    lbo_mode: int = 0  # tcgen05 bit 52

    @property
    def row_chunks(self) -> int:
        """16-byte chunks per swizzle row (W): 1, 2, 4 or 8."""
        return _SWIZZLES[self.swizzle][3]


def _word(desc: int, bits: int, what: str) -> int:
    if isinstance(desc, bool) or not isinstance(desc, (int, np.integer)):
        raise LayoutError(f"a {what} is an integer of {bits} bits, got {desc!r}")
    desc = int(desc)
    if not 0 <= desc < 1 << bits:
        raise LayoutError(f"a {what} is an unsigned {bits}-bit integer, got {desc:#x}")
    return desc


def decode_wgmma_descriptor(desc: int) -> SmemDescriptor:
    """Fields of a wgmma (sm_90a) shared-memory descriptor (PTX ISA "Matrix Descriptor
    Format": bits 0-13 start, 16-29 LBO, 32-45 SBO, 49-51 base offset, 62-63 layout)."""
    d = _word(desc, 64, "wgmma matrix descriptor")
    return SmemDescriptor(
        start=_bits(d, 0, 14) << 4,
        lbo=_bits(d, 16, 14) << 4,
        sbo=_bits(d, 32, 14) << 4,
        swizzle=_WGMMA_LAYOUTS[_bits(d, 62, 2)],
        base_offset=_bits(d, 49, 3),
        arch="wgmma",
    )


def decode_tcgen05_descriptor(desc: int) -> SmemDescriptor:
    """Fields of a tcgen05 (sm_100a) shared-memory descriptor (PTX ISA "Shared Memory
    Descriptor": as wgmma's, plus version 46-48, LBO mode 52, a 3-bit layout at 61-63).

    A layout code the PTX ISA leaves undefined (3, 5, 7) raises :class:`LayoutError`.
    """
    d = _word(desc, 64, "tcgen05 shared-memory descriptor")
    code = _bits(d, 61, 3)
    if code not in _TCGEN05_LAYOUTS:
        raise LayoutError(
            f"tcgen05 descriptor {d:#018x}: layout type {code} is undefined; the PTX ISA "
            "defines 0 (none), 1 (128B, 32B atoms), 2 (128B), 4 (64B), 6 (32B)"
        )
    return SmemDescriptor(
        start=_bits(d, 0, 14) << 4,
        lbo=_bits(d, 16, 14) << 4,
        sbo=_bits(d, 32, 14) << 4,
        swizzle=_TCGEN05_LAYOUTS[code],
        base_offset=_bits(d, 49, 3),
        arch="tcgen05",
        version=_bits(d, 46, 3),
        lbo_mode=_bits(d, 52, 1),
    )


def swizzle_address(addr: np.ndarray, swizzle: str, base_offset: int = 0) -> np.ndarray:
    """``Swizzle<B, M, S>`` of absolute shared-memory byte addresses whose pattern starts
    ``base_offset`` 128-byte rows past its boundary (see the module docstring):
    ``a ^ (((a - 128 * base_offset) >> S) & (((1 << B) - 1) << M))``."""
    b, m, s, _ = _SWIZZLES[swizzle]
    a = np.asarray(addr, dtype=np.int64)
    if b == 0:
        return a
    src = a - 128 * base_offset  # two's complement: the masked bits wrap modulo the pattern
    return a ^ ((src >> s) & (((1 << b) - 1) << m))


def operand_addresses(
    desc: SmemDescriptor, rows: int, cols: int, bits: int, major: str = "K"
) -> np.ndarray:
    """Absolute shared-memory byte address of every element of an MMA operand.

    The operand is ``rows`` x ``cols`` in its own terms: K-major, ``rows`` of M (or N) by
    ``cols`` of K; MN-major, ``rows`` of K by ``cols`` of M (or N); the second index is the
    contiguous one. Returns int64 ``(rows, cols)``: the byte holding each element (a
    sub-byte element's bit offset in it is ``(index * bits) % 8``, low bits first).
    """
    if major not in ("K", "MN"):
        raise LayoutError(f"major must be 'K' or 'MN', got {major!r}")
    if bits not in (4, 8, 16, 32):
        raise LayoutError(f"operand elements are 4, 8, 16 or 32 bits wide, got {bits}")
    per_chunk = 128 // bits
    if rows % 8 or cols % per_chunk:
        raise LayoutError(
            f"an operand is whole 8-row x 16-byte core matrices: {rows} x {cols} elements of "
            f"{bits} bits needs rows % 8 == 0 and cols % {per_chunk} == 0"
        )
    if desc.swizzle == "128B_base32B":
        raise LayoutError(
            "the tcgen05 layout 1 (128B swizzle with 32-byte atoms, MN-major only: K in groups "
            "of 4 rows) is not modeled; use layout 2 (128B)"
        )
    w = desc.row_chunks
    r = np.arange(rows, dtype=np.int64)[:, None]
    e = np.arange(cols, dtype=np.int64)[None, :]
    c, within = e // per_chunk, (e % per_chunk) * bits // 8
    if major == "K":
        if desc.swizzle != "none" and cols // per_chunk > w:
            raise LayoutError(
                f"a K-major {desc.swizzle} operand row holds {w * 16} bytes of K; "
                f"{cols * bits // 8} bytes need a descriptor per swizzle-row slice"
            )
        group, chunk = desc.sbo, (desc.lbo if desc.swizzle == "none" else 16)
        offset = (r % 8) * w * 16 + (r // 8) * group + c * chunk
    elif desc.swizzle == "none":
        offset = (r % 8) * 16 + (r // 8) * desc.lbo + c * desc.sbo
    else:
        offset = (r % 8) * w * 16 + (r // 8) * desc.sbo + (c % w) * 16 + (c // w) * desc.lbo
    return swizzle_address(desc.start + offset, desc.swizzle, desc.base_offset) + within


def operand_values(
    read: Callable[[np.ndarray, int], np.ndarray],
    desc: SmemDescriptor,
    rows: int,
    cols: int,
    fmt: str,
    bits: int,
    major: str = "K",
) -> np.ndarray:
    """The operand's values as float32 (rows, cols), read through ``read(addrs, nbytes)``
    (a simulator's shared-memory read: uint8 of shape ``addrs.shape + (nbytes,)``).

    ``fmt`` is a :func:`tilemem.dtype.bits_to_float32` format; ``bits`` the width of its
    container in shared memory (4 for packed fp4 of the mxf4 kinds, 8 for one-byte types).
    Elements are little-endian; packed 4-bit elements fill the low nibble first. (fp6 and
    fp4 under kind::f8f6f4 sit packed inside 16-byte chunks; the simulator's tcgen05.mma
    reads them itself.)
    """
    addrs = operand_addresses(desc, rows, cols, bits, major)
    raw = read(addrs, max(1, bits // 8)).astype(np.uint32)
    word: np.ndarray = np.zeros(addrs.shape, dtype=np.uint32)
    for i in range(raw.shape[-1]):
        word |= raw[..., i] << np.uint32(8 * i)
    if bits == 4:
        shift = (np.arange(cols, dtype=np.uint32) % 2) * 4
        word = (word >> shift[None, :]) & 0xF
    return bits_to_float32(word, fmt)


# -- tcgen05 instruction descriptor --------------------------------------------------------

# A/B format codes per kind (PTX ISA "Instruction descriptor"; CuTe UMMA::*Format)
_KIND_FORMATS = {
    "f16": {0: "float16", 1: "bfloat16"},
    "tf32": {2: "tf32"},
    "f8f6f4": {
        0: "float8_e4m3fn",
        1: "float8_e5m2",
        3: "float6_e2m3fn",
        4: "float6_e3m2fn",
        5: "float4_e2m1fn",
    },
    "i8": {0: "uint8", 1: "int8"},
    "mxf4": {1: "float4_e2m1fn"},
    "mxf4nvf4": {1: "float4_e2m1fn"},
}
_KIND_FORMATS["mxf8f6f4"] = _KIND_FORMATS["f8f6f4"]
_D_FORMATS = {0: "float16", 1: "float32", 2: "int32"}
_BLOCK_SCALED = ("mxf8f6f4", "mxf4", "mxf4nvf4")


@dataclass(frozen=True)
class InstrDescriptor:
    """A decoded ``tcgen05.mma`` instruction descriptor; ``kind`` comes from the instruction
    (it is not in the descriptor), ``a`` / ``b`` / ``d`` are format names."""

    kind: str
    m: int
    n: int
    a: str
    b: str
    d: str  # accumulator format ("float32" for every block-scaled kind)
    a_major: str
    b_major: str
    negate_a: bool
    negate_b: bool
    saturate: bool = False
    sparse: bool = False
    scale_format: str | None = None  # block-scaled: "float8_e8m0fnu" (UE8M0) or "ue4m3"
    sfa_id: int = 0
    sfb_id: int = 0


def decode_instr_descriptor(idesc: int, kind: str) -> InstrDescriptor:
    """Fields of the 32-bit instruction descriptor of ``tcgen05.mma...kind::{kind}``.

    Dense kinds (PTX ISA "Instruction descriptor"; CuTe ``UMMA::InstrDescriptor``): bit 2
    sparse, 3 saturate, 4-5 D format (0 f16, 1 f32, 2 s32), 7-9 A format, 10-12 B format,
    13/14 negate A/B, 15/16 A/B major (1 = MN), 17-22 N >> 3, 24-28 M >> 4. Block-scaled
    kinds (``InstrDescriptorBlockScaled``): 4-5 B scale-factor id, 23 scale format (0
    UE4M3, 1 UE8M0), 29-30 A scale-factor id; the accumulator is f32. A format code the
    kind does not define raises :class:`LayoutError`, as the instruction is illegal.
    """
    if kind not in _KIND_FORMATS:
        raise LayoutError(f"unknown tcgen05 kind {kind!r}; known: {', '.join(_KIND_FORMATS)}")
    d = _word(idesc, 32, "tcgen05 instruction descriptor")
    formats = _KIND_FORMATS[kind]
    codes = {"A": _bits(d, 7, 3), "B": _bits(d, 10, 3)}
    for which, code in codes.items():
        if code not in formats:
            raise LayoutError(
                f"instruction descriptor {d:#010x}: {which} format {code} is not defined for "
                f"kind::{kind} (codes {sorted(formats)})"
            )
    scaled = kind in _BLOCK_SCALED
    d_code = _bits(d, 4, 2)
    if not scaled and d_code not in _D_FORMATS:
        raise LayoutError(f"instruction descriptor {d:#010x}: D format {d_code} is undefined")
    return InstrDescriptor(
        kind=kind,
        m=_bits(d, 24, 5) << 4,
        n=_bits(d, 17, 6) << 3,
        a=formats[codes["A"]],
        b=formats[codes["B"]],
        d="float32" if scaled else _D_FORMATS[d_code],
        a_major="MN" if _bits(d, 15, 1) else "K",
        b_major="MN" if _bits(d, 16, 1) else "K",
        negate_a=bool(_bits(d, 13, 1)),
        negate_b=bool(_bits(d, 14, 1)),
        saturate=bool(_bits(d, 3, 1)) and not scaled,
        sparse=bool(_bits(d, 2, 1)),
        scale_format=(("ue4m3", "float8_e8m0fnu")[_bits(d, 23, 1)] if scaled else None),
        sfa_id=_bits(d, 29, 2) if scaled else 0,
        sfb_id=_bits(d, 4, 2) if scaled else 0,
    )
