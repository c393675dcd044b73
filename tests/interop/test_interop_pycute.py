"""to_pycute against CuTe's own constructions, element by element.

The oracle builds each operand tile the way CUTLASS does, with pycute's algebra:
the GMMA/UMMA layout atoms as CUTLASS defines them in bits (cute/atom/mma_traits_sm90_gmma.hpp:
``Layout_K_SW128_Atom_Bits = Swizzle<3,4,3> o Layout<(8,1024):(1024,1)>`` and the K-major /
MN-major INTER, SW32, SW64 siblings), tiled by ``tile_to_shape`` (a blocked product of the
atom with an ordered layout of the tile counts: ``Step<_1,_2,_3>`` for K-major,
``Step<_2,_1,_3>`` for MN-major, as the sm90 collective builders pass), and the swizzle
applied to the *bit* address with the hardware's ``Swizzle<L,4,3>`` on bytes, i.e.
``Swizzle(L, 7, 3)`` on bits. tilemem's element-unit swizzle is never used by the oracle.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

pycute = pytest.importorskip("pycute", reason="pycute ships in the nvidia-cutlass wheel")

from tilemem.dtype import as_dtype  # noqa: E402
from tilemem.errors import LayoutError  # noqa: E402
from tilemem.interop.pycute import to_pycute  # noqa: E402
from tilemem.layout import (  # noqa: E402
    TileLayout,
    mma_shared_layout,
    sf_tmem_layout,
    tmem_datapath_layout,
)

DTYPES = ["float32", "bfloat16", "float16", "float8_e4m3fn", "int8", "float4_e2m1fn"]


def atom_bits(mode: int, major: str) -> pycute.Layout:
    """CUTLASS's GMMA atom in bit units, (MN, K) coordinates, before its swizzle."""
    width = 128 << mode  # bits in one swizzle row (16 bytes << L), 128 for INTER
    if major == "K":
        return pycute.Layout((8, width), (width, 1))
    return pycute.Layout((width, 8), (1, width))


def ordered(shape: tuple[int, ...], order: tuple[int, ...]) -> pycute.Layout:
    """CuTe's make_ordered_layout: compact strides, mode ``order.index(0)`` fastest."""
    strides = [0] * len(shape)
    step = 1
    for i in sorted(range(len(shape)), key=lambda i: order[i]):
        strides[i] = step
        step *= shape[i]
    return pycute.Layout(tuple(shape), tuple(strides))


