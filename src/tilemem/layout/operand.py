"""Descriptors of MMA operands: shared-memory matrix descriptors (wgmma, tcgen05), derived
from a buffer's layout for either major, and tcgen05 instruction descriptors for every kind.

Shared-memory descriptor, 64 bits (PTX ISA "Matrix Descriptor Format"; wgmma
sm_90a and tcgen05 sm_100a; docs/HARDWARE-RULES.md):

========  ===============================================================
bits      field
========  ===============================================================
0-13      start address >> 4
16-29     leading-dimension byte offset (LBO) >> 4
32-45     stride byte offset (SBO) >> 4
46-48     tcgen05 only: fixed 0b001
49-51     base offset (0: operands start on the swizzle repeat)
52        tcgen05 only: LBO mode (0)
62-63     wgmma layout: 0 none, 1 128B, 2 64B, 3 32B
61-63     tcgen05 layout: 0 none, 2 128B, 4 64B, 6 32B
========  ===============================================================

An operand tile is K-major (shape ``(..., MN, K)``, K contiguous) or MN-major
(``(..., K, MN)``, MN contiguous); ``mma_shared_layout`` lays out both the same
way along the contiguous dimension. With ``dist(r, c)`` the byte distance of
(row r, column c) from (0, 0) in the tile's *unswizzled* layout, ``W`` the
swizzle row (atom width, elements) and ``e16`` the elements of 16 bytes:

=========  =========  ==========================  ==========================
major      swizzle    LBO                         SBO
=========  =========  ==========================  ==========================
K          yes        16 (field 1, unused)        dist(8, 0): 8-row groups
K          none       dist(0, e16): K core mats   dist(8, 0): 8-row groups
MN         yes        dist(0, W): next MN atom    dist(8, 0): 8-row K groups
MN         none       dist(8, 0): 8-row K groups  dist(0, e16): MN core mats
=========  =========  ==========================  ==========================

(CuTe's ``make_gmma_desc`` / ``make_umma_desc`` canonical forms; a distance the
tile does not have, e.g. a second MN atom of a one-atom tile, is encoded 0, and
so is the K-group pitch of MN-major 32-bit operands, whose 32-byte MMA K is a
single 8-row group.)
Instruction descriptors: see :func:`instr_descriptor`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..dtype import DTypeLike, as_dtype
from ..errors import LayoutError
from .core import ComposeLayout, Layout, TileLayout
from .smem import SwizzleMode, layout_swizzle_mode

_WGMMA_LAYOUT = {
    SwizzleMode.SWIZZLE_NONE: 0,
    SwizzleMode.SWIZZLE_128B_ATOM: 1,
    SwizzleMode.SWIZZLE_64B_ATOM: 2,
    SwizzleMode.SWIZZLE_32B_ATOM: 3,
}
_TCGEN05_LAYOUT = {
    SwizzleMode.SWIZZLE_NONE: 0,
    SwizzleMode.SWIZZLE_128B_ATOM: 2,
    SwizzleMode.SWIZZLE_64B_ATOM: 4,
    SwizzleMode.SWIZZLE_32B_ATOM: 6,
}
MAJORS = ("K", "MN")


def check_major(major: str, what: str = "major") -> str:
    if major not in MAJORS:
        raise LayoutError(f"{what} must be 'K' or 'MN', got {major!r}")
    return major


@dataclass(frozen=True)
class OperandGeometry:
    """What a shared-memory descriptor needs besides the start address."""

    mode: SwizzleMode
    lbo: int  # bytes, a multiple of 16
    sbo: int  # bytes, a multiple of 16
    major: str = "K"


def tile_of(layout: Layout) -> TileLayout:
    """The unswizzled tile of an operand layout (a ComposeLayout's tile, or the TileLayout)."""
    tile = layout.tile if isinstance(layout, ComposeLayout) else layout
    if not isinstance(tile, TileLayout):
        raise LayoutError(f"an MMA operand needs a (swizzled) TileLayout, got {layout!r}")
    return tile


def operand_geometry(layout: Layout, dtype: DTypeLike, major: str = "K") -> OperandGeometry:
    """LBO/SBO of an operand tile ``(..., rows, cols)`` read ``major`` (see the module table)."""
    check_major(major)
    bits = as_dtype(dtype).bits
    tile = tile_of(layout)
    shape = tile.shape
    if len(shape) < 2 or shape[-2] < 8:
        raise LayoutError(
            f"an MMA operand descriptor needs a tile (..., rows >= 8, cols), got shape {shape}"
        )
    lead = (0,) * (len(shape) - 2)
    rows, cols = shape[-2:]
    mode = layout_swizzle_mode(layout)
    per16 = 128 // bits
    if cols % per16:
        raise LayoutError(
            f"an MMA operand needs its contiguous dimension a multiple of {per16} elements "
            f"(16 bytes), got {cols}"
        )
    origin = tile.apply(*lead, 0, 0)["m"]

    def dist(r: int, c: int) -> int:
        """Bytes from (0, 0) to (r, c), 0 when the tile has no such position."""
        if r >= rows or c >= cols:
            return 0
        return (tile.apply(*lead, r, c)["m"] - origin) * bits // 8

    atom = mode.row_bytes * 8 // bits  # elements of one swizzle row (16 bytes: no swizzle)
    if major == "K":
        # A tile of exactly 8 rows has no second group; the hardware still wants the
        # pitch the layout would give one: 8 swizzle rows, or one 8 x 16-byte core matrix.
        sbo = dist(8, 0) if rows > 8 else 8 * mode.row_bytes
        if mode == SwizzleMode.SWIZZLE_NONE:
            lbo = dist(0, per16) if cols > per16 else rows * 16
        else:
            lbo = 16  # unused by K-major swizzled operands; the field holds 1
    else:
        # one MMA reads 32 bytes of K = 256 // bits rows: a 32-bit type has a single
        # 8-row K group, whose pitch is then unused and encoded 0 (as CuTe does)
        k_pitch = dist(8, 0) if 256 // bits > 8 else 0
        if mode == SwizzleMode.SWIZZLE_NONE:
            lbo, sbo = k_pitch, dist(0, per16)
        else:
            lbo, sbo = dist(0, atom), k_pitch
    return OperandGeometry(mode, lbo, sbo, major)


def operand_byte_offset(layout: Layout, dtype: DTypeLike, coords: Sequence[int]) -> int:
    """Byte offset of the *unswizzled* position of ``coords`` (the hardware swizzles it).

    A descriptor's start address is the tile's origin plus this: the strided
    coordinate must start an 8-row group, the contiguous one a 16-byte chunk.
    """
    bits = as_dtype(dtype).bits
    tile = tile_of(layout)
    *_, r, k = coords
    if r % 8 or (k * bits) % 128:
        raise LayoutError(
            "an MMA operand slice must start on an 8-row group and a 16-byte chunk of its "
            f"contiguous dimension, got row {r}, column {k}"
        )
    return tile.apply(*coords)["m"] * bits // 8


def _field(value: int, name: str) -> int:
    if value % 16 or not 0 <= value >> 4 < 1 << 14:
        raise LayoutError(
            f"descriptor {name} {value} bytes must be a multiple of 16 below {16 << 14}"
        )
    return value >> 4


def wgmma_descriptor_high(geometry: OperandGeometry) -> int:
    """The wgmma descriptor without its start address (fields from bit 14 up)."""
    return (
        (_field(geometry.lbo, "LBO") << 16)
        | (_field(geometry.sbo, "SBO") << 32)
        | (_WGMMA_LAYOUT[geometry.mode] << 62)
    )


def tcgen05_descriptor_high(geometry: OperandGeometry) -> int:
    """The tcgen05 descriptor without its start address (version 0b001 at bit 46)."""
    return (
        (_field(geometry.lbo, "LBO") << 16)
        | (_field(geometry.sbo, "SBO") << 32)
        | (0b001 << 46)
        | (_TCGEN05_LAYOUT[geometry.mode] << 61)
    )


def descriptor(start_address: int, high: int) -> int:
    """Combine a shared-window byte address with the high fields."""
    return high | ((start_address >> 4) & 0x3FFF)


_TCGEN05_ARCHS = ("sm_100a", "sm_103a")
_ARCH_DESCRIPTORS = {
    "sm_90a": wgmma_descriptor_high,
    "sm_100a": tcgen05_descriptor_high,
    "sm_103a": tcgen05_descriptor_high,
}


def smem_descriptor(
    layout: Layout, dtype: DTypeLike, *, arch: str, major: str = "K", start_address: int = 0
) -> int:
    """64-bit shared-memory matrix descriptor of an operand tile laid out by ``layout``.

    ``arch`` is ``"sm_90a"`` (wgmma) or ``"sm_100a"`` (tcgen05); ``major`` says which
    dimension is contiguous ("K": shape (..., MN, K); "MN": (..., K, MN));
    ``start_address`` is the shared-window byte address of the slice's first
    element (the tile's origin plus :func:`operand_byte_offset`).
    """
    if arch not in _ARCH_DESCRIPTORS:
        raise LayoutError(
            f"no MMA shared-memory descriptor for arch {arch!r}; use one of "
            f"{', '.join(sorted(_ARCH_DESCRIPTORS))}"
        )
    if not isinstance(start_address, int) or isinstance(start_address, bool):
        raise LayoutError(f"start_address must be an integer, got {start_address!r}")
    if start_address % 16 or not 0 <= start_address < 1 << 18:
        raise LayoutError(
            f"start_address {start_address} must be a multiple of 16 in [0, {1 << 18}) "
            "(the field holds address >> 4 in 14 bits)"
        )
    if arch in _TCGEN05_ARCHS and check_major(major) == "MN" and as_dtype(dtype).bits == 32:
        raise LayoutError(
            f"{arch}: an MN-major 32-bit (tf32) tcgen05 operand must use 128B swizzling with "
            "32-byte atomicity (descriptor layout 1, SWIZZLE_128B_BASE32B), which tilemem does "
            "not lay out; the hardware rejects every other mode for it (PTX ISA tcgen05 "
            '"Shared memory descriptor"): store the operand K-major'
        )
    high = _ARCH_DESCRIPTORS[arch](operand_geometry(layout, dtype, major))
    return descriptor(start_address, high)


# -- wgmma (sm_90a) ----------------------------------------------------------------------------

# A type -> (K of one wgmma, the B types it pairs with, the accumulator types it takes); PTX ISA
# "wgmma.mma_async", "Matrix shape" and "Register fragments" (.f16 accumulates into .f16 or .f32,
# .bf16 and .tf32 into .f32 only, .e4m3/.e5m2 into .f16 or .f32, .s8/.u8 into .s32)
WGMMA_TYPES: dict[str, tuple[int, tuple[str, ...], tuple[str, ...]]] = {
    "float16": (16, ("float16",), ("float16", "float32")),
    "bfloat16": (16, ("bfloat16",), ("float32",)),
    "float32": (8, ("float32",), ("float32",)),  # tf32 operands stored as float32
    "float8_e4m3fn": (32, ("float8_e4m3fn", "float8_e5m2"), ("float16", "float32")),
    "float8_e5m2": (32, ("float8_e4m3fn", "float8_e5m2"), ("float16", "float32")),
    "int8": (32, ("int8", "uint8"), ("int32",)),
    "uint8": (32, ("int8", "uint8"), ("int32",)),
}
# N of wgmma (M is 64): floating types 8..256 step 8; integer types 8, 16, 24, 32..256 step 16
WGMMA_N = tuple(range(8, 257, 8))
WGMMA_N_INT = (8, 16, 24, *range(32, 257, 16))


def wgmma_k(
    a_dtype: DTypeLike,
    b_dtype: DTypeLike,
    d_dtype: DTypeLike,
    n: int,
    *,
    a_major: str = "K",
    b_major: str = "K",
) -> int:
    """K of ``wgmma.mma_async.m64nNkK`` for these types, after checking the combination
    against :data:`WGMMA_TYPES` and :data:`WGMMA_N`; only 16-bit inputs may be read MN-major
    (the ``imm-trans`` operands, PTX ISA "wgmma.mma_async")."""
    a, b, d = (as_dtype(x).name for x in (a_dtype, b_dtype, d_dtype))
    if a not in WGMMA_TYPES:
        raise LayoutError(f"wgmma takes A in {', '.join(WGMMA_TYPES)}, got {a}")
    k, b_ok, d_ok = WGMMA_TYPES[a]
    if b not in b_ok:
        raise LayoutError(f"wgmma with A {a} takes B in {', '.join(b_ok)}, got {b}")
    if d not in d_ok:
        raise LayoutError(f"wgmma with A {a} accumulates into {' or '.join(d_ok)}, got {d}")
    ns = WGMMA_N_INT if d == "int32" else WGMMA_N
    if type(n) is not int or n not in ns:
        raise LayoutError(
            f"wgmma.m64nNk{k} with A {a}: N={n!r} is not legal; N in {{{ns[0]}, {ns[1]}, {ns[2]},"
            f" ..., {ns[-1]}}} (PTX ISA wgmma.mma_async, Matrix shape)"
        )
    for which, major, name in (("A", a_major, a), ("B", b_major, b)):
        if check_major(major, f"{which.lower()}_major") == "MN" and k != 16:
            raise LayoutError(
                f"wgmma reads {which} ({name}) K-major only; MN-major (transposed) operands "
                "need a 16-bit type (f16, bf16)"
            )
    return k


# -- instruction descriptors (tcgen05.mma) -----------------------------------------------------

# Legality of tcgen05.mma as tables. Sources: PTX ISA 8.7+, section "tcgen05.mma" and its
# subsections "Instruction descriptor" (format codes, the tables of valid type combinations per
# .kind) and "Matrix shape" (valid M x N x K per .kind and .cta_group); CuTe 4.2's
# cute/arch/mma_sm100_umma.hpp and cute/atom/mma_traits_sm100.hpp static_asserts say the same.

# format codes per kind and operand (PTX ISA "Instruction descriptor"; CuTe UMMA::*Format)
_FORMATS: dict[str, dict[str, int]] = {
    "f16": {"float16": 0, "bfloat16": 1},
    "tf32": {"float32": 2},
    "f8f6f4": {
        "float8_e4m3fn": 0,
        "float8_e5m2": 1,
        "float6_e2m3fn": 3,
        "float6_e3m2fn": 4,
        "float4_e2m1fn": 5,
    },
    "i8": {"uint8": 0, "int8": 1},
    "mxf4": {"float4_e2m1fn": 1},
    "mxf4nvf4": {"float4_e2m1fn": 1},
}
_FORMATS["mxf8f6f4"] = _FORMATS["f8f6f4"]
_D_FORMATS = {"float16": 0, "float32": 1, "int32": 2}
# kind -> accumulator (D) types (PTX ISA "Instruction descriptor", valid type combinations)
_D_ALLOWED = {
    "f16": ("float16", "float32"),
    "tf32": ("float32",),
    "f8f6f4": ("float16", "float32"),
    "i8": ("int32",),
    "mxf8f6f4": ("float32",),
    "mxf4": ("float32",),
    "mxf4nvf4": ("float32",),
}
# kind::f16 accumulates into f16 only from f16 inputs: bf16 x bf16 (or mixed) needs an f32 D
_F16_D_NEEDS = ("float16", "float16")
BLOCK_SCALED = ("mxf8f6f4", "mxf4", "mxf4nvf4")
KINDS = tuple(_D_ALLOWED)
# K of one dense MMA per kind (PTX ISA tcgen05 "Matrix shape" table)
MMA_K = {"f16": 16, "tf32": 8, "f8f6f4": 32, "i8": 32, "mxf8f6f4": 32, "mxf4": 64, "mxf4nvf4": 64}
# MN-major reads exist only for 8/16/32-bit formats (PTX ISA "Instruction descriptor", the
# transpose bits; CuTe InstrDescriptor a_major_ note)
_MN_MAJOR_OK = {"float16", "bfloat16", "float32", "float8_e4m3fn", "float8_e5m2", "int8", "uint8"}
# kinds whose B, read MN-major (8-bit), needs N on a coarser grid (PTX ISA "Matrix shape"
# footnote; CuTe SM100_MMA_F8F6F4_SS / _2x1SM_SS): cta_group -> N step (and least N)
_MN_MAJOR_B_N_STEP = {1: 16, 2: 32}
_MN_MAJOR_B_KINDS = ("f8f6f4", "i8", "mxf8f6f4")
# scale factor dtype -> scale format bit 23 (0 UE4M3, 1 UE8M0)
_SCALE_FORMATS = {"float8_e4m3fn": 0, "float8_e8m0fnu": 1}
# (kind, scale factor type) -> the .scale_vec sizes it takes, the first being the default
# (PTX ISA "tcgen05.mma" block scaling: mxf8f6f4 1X with UE8M0; mxf4 2X with UE8M0;
# mxf4nvf4 2X with UE8M0, 4X with UE8M0 or UE4M3)
_SCALE_VEC = {
    ("mxf8f6f4", "float8_e8m0fnu"): (1,),
    ("mxf4", "float8_e8m0fnu"): (2,),
    ("mxf4nvf4", "float8_e8m0fnu"): (2, 4),
    ("mxf4nvf4", "float8_e4m3fn"): (4,),
}
# scale_vec -> the scale-factor ids (sfa_id / sfb_id, which 8-bit slot of the 32-bit TMEM
# column holds this MMA's factors) it may use: 1X any of 4, 2X 0 or 2, 4X only 0
_SF_IDS = {1: (0, 1, 2, 3), 2: (0, 2), 4: (0,)}


def legal_mn(kind: str, cta_group: int = 1, b_major: str = "K") -> dict[int, tuple[int, ...]]:
    """M -> the legal N of dense ``tcgen05.mma`` (no ``.ws``), PTX ISA "tcgen05.mma",
    "Matrix shape".

    ======================  ===========  ===============  ====================================
    kind                    cta_group    M                N
    ======================  ===========  ===============  ====================================
    f16, tf32, f8f6f4       1            64, 128          8..256 step 8
    f16, tf32, f8f6f4       2            128, 256         16..256 step 16
    mxf8f6f4, mxf4(nvf4)    1            128              8..256 step 8
    mxf8f6f4, mxf4(nvf4)    2            128, 256         16..256 step 16
    i8                      1            64, 128          8, 24 and 16..256 step 16
    i8                      2            128, 256         32..256 step 32
    ======================  ===========  ===============  ====================================

    With ``b_major="MN"`` an 8-bit B (kinds f8f6f4, i8, mxf8f6f4) needs N a multiple of 16
    (cta_group::1) or 32 (cta_group::2), from 16 or 32 up.
    """
    if kind not in KINDS:
        raise LayoutError(f"unknown tcgen05 kind {kind!r}; known: {', '.join(KINDS)}")
    if type(cta_group) is not int or cta_group not in (1, 2):
        raise LayoutError(f"cta_group must be 1 or 2, got {cta_group!r}")
    check_major(b_major, "b_major")
    if kind == "i8":
        ns = (8, 24, *range(16, 257, 16)) if cta_group == 1 else tuple(range(32, 257, 32))
        ns = tuple(sorted(ns))
    else:
        ns = tuple(range(8, 257, 8)) if cta_group == 1 else tuple(range(16, 257, 16))
    if b_major == "MN" and kind in _MN_MAJOR_B_KINDS:
        ns = tuple(n for n in ns if n % _MN_MAJOR_B_N_STEP[cta_group] == 0)
    ms: tuple[int, ...] = (64, 128) if cta_group == 1 else (128, 256)
    if kind in BLOCK_SCALED and cta_group == 1:
        ms = (128,)
    return {m: ns for m in ms}


def _format(kind: str, dtype: DTypeLike, operand: str) -> tuple[str, int]:
    name = as_dtype(dtype).name
    if name not in _FORMATS[kind]:
        raise LayoutError(
            f"kind::{kind} takes {operand} in {', '.join(_FORMATS[kind])}, got {name}"
        )
    return name, _FORMATS[kind][name]


def instr_descriptor(
    kind: str,
    m: int,
    n: int,
    a_dtype: DTypeLike,
    b_dtype: DTypeLike,
    d_dtype: DTypeLike = "float32",
    *,
    a_major: str = "K",
    b_major: str = "K",
    negate_a: bool = False,
    negate_b: bool = False,
    saturate: bool = False,
    cta_group: int = 1,
    sf_dtype: DTypeLike | None = None,
    scale_vec: int | None = None,
    sfa_id: int = 0,
    sfb_id: int = 0,
) -> int:
    """32-bit instruction descriptor of ``tcgen05.mma.cta_group::N.kind::{kind}``.

    Dense kinds (f16, tf32, f8f6f4, i8): bit 3 saturate, 4-5 D format (0 f16,
    1 f32, 2 s32), 7-9 A format, 10-12 B format, 13/14 negate A/B, 15/16 A/B
    major (1 = MN), 17-22 N >> 3, 24-28 M >> 4. Block-scaled kinds (mxf8f6f4,
    mxf4, mxf4nvf4): 4-5 B scale-factor id, 7-16 as above, 23 scale format (0
    UE4M3, 1 UE8M0), 29-30 A scale-factor id (PTX ISA "Instruction descriptor";
    CuTe ``UMMA::InstrDescriptor`` / ``InstrDescriptorBlockScaled``).
    ``scale_vec`` (``scale_vec::1X/2X/4X``: scale factors per row of one MMA's K) is
    checked against the kind and scale type; it is an instruction qualifier, not a
    field. ``sf_dtype`` defaults to UE8M0 (UE4M3 for mxf4nvf4 with ``scale_vec=4``).
    """
    if kind not in KINDS:
        raise LayoutError(f"unknown tcgen05 kind {kind!r}; known: {', '.join(KINDS)}")
    a_name, a_fmt = _format(kind, a_dtype, "A")
    b_name, b_fmt = _format(kind, b_dtype, "B")
    check_major(a_major, "a_major")
    check_major(b_major, "b_major")
    for name, major, which in ((a_name, a_major, "A"), (b_name, b_major, "B")):
        if major == "MN" and (name not in _MN_MAJOR_OK or kind in ("mxf4", "mxf4nvf4")):
            raise LayoutError(
                f"kind::{kind}: {which} ({name}) can only be read K-major; MN-major needs an "
                "8/16/32-bit format (f16, bf16, tf32, e4m3, e5m2, s8, u8)"
            )
    legal = legal_mn(kind, cta_group, b_major)
    if m not in legal or n not in legal[m]:
        ms = ", ".join(map(str, legal))
        some = next(iter(legal.values()))  # every M takes the same N
        why = ""
        if b_major == "MN" and kind in _MN_MAJOR_B_KINDS:
            why = f" (B read MN-major: N a multiple of {_MN_MAJOR_B_N_STEP[cta_group]})"
        raise LayoutError(
            f"tcgen05.mma.cta_group::{cta_group}.kind::{kind}: M={m} N={n} is not a legal shape"
            f"{why}; M in {{{ms}}}, N in {{{some[0]}, {some[1]}, ..., {some[-1]}}} (PTX ISA "
            "tcgen05.mma, Matrix shape)"
        )
    common = (
        (a_fmt << 7)
        | (b_fmt << 10)
        | (int(negate_a) << 13)
        | (int(negate_b) << 14)
        | (int(a_major == "MN") << 15)
        | (int(b_major == "MN") << 16)
        | ((n >> 3) << 17)
        | ((m >> 4) << 24)
    )
    d_name = as_dtype(d_dtype).name
    if d_name not in _D_ALLOWED[kind]:
        raise LayoutError(
            f"kind::{kind} accumulates into {' or '.join(_D_ALLOWED[kind])}, got {d_name}"
        )
    if kind == "f16" and d_name == "float16" and (a_name, b_name) != _F16_D_NEEDS:
        raise LayoutError(
            f"kind::f16 accumulates into float16 only from float16 x float16; A {a_name} x B "
            f"{b_name} needs a float32 accumulator (PTX ISA tcgen05.mma, Instruction descriptor)"
        )
    if (negate_a or negate_b) and kind == "i8":
        raise LayoutError("kind::i8 has no negate; negate_a/negate_b need a float kind")
    if saturate and kind != "i8":
        raise LayoutError(f"saturate exists only for kind::i8, got kind::{kind}")
    if kind not in BLOCK_SCALED:
        if sf_dtype is not None or scale_vec is not None or sfa_id or sfb_id:
            raise LayoutError(
                f"kind::{kind} is not block-scaled; sf_dtype/scale_vec/sf ids need mxf8f6f4, "
                "mxf4 or mxf4nvf4"
            )
        return common | (int(saturate) << 3) | (_D_FORMATS[d_name] << 4)
    return common | _block_scale_fields(kind, sf_dtype, scale_vec, sfa_id, sfb_id)


def _block_scale_fields(
    kind: str, sf_dtype: DTypeLike | None, scale_vec: int | None, sfa_id: int, sfb_id: int
) -> int:
    default_sf = "float8_e4m3fn" if kind == "mxf4nvf4" and scale_vec == 4 else "float8_e8m0fnu"
    sf = as_dtype(sf_dtype if sf_dtype is not None else default_sf).name
    vecs = _SCALE_VEC.get((kind, sf))
    if vecs is None:
        takes = sorted({s for k, s in _SCALE_VEC if k == kind})
        raise LayoutError(f"kind::{kind} takes scale factors in {', '.join(takes)}, got {sf}")
    if scale_vec is not None and scale_vec not in vecs:
        raise LayoutError(
            f"kind::{kind} with {sf} scale factors uses "
            f"{' or '.join(f'scale_vec::{v}X' for v in vecs)}, got scale_vec::{scale_vec}X"
        )
    vec = vecs[0] if scale_vec is None else scale_vec
    for name, sf_id in (("sfa_id", sfa_id), ("sfb_id", sfb_id)):
        if not isinstance(sf_id, int) or isinstance(sf_id, bool) or not 0 <= sf_id < 4:
            raise LayoutError(f"{name} selects one of 4 scale-factor slots (0..3), got {sf_id!r}")
        if sf_id not in _SF_IDS[vec]:
            raise LayoutError(
                f"{name}={sf_id} with scale_vec::{vec}X: the {vec} factors of one MMA fill "
                f"{vec} of the 4 byte slots, so the id must be one of {_SF_IDS[vec]} (PTX ISA "
                "tcgen05.mma, Instruction descriptor)"
            )
    return (sfb_id << 4) | (_SCALE_FORMATS[sf] << 23) | (sfa_id << 29)


def tcgen05_instr_descriptor(
    m: int,
    n: int,
    a_dtype: DTypeLike = "bfloat16",
    b_dtype: DTypeLike = "bfloat16",
    d_dtype: DTypeLike = "float32",
    a_mn_major: bool = False,
    b_mn_major: bool = False,
) -> int:
    """``kind::f16`` shorthand of :func:`instr_descriptor`."""
    return instr_descriptor(
        "f16",
        m,
        n,
        a_dtype,
        b_dtype,
        d_dtype,
        a_major="MN" if a_mn_major else "K",
        b_major="MN" if b_mn_major else "K",
    )
