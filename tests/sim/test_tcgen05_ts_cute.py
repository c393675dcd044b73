"""``tcgen05.mma`` with A in TMEM against CuTe's A fragments of its ``SM100_MMA_*_TS`` atoms.

Oracle: ``UMMA::tmem_frg`` (nvidia-cutlass, ``include/cute/atom/mma_traits_sm100.hpp``),
the TMEM layout CuTe gives the A operand of its TS (A in TMEM) MMAs: ``FrgTypeA`` is
``tmem_frg_1sm<a_type, a_type, NonInterleaved>`` (one CTA) or ``tmem_frg_2sm<a_type,
a_type, Duplicated>`` (a CTA pair). Its atoms are copied below and evaluated with pycute;
they are written in "virtual" TMEM addresses, lane stride 1 and column stride 128 per value,
so ``lane = x % 128`` and value column ``x // 128``, two 16-bit values to a 32-bit column
(``tmem_restride`` with ``TMEM::DP<half>``), the lower one in the low half.

- one CTA, M=128: ``(128, K) : (1, 128)``, row r in lane r;
- one CTA, M=64: ``((16, 4), K) : ((1, 32), 128)``, 16 rows per lane quarter;
- a pair, M=256 (128 rows per CTA): ``(128, K) : (1, 128)``;
- a pair, M=128 (64 rows per CTA), ``Duplicated``: ``(128, K) : (1, 128)`` over the CTA's
  rows stored twice, "Subpart0 = A[0:32], Subpart1 = A[32:64], Subpart2 = A[0:32],
  Subpart3 = A[32:64]" (the header's comment on ``TmemAllocMode::Duplicated``).

A is placed where CuTe says, B in shared memory with tilemem's CuTe-checked layouts, and
every D element must be numpy's ``A @ B^T`` where the data-path layouts put it
(``mma_result_cells``, itself checked against CuTe's ``make_fragment_C``).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pycute", reason="pycute (pip install nvidia-cutlass)")
from pycute import Layout, size

from tilemem.dtype import float32_to_bits
from tilemem.ir.intrinsics.tcgen05 import _sim_mma
from tilemem.ir.nodes import UINT32, Const
from tilemem.layout.fragments import mma_result_cells
from tilemem.layout.operand import instr_descriptor

from .hwfake import FakeContext, place, run

K = 16  # one bf16 MMA
N = 64
B_BASE, A_COL, D_COL = 0xA000, 8, 64

# (M, cta_group): CuTe's A atom for one CTA, and how many of the CTA's rows it spans
ATOMS = {
    (128, 1): Layout((128, K), (1, 128)),
    (64, 1): Layout(((16, 4), K), ((1, 32), 128)),
    (256, 2): Layout((128, K), (1, 128)),
    (128, 2): Layout((128, K), (1, 128)),  # Duplicated: atom row l holds CTA row l % 64
}


def place_a(tmem: np.ndarray, rows: np.ndarray, atom: Layout) -> None:
    """Write a CTA's A rows (rows x K, bf16 values) into TMEM where CuTe's atom puts them."""
    bits = float32_to_bits(rows, "bfloat16").astype(np.uint32)
    for r in range(size(atom.shape[0])):  # the atom's rows (M mode)
        for k in range(K):
            x = atom((r, k))
            lane, value = x % 128, x // 128
            col, half = A_COL + value // 2, value % 2
            tmem[lane, col] |= bits[r % len(rows), k] << np.uint32(16 * half)


def _issue_ts(ctx, m: int, b_desc: int, cta_group: int) -> None:
    """A bf16 ``tcgen05.mma`` with A in TMEM (column A_COL) and B by ``b_desc``, issued by
    ``ctx`` and run to completion."""
    idesc = instr_descriptor("f16", m, N, "bfloat16", "bfloat16", cta_group=cta_group)
    run(
        _sim_mma,
        ctx,
        "ptx.tcgen05.mma",
        (None, None, None, Const(idesc, UINT32), None),
        [D_COL, A_COL, b_desc, idesc, 0],
        cta_group=cta_group,
        a_tmem=True,
        kind="f16",
    )
    ctx.complete_all()


@pytest.mark.parametrize("m, cta_group", sorted(ATOMS))
def test_a_in_tmem_is_read_where_cute_places_it(m, cta_group):
    rng = np.random.default_rng(m + cta_group)
    a = rng.integers(-4, 5, (m, K)).astype(np.float32)
    b = rng.integers(-4, 5, (N, K)).astype(np.float32)
    ctas = [FakeContext(warp=1) for _ in range(cta_group)]
    rows, n_cta = m // cta_group, N // cta_group
    for v, ctx in enumerate(ctas):
        ctx.rank = v
        ctx.peers = dict(enumerate(ctas))
        place_a(ctx.tmem, a[v * rows : (v + 1) * rows], ATOMS[(m, cta_group)])
        b_desc = place(
            ctx.smem, B_BASE, b[v * n_cta : (v + 1) * n_cta], "bfloat16", "128B", "K", "sm_100a"
        )
    _issue_ts(ctas[0], m, b_desc, cta_group)
    d = a @ b.T
    lanes, cols = mma_result_cells(m, N, cta_group)
    for v, ctx in enumerate(ctas):
        got = ctx.tmem[lanes, D_COL + cols].view(np.float32)
        np.testing.assert_array_equal(got, d[v * rows : (v + 1) * rows])


def test_a_pair_m128_without_the_duplicate_gives_other_numbers():
    """cta_group::2, M=128: N's right half is computed on lanes 64-127 from the A rows there;
    an A stored once (lanes 0-63) leaves that half wrong, as on the GPU."""
    rng = np.random.default_rng(3)
    a = rng.integers(1, 5, (128, K)).astype(np.float32)
    b = rng.integers(1, 5, (N, K)).astype(np.float32)
    ctas = [FakeContext(warp=1), FakeContext(warp=1)]
    for v, ctx in enumerate(ctas):
        ctx.rank, ctx.peers = v, {0: ctas[0], 1: ctas[1]}
        place_a(ctx.tmem, a[64 * v : 64 * v + 64], Layout((64, K), (1, 128)))
        b_desc = place(
            ctx.smem, B_BASE, b[32 * v : 32 * v + 32], "bfloat16", "128B", "K", "sm_100a"
        )
    _issue_ts(ctas[0], 128, b_desc, 2)
    lanes, cols = mma_result_cells(128, N, 2)
    got = ctas[0].tmem[lanes, D_COL + cols].view(np.float32)
    want = (a @ b.T)[:64]
    left = lanes < 64
    np.testing.assert_array_equal(got[left], want[left])
    assert not (got[~left] == want[~left]).any()  # zeros from the empty lanes 64-127