def cutlass_tile(bits: int, mode: int, major: str, mn: int, k: int, stages: int):
    """f(mn, k, s) -> element offset of CUTLASS's tile_to_shape(atom, (MN, K, S))."""
    atom = atom_bits(mode, major)
    # upcast<bits>: the same atom counted in elements (its contiguous extent / bits)
    (am, ak), strides = atom.shape, atom.stride
    am, ak = (am, ak // bits) if major == "K" else (am // bits, ak)
    strides = (strides[0] // bits, 1) if major == "K" else (1, strides[1] // bits)
    counts = (mn // am, k // ak, stages)
    order = (1, 2, 3) if major == "K" else (2, 1, 3)
    tiled = pycute.logical_product(pycute.Layout((am, ak), strides), ordered(counts, order))
    swizzle = pycute.Swizzle(mode, 7, 3) if mode else None

    def offset(i: int, j: int, s: int) -> int:
        elem = tiled(((i % am, j % ak), (i // am, j // ak, s)))
        bit = elem * bits
        if swizzle is not None:
            bit = swizzle(bit)
        assert bit % bits == 0
        return bit // bits

    return offset


def cases():
    out = []
    for dtype, mode, major in itertools.product(DTYPES, (0, 1, 2, 3), ("K", "MN")):
        bits = as_dtype(dtype).bits
        row = (128 << mode) // bits  # elements in one atom row
        for mn_mult, k_mult, stages in ((2, 1, 1), (1, 3, 2)) if bits >= 8 else ((1, 2, 2),):
            if major == "K":
                mn, k = 8 * mn_mult, row * k_mult
            else:
                mn, k = row * mn_mult, 8 * k_mult
            out.append((dtype, mode, major, mn, k, stages))
    return out


@pytest.mark.parametrize(("dtype", "mode", "major", "mn", "k", "stages"), cases())
def test_operand_tiles_equal_cutlass_tile_to_shape(dtype, mode, major, mn, k, stages):
    bits = as_dtype(dtype).bits
    # tilemem's tile is (..., rows, contiguous): K-major (MN, K), MN-major (K, MN)
    rows, cols = (mn, k) if major == "K" else (k, mn)
    shape = (rows, cols) if stages == 1 else (stages, rows, cols)
    layout = mma_shared_layout(dtype, mode, shape)
    converted = to_pycute(layout)
    oracle = cutlass_tile(bits, mode, major, mn, k, stages)
    got, want = [], []
    for s, i, j in itertools.product(range(stages), range(mn), range(k)):
        r, c = (i, j) if major == "K" else (j, i)
        got.append(converted(r, c) if stages == 1 else converted(s, r, c))
        want.append(oracle(i, j, s))
    assert got == want


def test_the_bf16_128b_swizzle_is_swizzle_333_on_elements():
    # the finding: CuTe's Swizzle<3,4,3> on bytes is Swizzle(3,3,3) on bf16 offsets
    converted = to_pycute(mma_shared_layout("bfloat16", "128B", (64, 64)))
    assert (converted.layoutB.bits, converted.layoutB.base, converted.layoutB.shift) == (3, 3, 3)


# TMEM: CuTe's TMEM address (lane << 16) + column. Expected values from the data-path
# formulas of PTX ISA 9.7.16.10.x ("Data path layout organization", layouts D, F, E, G).
def _tmem(letter: str, r: int, c: int, cols: int, sub: int = 0) -> int:
    if letter == "D":  # M=128: row r in lane r
        lane, col = r, c
    elif letter == "F":  # M=64: 16 rows in each warp's quarter, lower or upper half
        lane, col = 32 * (r // 16) + r % 16 + 16 * sub, c
    elif letter == "E":  # M=64 .ws: right half of the columns folds onto lanes 64..127
        lane, col = r + 64 * (c // (cols // 2)), c % (cols // 2)
    else:  # G, M=32 .ws: four column quarters onto the four lane quarters
        lane, col = r + 32 * (c // (cols // 4)), c % (cols // 4)
    return (lane << 16) + col


@pytest.mark.parametrize(
    ("letter", "rows", "cols", "sub"),
    [
        ("D", 128, 256, 0),
        ("D", 128, 32, 0),
        ("F", 64, 64, 0),
        ("F", 64, 128, 1),
        ("E", 64, 128, 0),
        ("G", 32, 64, 0),
    ],
)
def test_tmem_datapaths_give_cute_tmem_addresses(letter, rows, cols, sub):
    converted = to_pycute(tmem_datapath_layout(letter, rows, cols, sub))
    got = [converted(r, c) for r in range(rows) for c in range(cols)]
    want = [_tmem(letter, r, c, cols, sub) for r in range(rows) for c in range(cols)]
    assert got == want


def test_f16_accumulator_columns_count_in_elements():
    # an f16 accumulator takes one 32-bit cell per value: TCol (in f16 elements) = 2 * c
    converted = to_pycute(tmem_datapath_layout("D", 128, 64, dtype="float16"))
    assert converted(5, 7) == (5 << 16) + 14


def test_replicated_scale_factors_are_a_layout_error():
    with pytest.raises(LayoutError, match="replica"):
        to_pycute(sf_tmem_layout(128, 8, 2))


def test_mixed_axes_are_a_layout_error():
    with pytest.raises(LayoutError, match="axes"):
        to_pycute(TileLayout.of((4, 8), ("1@TLane", 1)))


def test_strided_and_offset_layouts_agree_at_every_coordinate():
    layout = TileLayout.of((6, 10, 4), (3, 40, 1), offset={"m": 5})
    converted = to_pycute(layout)
    pos = layout.positions()["m"]
    got = [converted(a, b, c) for a in range(6) for b in range(10) for c in range(4)]
    assert np.array_equal(np.array(got), pos)
    assert math.prod(layout.shape) == len(got)
