"""cta_group::2 MMAs in the simulator against CuTe DSL's 2-SM MMA atom, element by element.

Oracle: CuTe DSL (``cutlass.utils.blackwell_helpers.make_trivial_tiled_mma`` with
``CtaGroup.TWO``, the tiled MMA of ``SM100_MMA_F16BF16_2x1SM_SS``). Its ``thr_id`` has two
"threads", the two CTAs of the pair (peer v = cluster rank 2p + v); ``tv_layout_A/B/C`` map
(peer, value) to the column-major index of A (M x K), B (N x K) and D (M x N), so they say
which CTA's shared memory supplies each A row and B row and which CTA holds each D
element; ``make_fragment_C`` places a peer's D values in its TMEM (address = lane << 16 |
column). The simulator reads the operands placed where CuTe says and must leave every
D[m, n] in the CTA, lane and column CuTe says.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cutlass.cute", reason="CuTe DSL (pip install nvidia-cutlass-dsl)")

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import OperandMajorMode
from cutlass.cute.nvgpu.tcgen05 import CtaGroup
from cutlass.utils import blackwell_helpers as sm100

from interop.cute_eval import plain_evaluator
from tilemem.ir.intrinsics.tcgen05 import _sim_mma
from tilemem.ir.nodes import UINT32, Const
from tilemem.layout.operand import instr_descriptor

from .hwfake import FakeContext, place, run

K = 16  # one bf16 MMA: 256 bits of K
SHAPES = ((256, 64), (128, 64), (256, 128), (128, 256))
A_BASE, B_BASE, D_COL = 0x2000, 0xA000, 64


def _cute_pair_maps() -> dict:
    """For each (M, N): per peer v, the global A rows, B rows, D (row, col) of its values and
    the TMEM (lane, column) of each of its D values, all from CuTe DSL."""
    out: dict = {}

    @cute.jit
    def build():
        for m, n in SHAPES:
            mma = sm100.make_trivial_tiled_mma(
                cutlass.BFloat16,
                cutlass.BFloat16,
                OperandMajorMode.K,
                OperandMajorMode.K,
                cutlass.Float32,
                CtaGroup.TWO,
                (m, n),
            )
            assert mma.thr_id.shape == 2
            frag = mma.make_fragment_C(mma.partition_shape_C((m, n)))
            tv = {x: plain_evaluator(getattr(mma, f"tv_layout_{x}")) for x in "ABC"}
            tmem = plain_evaluator(frag.layout)
            peers = []
            for v in (0, 1):
                rows_a = np.arange(m // 2)[:, None]
                ia = tv["A"]((v, (rows_a, np.arange(K)[None, :])))  # (M/2, K) -> m + M k
                rows_b = np.arange(n // 2)[:, None]
                ib = tv["B"]((v, (rows_b, np.arange(K)[None, :])))
                dm, dn = np.indices((m // 2, n))
                ic = tv["C"]((v, (dm, dn)))  # -> row + M col
                addr = tmem(((dm, dn), 0, 0))
                peers.append(
                    {
                        "a_rows": ia % m,
                        "a_k": ia // m,
                        "b_rows": ib % n,
                        "b_k": ib // n,
                        "d": (ic % m, ic // m),
                        "tmem": (addr >> 16, addr & 0xFFFF),
                    }
                )
            out[(m, n)] = peers

    build()
    return out


@pytest.fixture(scope="module")
def cute_maps():
    return _cute_pair_maps()


@pytest.mark.parametrize("shape", SHAPES)
def test_cta_pair_mma_places_operands_and_results_as_cute(cute_maps, shape):
    m, n = shape
    peers = cute_maps[shape]
    for p in peers:  # each peer's K values are K in order: a whole K-major row per value row
        assert (p["a_k"] == np.arange(K)).all() and (p["b_k"] == np.arange(K)).all()
    # every D element in exactly one peer
    owners = np.zeros((m, n), int)
    for p in peers:
        np.add.at(owners, p["d"], 1)
    assert (owners == 1).all()

    rng = np.random.default_rng(m + n)
    a = rng.integers(-4, 5, (m, K)).astype(np.float32)
    b = rng.integers(-4, 5, (n, K)).astype(np.float32)
    ctas = [FakeContext(warp=1), FakeContext(warp=1)]
    ctas[1].rank = 1
    for v, ctx in enumerate(ctas):  # each CTA's shared memory holds the rows CuTe gives it
        ctx.peers = {0: ctas[0], 1: ctas[1]}
        a_desc = place(
            ctx.smem, A_BASE, a[peers[v]["a_rows"][:, 0]], "bfloat16", "128B", "K", "sm_100a"
        )
        b_desc = place(
            ctx.smem, B_BASE, b[peers[v]["b_rows"][:, 0]], "bfloat16", "128B", "K", "sm_100a"
        )
    idesc = instr_descriptor("f16", m, n, "bfloat16", "bfloat16", cta_group=2)
    run(
        _sim_mma,
        ctas[0],
        "ptx.tcgen05.mma",
        (None, None, None, Const(idesc, UINT32), None),
        [D_COL, a_desc, b_desc, idesc, 0],
        cta_group=2,
        a_tmem=False,
        kind="f16",
    )
    ctas[0].complete_all()
    d = a @ b.T
    for v, ctx in enumerate(ctas):
        lanes, cols = peers[v]["tmem"]
        got = ctx.tmem[lanes, D_COL + cols].view(np.float32)
        want = d[peers[v]["d"]]
        bad = np.argwhere(got != want)
        assert bad.size == 0, (
            f"M={m} N={n} peer {v}: {len(bad)} D values misplaced; first D"
            f"{tuple(int(x[tuple(bad[0])]) for x in peers[v]['d'])} at TMEM lane "
            f"{lanes[tuple(bad[0])]} column {cols[tuple(bad[0])]}"
        )
