"""``tcgen05.cp`` in the simulator against CuTe's UTCCP copy atoms, byte by byte, every shape.

Oracle: the ``Copy_Traits`` of CUTLASS's ``SM100_UTCCP_*_1cta`` atoms (nvidia-cutlass,
``include/cute/atom/copy_traits_sm100.hpp``), evaluated with pycute (CuTe's layout algebra
in Python, independent of tilemem). In those traits ``ValID`` maps a logical bit index
``[core_matrix_strided (row), core_matrix_leading (bit), broadcast / repeat]`` to a TMEM
bit address (``TMEM::DP_b = 1 << 21`` bits per lane: a lane is 65536 columns of 32 bits);
``SrcLayout`` maps each bit the instruction moves to the source bit it reads and
``DstLayout`` to the logical bit it writes. The layouts are copied from that header below,
shape by shape (the header's stride-0 broadcast modes say that one source row lands in
several lanes).

The source side: CuTe builds a UTCCP's shared-memory descriptor from the first two modes
(rows x bits) as a K-major ``UMMA::smem_desc`` (``get_utccp_smem_desc_tensor`` in
``mma_traits_sm100.hpp``), so source row r, byte k sits where the PTX ISA's K-major
no-swizzle canonical layout puts it, ``((8, m), (16 B, 2)) : ((16 B, SBO), (1, LBO))``:
``start + (r % 8) * 16 + (r // 8) * SBO + (k // 16) * LBO + k % 16`` (PTX ISA 9.0,
"Shared Memory Matrix Layout"; TVM TIRx's tcgen05.cp page walks rows the same way). For
``4x256b`` the header models a "refresh" of rows 0, 32, 64, 96 of a 128-row tile; the 4
rows it reads are rows 0-3 of that walk (copy bit ``(i, b)`` is source row i, bit b), and
TIRx's table gives the same lanes, "0, 32, 64, 96 relative to the origin".
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

pycute = pytest.importorskip("pycute", reason="pycute (pip install nvidia-cutlass)")
from pycute import Layout  # noqa: E402

from tilemem.ir.intrinsics.tcgen05 import _sim_cp  # noqa: E402

from .hwfake import FakeContext, run  # noqa: E402
from .test_tcgen05_addresses import _cp  # noqa: E402

DP = 1 << 21  # TMEM::DP_b (cute/arch/tmem_allocator_sm100.hpp)
BASE, LBO, SBO = 0x3000, 0x80, 0x400  # a K-major no-swizzle source, chunks LBO apart

# (shape, multicast): (ValID, SrcLayout value mode, DstLayout value mode, (rows, bits) of
# the source index). A source index is colexicographic (row, bit, row block): 01_23 reads
# its 64 rows as two blocks of 32 (the header's "repeat" mode, 4096 bits apart).
ATOMS = {
    ("128x256b", ""): (  # SM100_UTCCP_128dp256bit_1cta
        Layout((128, 256), (DP, 1)),
        Layout(32768, 1),
        Layout(32768, 1),
        (128, 256),
    ),
    ("128x128b", ""): (  # SM100_UTCCP_128dp128bit_1cta
        Layout((128, 128), (DP, 1)),
        Layout(16384, 1),
        Layout(16384, 1),
        (128, 128),
    ),
    ("4x256b", ""): (  # SM100_UTCCP_4dp256bit_1cta (copy bit (i, b): source row i, bit b)
        Layout((128, 256), (DP, 1)),
        Layout((4, 256), (1, 4)),
        Layout((4, 256), (32, 128)),
        (4, 256),
    ),
    ("32x128b", "warpx4"): (  # SM100_UTCCP_4x32dp128bit_1cta
        Layout((32, 128, 4), (DP, 1, DP * 32)),
        Layout((32, 128, 4), (1, 32, 0)),
        Layout(16384, 1),
        (32, 128),
    ),
    ("64x128b", "warpx2::02_13"): (  # SM100_UTCCP_2x64dp128bitlw0213_1cta
        Layout((64, 128, 2), (DP, 1, DP * 64)),
        Layout((64, 128, 2), (1, 64, 0)),
        Layout(16384, 1),
        (64, 128),
    ),
    ("64x128b", "warpx2::01_23"): (  # SM100_UTCCP_2x64dp128bitlw0123_1cta
        Layout((32, 128, 2, 2), (DP, 1, DP * 64, DP * 32)),
        Layout((32, 128, 2, 2), (1, 32, 4096, 0)),
        Layout(16384, 1),
        (32, 128),
    ),
}


@functools.cache
def cute_bytes(shape: str, multicast: str) -> list[tuple[int, int, int, int, int]]:
    """Per byte the atom moves: (source row, source byte, TMEM lane, column, byte in cell)."""
    val_id, src, dst, (rows, bits) = ATOMS[(shape, multicast)]
    out = set()
    for v in range(src.size()):
        s, t = src(v), val_id(dst(v))
        row, bit = s % rows + rows * (s // (rows * bits)), (s // rows) % bits
        if bit % 8 or t % 8:
            continue  # one check per byte: its first bit
        lane, within = divmod(t, DP)
        out.add((row, bit // 8, lane, within // 32, (within % 32) // 8))
    assert len(out) == src.size() // 8, (shape, len(out))  # each moved byte once
    return sorted(out)


@pytest.mark.parametrize("shape, multicast", sorted(ATOMS))
@pytest.mark.parametrize("lane0, col0", [(0, 8), (0, 100)])
def test_cp_moves_each_byte_where_cute_says(shape, multicast, lane0, col0):
    rows, bits = (int(x) for x in shape.rstrip("b").split("x"))
    ctx = FakeContext(warp=0)
    taddr = (lane0 << 16) | col0
    # random source bytes in the K-major no-swizzle layout at BASE, then the copy
    src = _cp(ctx, rows, bits // 8, taddr, shape, multicast, seed=rows + bits).view(np.uint8)
    cells = ctx.tmem.view(np.uint8).reshape(128, 512, 4)  # little-endian bytes of each cell
    moved = cute_bytes(shape, multicast)
    written = np.zeros((128, 512), bool)
    for row, byte, lane, col, within in moved:
        got = cells[lane0 + lane, col0 + col, within]
        assert got == src[row, byte], (
            f"{shape}.{multicast}: source row {row} byte {byte} should be in TMEM lane "
            f"{lane0 + lane} column {col0 + col} byte {within} (CuTe), found {got:#x}"
        )
        written[lane0 + lane, col0 + col] = True
    assert len({(r, b) for r, b, *_ in moved}) == src.size  # CuTe reads every source byte
    assert not ctx.tmem[~written].any()  # and the simulator wrote nothing else


def test_cta_pair_cp_copies_each_ctas_own_rows():
    """cta_group::2 (CuTe's ``SM100_UTCCP_128dp128bit_2cta``: ``ThrID`` is the two CTAs of
    the pair and ``SrcLayout`` / ``DstLayout`` have stride 0 over it): the even CTA issues,
    and each CTA copies its own shared bytes at the descriptor's addresses into its own TMEM,
    row r to lane r as for one CTA."""
    ctas = [FakeContext(warp=0), FakeContext(warp=0)]
    ctas[1].rank = 1
    rng = np.random.default_rng(2)
    src = rng.integers(1, 256, (2, 128, 16), dtype=np.uint8)
    r, k = np.indices(src.shape[1:])
    where = BASE + (r % 8) * 16 + (r // 8) * SBO + (k // 16) * LBO + k % 16
    for v, ctx in enumerate(ctas):
        ctx.peers = {0: ctas[0], 1: ctas[1]}
        ctx.smem[where] = src[v]
    desc = (BASE >> 4) | ((LBO >> 4) << 16) | ((SBO >> 4) << 32) | (1 << 46)
    args = dict(shape="128x128b", multicast="", cta_group=2)
    run(_sim_cp, ctas[0], "ptx.tcgen05.cp", (None, None), [16, desc], **args)
    ctas[0].complete_all()
    for v, ctx in enumerate(ctas):
        np.testing.assert_array_equal(ctx.tmem[:, 16:20], src[v].view("<u4"))
    run(_sim_cp, ctas[1], "ptx.tcgen05.cp", (None, None), [16, desc], **args)
    assert [kind for kind, _ in ctas[1].hazards] == ["tmem-protocol"] and not ctas[1].pending
