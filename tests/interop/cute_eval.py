"""Evaluate CuTe DSL layouts (built by CuTe DSL itself) at logical coordinates, on the host.

A CuTe DSL layout built from static values has Python-int shapes and strides. They are
evaluated here as CuTe defines ``crd2idx``: a tuple coordinate goes mode by mode; an integer
coordinate of a nested mode is split colexicographically over its leaves (first leaf
fastest); the index is the sum of leaf coordinate times stride. Coordinates may be numpy
arrays, so a whole tile is evaluated at once. A swizzle ``S<B,M,S>`` that CuTe DSL puts in
front of a shared-memory layout acts on the *byte* address (CuTe's smem_ptr_flag
convention), so the element offset is ``swizzle(offset * bytes) / bytes``, done here on bit
addresses (``M + 3``) so that sub-byte elements work too.
"""

from __future__ import annotations

import re

import numpy as np


def swizzle_of(text: str) -> tuple[int, int, int]:
    match = re.fullmatch(r"S<(\d+),(\d+),(\d+)>", text.strip())
    assert match, text
    b, m, s = (int(g) for g in match.groups())
    return b, m, s


def _leaves(shape, stride):
    if isinstance(shape, tuple):
        for sub_shape, sub_stride in zip(shape, stride, strict=True):
            yield from _leaves(sub_shape, sub_stride)
    else:
        yield shape, stride


def crd2idx(crd, shape, stride):
    """CuTe's crd2idx over numpy arrays (see the module docstring)."""
    if isinstance(crd, tuple):
        assert isinstance(shape, tuple) and len(crd) == len(shape), (crd, shape)
        return sum(crd2idx(c, s, d) for c, s, d in zip(crd, shape, stride))
    x = np.asarray(crd, dtype=np.int64)
    out = np.zeros_like(x)
    for extent, step in _leaves(shape, stride):
        out = out + (x % extent) * step
        x = x // extent
    return out


def swizzle(x, bits: int, base: int, shift: int):
    """CuTe's Swizzle<bits, base, shift> (shift > 0): XOR bits [base, base+bits) with the bits
    ``shift`` above them."""
    mask = ((1 << bits) - 1) << (base + shift)
    return x ^ ((x & mask) >> shift)


def smem_evaluator(layout, bits: int):
    """f(cute coordinate) -> element offset of a CuTe DSL shared-memory (composed) layout."""
    if hasattr(layout, "outer"):
        shape, stride = layout.outer.shape, layout.outer.stride
        offset = int(str(layout.offset)) if str(layout.offset).isdigit() else 0
        b, m, s = swizzle_of(str(layout.inner))

        def f(crd):
            bit = swizzle((offset + crd2idx(crd, shape, stride)) * bits, b, m + 3, s)
            assert np.all(bit % bits == 0)
            return bit // bits

        return f
    return plain_evaluator(layout)


def plain_evaluator(layout):
    shape, stride = layout.shape, layout.stride
    return lambda crd: crd2idx(crd, shape, stride)
