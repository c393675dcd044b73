"""The example kernels (``kernels.py``) pinned where mutation testing found no test that
notices a change: synchronisation that only a GPU (or a run longer than the simulated ones)
would get wrong. Read from the generated source (``csource``); the expected values come
from the PTX ISA sections named and are worked out by hand in a comment.
"""

from __future__ import annotations

import re

import pytest
from csource import asm_ops, evaluate, statements

from tilemem.kernels import attention_fwd, blackwell_gemm, nvfp4_gemm

COMMIT = "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64"


def test_nvfp4_mma_warp_frees_each_stage_by_tcgen05_commit():
    # PTX ISA, "tcgen05.commit": the mbarrier gets one arrival once every tcgen05.mma the
    # thread issued before it is done, i.e. once the stage's A, B and factors are read. The
    # producer waits on the stage's empty barrier before refilling it, so each K tile ends
    # with a commit to empty_bar[stage] (8-byte barriers), and the last to acc_full_bar
    print("building the nvfp4 GEMM example")
    src = nvfp4_gemm().source
    commits = asm_ops(src, COMMIT)
    assert commits == [
        ["tm_smem_addr((uint8_t*)empty_bar + (stage_1 * 8))"],
        ["tm_smem_addr((uint8_t*)acc_full_bar + 0)"],
    ]
    stmts = statements(src)
    first = stmts.index(COMMIT)
    assert stmts[first - 1].startswith("tcgen05.mma.cta_group::1.kind::mxf4nvf4")
    assert stmts.count("wait empty_bar") == 1


def _attention() -> str:
    print("building the attention example")
    return attention_fwd().source


def test_attention_producer_waits_for_a_free_kv_stage_with_the_opposite_parity():
    # PTX ISA, "mbarrier.test_wait/try_wait" (.parity): the producer of ring use u = j / 3
    # waits for the MMA warp's release of use u - 1 of the slot, parity (u % 2) ^ 1; on a
    # fresh barrier (use 0) parity 1 counts as complete, so the first three loads go at once
    src = _attention()
    (parity,) = re.findall(
        r"tm_mbarrier_wait\(tm_smem_addr\(\(uint8_t\*\)kv_empty_bar \+ \(stage \* 8\)\), "
        r"\(uint32_t\)\((.*)\)\);",
        src,
    )
    assert [evaluate(parity, phase=p) for p in (0, 1)] == [1, 0]


def test_attention_mma_warp_waits_for_q_then_each_kv_stage():
    # S_i = Q_i K^T reads Q: the MMA warp first waits for Q's TMA (q_full, parity 0, used
    # once), then per KV block for its stage, then fences tcgen05 work after the wait
    stmts = statements(_attention())
    start = stmts.index("wait q_full_bar")
    assert stmts[start - 1] == "if"
    assert stmts[start : start + 3] == [
        "wait q_full_bar",
        "wait kv_full_bar",
        "tcgen05.fence::after_thread_sync",
    ]


def _guard_of(src: str, marker: str) -> str:
    """The condition of the ``if`` that opens the block holding the first ``marker``."""
    head = src.split(marker, 1)[0].splitlines()
    opens = [line for line in head if re.fullmatch(r"\s*if \(.*\) \{", line)]
    match = re.fullmatch(r"\s*if \((.*)\) \{", opens[-1])
    assert match
    return match.group(1)


def _warps(guard: str) -> set[int]:
    """The warps (of 16) whose elected thread enters a block guarded by ``guard``."""
    plain = guard.replace("tm_elect_sync()", "1").replace("&&", " and ")
    return {w for w in range(16) if evaluate(plain, warp=w)}


def test_attention_loads_and_mmas_are_issued_by_different_warps():
    # the producer's loop blocks on kv_empty, which only the MMA warp's commits release:
    # one warp doing both would run its whole producer loop first and hang once kv_blocks
    # exceeds the 3 stages. Each role is one warp of warpgroup 0, elected inside it
    src = _attention()
    producer = _guard_of(src, "kv_empty_bar + (stage * 8)")
    mma = _guard_of(src, "tm_mbarrier_wait(tm_smem_addr((uint8_t*)q_full_bar")

    assert _warps(producer) == {0}
    assert len(_warps(mma)) == 1 and _warps(mma) != {0} and _warps(mma) <= {1, 2, 3}


@pytest.mark.parametrize("build", [blackwell_gemm, nvfp4_gemm], ids=["blackwell", "nvfp4"])
def test_gemm_loads_and_mmas_are_issued_by_different_warps(build):
    # as for attention: the producer waits on empty_bar, which only the MMA warp's
    # tcgen05.commit frees, so the two roles are two warps (both of warps 0-3)
    print(f"building the {build.__name__} example")
    src = build().source
    producer = _guard_of(src, "tm_mbarrier_wait(tm_smem_addr((uint8_t*)empty_bar")
    mma = _guard_of(src, 'asm volatile("{\\n.reg .pred p;\\nsetp.ne.b32 p, ')
    assert _warps(producer) == {0}
    assert len(_warps(mma)) == 1 and _warps(mma) != {0} and _warps(mma) <= {1, 2, 3}
