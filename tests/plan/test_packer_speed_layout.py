"""Layout evaluation's fast paths against the vectorised one (``apply_flat``) and the
swizzle against its defining formula, step by step as the class docstring writes it."""

import random

import numpy as np
import pytest

from tilemem.layout import ComposeLayout, Iter, SwizzleLayout, TileLayout


def random_layout(rng: random.Random):
    axes = ("m", "TLane", "TCol")
    shard = [Iter(rng.choice((1, 2, 3, 4, 8)), rng.choice((0, 1, 2, 5, 64)),
                  rng.choice(axes)) for _ in range(rng.randint(1, 4))]  # fmt: skip
    offset = {rng.choice(axes): rng.randint(1, 9)} if rng.random() < 0.5 else None
    return TileLayout(shard, offset=offset)


@pytest.mark.parametrize("seed", range(60))
def test_apply_on_an_int_and_positions_agree_with_apply_flat(seed):
    rng = random.Random(seed)
    layout = random_layout(rng)
    if seed % 3 == 0:  # a swizzled shared-memory tile
        layout = ComposeLayout(SwizzleLayout(rng.randint(0, 3), rng.randint(1, 3), 3),
                               TileLayout.of((8, 64)))  # fmt: skip
    size = layout.size()
    flat = layout.apply_flat(np.arange(size))
    positions = layout.positions()
    assert list(positions) == list(flat)  # the same axes in the same order
    for axis in flat:
        assert positions[axis].dtype == np.int64
        assert np.array_equal(positions[axis], flat[axis])
    for x in range(size):
        got = layout.apply(x)
        assert got == {axis: int(values[x]) for axis, values in flat.items()}
        assert all(type(v) is int for v in got.values())


def test_positions_are_fresh_arrays_the_caller_may_change():
    layout = TileLayout.of((4, 8), ("1@TLane", "1@TCol"))
    first = layout.positions()
    first["TLane"][:] = -1
    assert layout.positions()["TLane"][8] == 1  # row 1 of the 4 x 8 tile


@pytest.mark.parametrize("pe,length,atom", [(0, 1, 1), (1, 2, 3), (3, 3, 3), (2, 3, 4)])
def test_swizzle_is_the_class_formula(pe, length, atom):
    swizzle = SwizzleLayout(pe, length, atom)
    xs = np.arange(1 << 14, dtype=np.int64)
    c = xs >> pe
    c = c ^ ((c & (((1 << length) - 1) << atom)) >> atom)
    want = (c << pe) | (xs & ((1 << pe) - 1))
    assert np.array_equal(swizzle.swizzle(xs), want)
    assert [swizzle.swizzle(int(x)) for x in xs[:4096]] == [int(v) for v in want[:4096]]
