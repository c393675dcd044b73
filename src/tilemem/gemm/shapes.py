"""Any GEMM shape on the persistent kernel: which operands go through padded copies, and how.

The kernel (``gemm/hopper.py``) reads A and B and writes C with TMA, whose rules decide
which shapes it takes directly (CUDA Driver API, ``cuTensorMapEncodeTiled``; checked by
``cuda/tma.py``): every row pitch a multiple of 16 bytes (K a multiple of 8 bf16 or 16 fp8
elements, N a multiple of 8 bf16). A TMA box may reach past the matrix: the driver's
requirements on ``boxDim`` are only ``1 <= boxDim[i] <= 256``, an inner box of a multiple of
16 bytes and at most the swizzle span, none relative to ``globalDim``, and the elements of a
load outside the tensor are filled with zeros (``oobFill``, ``CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE``)
while a store skips them (PTX ISA, "cp.async.bulk.tensor": out-of-bound accesses). So a
matrix smaller than one box (M below A's 128/64/32/16 rows or C's 64, N below the tile, K
below one K tile) runs in place (:data:`BOXES_PAST_EDGES`). Any other shape runs on *staged*
operands: a zero-filled workspace matrix of the kernel's shape

    ``Kp = ceil(K / align) * align``, ``Np = ceil(N / 8) * 8``

into which the operand is copied (A: ``M x K`` into ``M x Kp``; B: ``N x K`` into
``Np x Kp``) before the launch, and out of which C's ``M x N`` is copied (from ``M x Np``)
after it. The zero columns ``K..Kp`` of A and B add nothing to the product, and columns
past N of C are never copied out. With :data:`BOXES_PAST_EDGES` off, a matrix also stages
to at least one box: ``Ma = max(M, a_rows)`` (A), ``Mc = max(M, 64)`` (C),
``Kp >= tile_k``, ``Np >= tile_n``.

Cost: per staged operand one 2-D copy, reading and writing its bytes once (A: ``M K``
elements, B: ``N K``, C: ``M N`` bf16), and one more launch each in the stream; the
workspace (:attr:`Staging.workspace_bytes`) is allocated and zeroed once per prepared launch.
A shape that needs no staging pays nothing. Only the operands that break a rule are copied:
a K that is not a multiple of the alignment stages A and B but not C.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dtype import as_dtype
from ..errors import GemmShapeError
from ..intmath import align_up
from .plan import CONSUMERS, TILE_M, check_a_rows, check_input_type, check_tile_n, tile_k

ROW_ALIGN_BYTES = 16  # TMA: every global stride (row pitch) a multiple of 16 bytes
C_BYTES = 2  # C is bfloat16
C_BOX_ROWS = TILE_M // CONSUMERS  # a consumer warpgroup stores 64-row slices of C
BOXES_PAST_EDGES = True  # a TMA box may extend past the matrix (module docstring)


@dataclass(frozen=True)
class Copy2D:
    """``rows`` rows of ``width`` bytes from a matrix with row pitch ``src_pitch`` bytes into
    one with ``dst_pitch`` (a ``cuMemcpy2D``): both start at element (0, 0)."""

    rows: int
    width: int
    src_pitch: int
    dst_pitch: int


@dataclass(frozen=True)
class Staging:
    """The user's ``m x n x k`` and the kernel's: A ``ma x kp``, B ``np_ x kp``, C
    ``mc x np_``; ``elem`` bytes per A/B element."""

    m: int
    n: int
    k: int
    ma: int
    mc: int
    np_: int
    kp: int
    elem: int

    @property
    def a(self) -> Copy2D | None:
        """A's copy into its ``ma x kp`` workspace, or None when A is used in place."""
        if (self.ma, self.kp) == (self.m, self.k):
            return None
        return Copy2D(self.m, self.k * self.elem, self.k * self.elem, self.kp * self.elem)

    @property
    def b(self) -> Copy2D | None:
        """B's copy into its ``np_ x kp`` workspace, or None when B is used in place."""
        if (self.np_, self.kp) == (self.n, self.k):
            return None
        return Copy2D(self.n, self.k * self.elem, self.k * self.elem, self.kp * self.elem)

    @property
    def c(self) -> Copy2D | None:
        """C's copy out of its ``mc x np_`` workspace, or None when the kernel writes C."""
        if (self.mc, self.np_) == (self.m, self.n):
            return None
        return Copy2D(self.m, self.n * C_BYTES, self.np_ * C_BYTES, self.n * C_BYTES)

    @property
    def needed(self) -> bool:
        """Whether any operand is staged."""
        return any(x is not None for x in (self.a, self.b, self.c))

    def workspace_shapes(self) -> dict[str, tuple[int, int]]:
        """The workspace matrices, by operand, of the staged operands only."""
        shapes = {"A": (self.ma, self.kp), "B": (self.np_, self.kp), "C": (self.mc, self.np_)}
        return {name: shapes[name] for name in "ABC" if getattr(self, name.lower()) is not None}

    @property
    def workspace_bytes(self) -> int:
        """Bytes of all workspace matrices (A and B of ``elem`` bytes, C bf16)."""
        sizes = {"A": self.elem, "B": self.elem, "C": C_BYTES}
        return sum(r * c * sizes[name] for name, (r, c) in self.workspace_shapes().items())


def staging(m: int, n: int, k: int, dtype: str, tile_n: int, a_rows: int = TILE_M) -> Staging:
    """How an ``m x n x k`` product of ``dtype`` inputs runs on the kernel with CTA tile
    ``128 x tile_n`` loading ``a_rows`` rows of A (module docstring: the padded sizes and
    their reasons; ``tile_n`` and ``a_rows`` matter only without :data:`BOXES_PAST_EDGES`)."""
    for name, v in (("M", m), ("N", n), ("K", k)):
        if type(v) is not int or v < 1:
            raise GemmShapeError(
                f"{name} = {v!r}: the GEMM takes M, N, K >= 1 (an empty product has nothing to "
                "compute; skip the call)"
            )
    check_input_type(dtype)
    check_tile_n(tile_n)
    check_a_rows(a_rows)
    elem = as_dtype(dtype).bits // 8
    kp, np_ = align_up(k, ROW_ALIGN_BYTES // elem), align_up(n, ROW_ALIGN_BYTES // C_BYTES)
    if BOXES_PAST_EDGES:
        return Staging(m, n, k, m, m, np_, kp, elem)
    kp, np_ = max(kp, tile_k(dtype)), max(np_, tile_n)
    return Staging(m, n, k, max(m, a_rows), max(m, C_BOX_ROWS), np_, kp, elem)


def copy_host(copy: Copy2D, src: np.ndarray, dst: np.ndarray) -> None:
    """Apply ``copy`` to host arrays, byte for byte, as ``cuMemcpy2D`` does on the device
    (what the simulator's tests stage operands with)."""
    s, d = src.reshape(-1).view(np.uint8), dst.reshape(-1).view(np.uint8)
    for r in range(copy.rows):
        d[r * copy.dst_pitch : r * copy.dst_pitch + copy.width] = s[
            r * copy.src_pitch : r * copy.src_pitch + copy.width
        ]
