"""Evaluate CuTe DSL layouts (built by CuTe DSL itself) at logical coordinates, on the host.

A CuTe DSL layout built from static values has Python-int shapes and strides; pycute's
``crd2idx`` evaluates them. A swizzle ``S<B,M,S>`` that CuTe DSL puts in front of a
shared-memory layout acts on the *byte* address (CuTe's smem_ptr_flag convention), so the
element offset is ``Swizzle(B, M, S)(offset * bytes) / bytes``, done here on bit addresses
(``M + 3``) so that 4-bit elements work too.
"""

from __future__ import annotations

import re

import pycute


def swizzle_of(text: str) -> tuple[int, int, int]:
    match = re.fullmatch(r"S<(\d+),(\d+),(\d+)>", text.strip())
    assert match, text
    b, m, s = (int(g) for g in match.groups())
    return b, m, s


def smem_evaluator(layout, bits: int):
    """f(cute coordinate) -> element offset of a CuTe DSL shared-memory (composed) layout."""
    if hasattr(layout, "outer"):
        outer = pycute.Layout(layout.outer.shape, layout.outer.stride)
        offset = int(layout.offset) if str(layout.offset).isdigit() else 0
        b, m, s = swizzle_of(str(layout.inner))
        swizzle = pycute.Swizzle(b, m + 3, s)

        def f(crd):
            bit = swizzle((offset + outer(crd)) * bits)
            assert bit % bits == 0
            return bit // bits

        return f
    plain = pycute.Layout(layout.shape, layout.stride)
    return plain


def plain_evaluator(layout):
    return pycute.Layout(layout.shape, layout.stride)
