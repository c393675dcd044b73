"""How the idle consumer zeroes A's unloaded rows, on every shape whose kernel loads fewer than
64 rows of A a stage (tiles of 8, 16 or 32 rows).

    PYTHONPATH=src python3 benchmarks/gemm_zero_rows.py [DTYPE,...] [ROUNDS] [REPEATS]

The first consumer waits for the zeroing before its first wgmma (``hopper._zero_a_rows``).
For each such shape of benchmarks/gemm.py's sets, REPEATS times (3 by default) in one process
with benchmarks/gemm.py's method (every product checked first against a float64 reference,
fresh inputs, NaN-poisoned C, rotating order, median of ROUNDS rounds, 5 by default):

- ``policy``: AutoGemm as it is (rows zeroed whole by ``stmatrix.x4``, 16 bytes a lane);
- ``bytes``: the same configuration, the rows zeroed one element a thread a store (the
  library's zeroing before, :func:`zero_by_elements`);
- ``none``: the same configuration, nothing zeroed (:func:`zero_nothing`): rows 8 to 63 of
  the wgmma's A hold whatever shared memory held, which reaches only rows of C that are never
  stored, so the product is still right on the GPU; the lower bound of what zeroing costs.

One ``ZERO`` line a repeat (ratios cuBLAS time / tilemem time), then a ``MEDIAN`` line of
each label's median over the repeats. Needs an sm_90 GPU and torch.
"""

from __future__ import annotations

import pathlib
import sys
import time
from unittest import mock

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import gemm as bench  # benchmarks/gemm.py: its shapes, check and timing
import torch
from gemm_configs import repeated
from gemm_promote_overlap import BuiltAuto
from gemm_uniform import SETS, shapes_of

from tilemem import T
from tilemem.gemm import hopper

ROWS = hopper.TILE_M // hopper.CONSUMERS  # the wgmma's 64 rows


def zero_by_elements(a, a_rows: int) -> None:
    """Rows ``a_rows..63`` of every A stage zeroed one element a thread a store: thread ``t``
    takes column ``t % cols`` of rows ``a_rows + t / cols + j * (128 / cols)``."""
    stages, cols = a.shape[0], a.shape[-1]
    per_pass = 128 // cols
    t = T.let("z_t", T.thread_id() % 128)
    col, row0 = T.let("z_col", t % cols), T.let("z_row", a_rows + t // cols)
    zero = T.cast(0, a.dtype.name)
    for j in T.serial((ROWS - a_rows) // per_pass, name="z"):
        for s in range(stages):
            a[s, row0 + j * per_pass, col] = zero
    T.ptx.fence.proxy_async_shared_cta()
    T.cuda.named_barrier(hopper.ZERO_BARRIER, 2 * 128)


def zero_nothing(a, a_rows: int) -> None:
    """Only the barrier the first consumer waits at."""
    T.cuda.named_barrier(hopper.ZERO_BARRIER, 2 * 128)


class ZeroAuto(BuiltAuto):
    """The policy, its kernels built with ``zero`` as the idle consumer's zeroing."""

    def __init__(self, dtype: str, zero):
        super().__init__(dtype=dtype)
        self.building = lambda: mock.patch.object(hopper, "_zero_a_rows", zero)


def main() -> None:
    dtypes = sys.argv[1].split(",") if len(sys.argv) > 1 else ["bfloat16", "float8_e4m3fn"]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    torch.zeros(1, device="cuda")
    start = time.time()
    for dtype in dtypes:
        auto = hopper.AutoGemm(dtype=dtype)
        gemms = [auto, ZeroAuto(dtype, zero_by_elements), ZeroAuto(dtype, zero_nothing)]
        shapes = [s for s in shapes_of(dtype, list(SETS)) if auto.config(*s)[3] < ROWS]
        for m, n, k in dict.fromkeys(shapes):
            labels = ["policy:" + bench.policy(auto, m, n, k), "bytes", "none"]
            repeated(gemms, labels, m, n, k, rounds, repeats, "ZERO", f"{dtype} {m}x{n}x{k}")
    print(f"elapsed {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
