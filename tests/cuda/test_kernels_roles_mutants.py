"""The attention kernel's softmax warpgroups pinned in the generated source: which warps own
S0/P0 and S1/P1, and how their tcgen05.st of P is ordered before the MMA warp reads it.

The simulator does not model ``tcgen05.fence::before_thread_sync`` (its happens-before
edges come from the ``wait::st`` and the mbarrier arrival, docs/SIMULATOR.md), so a kernel
that leaves the fence out still runs without hazards there; and the softmax roles moved to
other warps still give the same numbers. Both are read from the source here. Expected
orders from the PTX ISA, "tcgen05.fence" and "tcgen05.wait"; the role map from the
kernel's design (``kernels.attention_fwd``: warps 4-7 own S0/P0, warps 8-11 S1/P1, warps
12-15 drain O), worked out in the comments.
"""

from __future__ import annotations

import re

from csource import evaluate

from tilemem.kernels import attention_fwd

ARRIVE_P = (
    'mbarrier.arrive.shared::cta.b64 st, [%0];\\n}" :  : "r"(tm_smem_addr((uint8_t*)p_full_bar'
)


def _attention() -> str:
    print("building the attention example")
    return attention_fwd().source


def _asm(line: str) -> str:
    """The first instruction of an inline-PTX line ('' for any other line)."""
    match = re.search(r'asm volatile\("(?:\{\\n\.reg [^;]*;\\n)?([\w:.]+)', line)
    return match.group(1) if match else ""


def test_softmax_orders_its_p_stores_before_the_p_full_arrival():
    # PTX ISA, "tcgen05.wait": tcgen05.wait::st waits for the thread's earlier tcgen05.st;
    # "tcgen05.fence": tcgen05.fence::before_thread_sync orders the thread's earlier tcgen05
    # operations before a following synchronisation (here the arrive on p_full, which the
    # MMA warp waits for before its tcgen05.mma reads P from TMEM). So each softmax
    # warpgroup's arrive is preceded by exactly: wait::st, fence::before_thread_sync
    lines = [line.strip() for line in _attention().splitlines()]
    arrives = [i for i, line in enumerate(lines) if ARRIVE_P in line]
    assert len(arrives) == 2  # one per softmax warpgroup, P0 and P1
    for i in arrives:
        assert [_asm(lines[i - 2]), _asm(lines[i - 1])] == [
            "tcgen05.wait::st.sync.aligned",
            "tcgen05.fence::before_thread_sync",
        ], lines[i - 3 : i + 1]
        assert "p_full_bar + " + str(8 * arrives.index(i)) in lines[i]


def _warps_of_block(src: str, marker: str) -> set[int]:
    """Warps (of 16) that enter the ``if`` holding the first line with ``marker``."""
    head = src.split(marker, 1)[0].splitlines()
    guards = [re.fullmatch(r"\s*if \((.*)\) \{", line) for line in head]
    guard = [g for g in guards if g][-1].group(1)
    plain = guard.replace("&&", " and ")
    return {w for w in range(16) if evaluate(plain, warp=w)}


def test_each_softmax_warpgroup_owns_one_s_tile():
    # 512 threads = 4 warpgroups: 0 load and MMA, 1 softmax of S0 (s_full_bar + 0, P0
    # arrives on p_full_bar + 0), 2 softmax of S1 (+ 8), 3 the epilogue. Each softmax
    # warpgroup's four warps read the four lane quarters (warp % 4) of its S tile
    src = _attention()
    s0 = "tm_mbarrier_wait(tm_smem_addr((uint8_t*)s_full_bar + 0)"
    s1 = "tm_mbarrier_wait(tm_smem_addr((uint8_t*)s_full_bar + 8)"
    assert _warps_of_block(src, s0) == {4, 5, 6, 7}
    assert _warps_of_block(src, s1) == {8, 9, 10, 11}
    assert _warps_of_block(src, "(uint8_t*)o_full_bar + 0), (uint32_t)(0)") == {12, 13, 14, 15}
