"""The shared-memory capacity check, pinned at the limit and in its message.

Limits from docs/HARDWARE-RULES.md: sm_90a allows 232,448 B of dynamic shared memory per block,
sm_120 101,376 B. MMA tiles start on 1,024 B (docs/DESIGN.md#smem-pools); barriers are 8-byte words.
"""

import dataclasses

import pytest

from tilemem import SMEMPool
from tilemem.errors import CapacityError, TargetError
from tilemem.plan import stages_that_fit
from tilemem.plan.capacity import check_tmem_target, staged_entries
from tilemem.plan.target import get_target


def test_a_pool_exactly_at_the_limit_commits():
    pool = SMEMPool(target="sm_90a")
    pool.alloc((232_448,), "uint8", name="x")
    pool.commit()
    assert pool.committed_bytes == 232_448


def test_one_byte_over_the_limit_is_refused_with_every_number():
    pool = SMEMPool(target="sm_90a")
    pool.alloc((232_449,), "uint8", name="x")
    with pytest.raises(CapacityError) as exc:
        pool.commit()
    first, buffers, row, last = str(exc.value).split("\n")
    assert first == (
        "SMEM pool 'smem' needs 232449 bytes but sm_90a allows at most 232448 bytes of dynamic "
        "shared memory per block: remove at least 1 bytes."
    )
    assert (buffers, row.split()) == ("buffers:", ["x", "232449", "B", "at", "0"])
    assert last == "padding lost to alignment: 0 bytes; total 232449 bytes; limit 232448 bytes"


def _pipeline(target="sm_120", stages=4):
    """bar (S,) u64 = 8 S B at 0; A (S, 128, 64) bf16 = 16,384 S at 1,024 (992 B padding for
    S = 4); B (S, 64, 64) bf16 = 8,192 S; C 4,096 f32 = 16,384 B."""
    pool = SMEMPool(target=target)
    pool.alloc((stages,), "uint64", name="bar")
    pool.alloc_mma((stages, 128, 64), "bfloat16", name="A")
    pool.alloc_mma((stages, 64, 64), "bfloat16", name="B")
    pool.alloc((4096,), "float32", name="C")
    return pool


def test_an_overflowing_pipeline_says_how_many_stages_fit():
    # 4 stages: 32 | pad to 1,024 | 65,536 -> 66,560 | 32,768 -> 99,328 | 16,384 -> 115,712.
    # 3 stages: 24 -> 1,024 + 49,152 = 50,176 + 24,576 = 74,752 + 16,384 = 91,136 <= 101,376.
    # per stage 16,384 + 8,192 + 8 = 24,584
    pool = _pipeline()
    with pytest.raises(CapacityError) as exc:
        pool.commit()
    message = str(exc.value)
    assert message.startswith(
        "SMEM pool 'smem' needs 115712 bytes but sm_120 allows at most 101376 bytes"
    )
    assert "remove at least 14336 bytes" in message
    rows = [line.split() for line in message.split("\n")[2:6]]
    assert rows == [
        ["bar", "32", "B", "at", "0"],
        ["A", "65536", "B", "at", "1024", "(+992", "B", "padding", "before)"],
        ["B", "32768", "B", "at", "66560"],
        ["C", "16384", "B", "at", "99328"],
    ]
    assert "padding lost to alignment: 992 bytes; total 115712 bytes; limit 101376 bytes" in message
    assert message.endswith("pipeline: 4 stages of 24584 bytes each; 3 stages would fit on sm_120")


def test_buffer_rows_right_align_sizes_and_offsets():
    pool = _pipeline()
    with pytest.raises(CapacityError) as exc:
        pool.commit()
    rows = str(exc.value).split("\n")[2:6]
    assert rows == [
        "  bar     32 B  at      0",
        "  A    65536 B  at   1024  (+992 B padding before)",
        "  B    32768 B  at  66560",
        "  C    16384 B  at  99328",
    ]


def test_rank_2_buffers_are_not_stage_tiles():
    pool = SMEMPool()
    pool.alloc((4, 8, 8), "float32", name="tile")
    pool.alloc((4, 16), "float32", name="rows")
    pool.alloc((4,), "uint64", name="bar")
    stages, staged = staged_entries(pool.plan().smem)
    assert (stages, [e.name for e in staged]) == (4, ["tile", "bar"])


def test_staged_entries_are_the_tiles_and_barrier_arrays_of_the_stage_count():
    plan = _pipeline(target=None).plan().smem
    stages, staged = staged_entries(plan)
    assert stages == 4
    assert [e.name for e in staged] == ["bar", "A", "B"]


def test_stages_that_fit_bisects_on_the_stage_count():
    plan = _pipeline(target=None).plan().smem
    assert stages_that_fit(plan, 101_376) == (3, 24_584)
    assert stages_that_fit(plan, 91_136) == (3, 24_584)  # 3 stages exactly at the limit
    assert stages_that_fit(plan, 91_135) == (2, 24_584)
    assert stages_that_fit(plan, 115_712) == (4, 24_584)
    # 0 stages: C alone, 16,384 B at offset 0 (nothing before it aligns it further)
    assert stages_that_fit(plan, 16_384) == (0, 24_584)


def test_one_stage_that_fits_is_singular():
    pool = SMEMPool(target="sm_120")
    pool.alloc((2,), "uint64", name="bar")
    pool.alloc_mma((2, 128, 256), "bfloat16", name="A")  # 65,536 per stage at 1,024
    with pytest.raises(CapacityError) as exc:
        pool.commit()
    # 1 stage: 8 -> 1,024 + 65,536 = 66,560 fits; 2 stages: 132,096 does not
    assert str(exc.value).endswith(
        "pipeline: 2 stages of 65544 bytes each; 1 stage would fit on sm_120"
    )


def test_no_pipeline_line_without_stage_tiles():
    pool = SMEMPool(target="sm_120")
    pool.alloc((1, 128, 1024), "float32", name="x")  # leading extent 1: not a stage count
    with pytest.raises(CapacityError) as exc:
        pool.commit()
    assert "pipeline" not in str(exc.value)
    assert stages_that_fit(pool.plan().smem, 10**6) is None


def test_only_8_byte_words_count_as_barrier_arrays():
    pool = SMEMPool()
    pool.alloc((4,), "int64", name="bar64")
    pool.alloc((4,), "uint32", name="flags")
    pool.alloc((4, 8, 8), "float32", name="tile")
    stages, staged = staged_entries(pool.plan().smem)
    assert (stages, [e.name for e in staged]) == (4, ["bar64", "tile"])


def test_the_most_common_leading_extent_is_the_stage_count():
    pool = SMEMPool()
    pool.alloc((3, 8, 8), "float32", name="a")
    pool.alloc((2, 8, 8), "float32", name="b")
    pool.alloc((3, 8, 8), "float32", name="c")
    stages, staged = staged_entries(pool.plan().smem)
    assert (stages, [e.name for e in staged]) == (3, ["a", "c"])


def test_no_stages_without_a_rank_3_buffer():
    pool = SMEMPool()
    pool.alloc((4,), "uint64", name="bar")
    pool.alloc((8, 8), "float32", name="tile")
    assert staged_entries(pool.plan().smem) == (0, [])


def test_overlays_disable_the_stage_advice():
    pool = _pipeline(target=None)
    pool.move_base_to(0)
    assert stages_that_fit(pool.plan().smem, 101_376) is None


def test_tmem_targets():
    assert check_tmem_target(get_target("sm_100a"), "tmem") is None
    with pytest.raises(TargetError, match="code built for sm_100 cannot use tensor memory"):
        check_tmem_target(get_target("sm_100"), "tmem")
    with pytest.raises(TargetError, match="TMEM pool 'acc': sm_90a has no tensor memory"):
        check_tmem_target(get_target("sm_90a"), "acc")


def test_a_pool_with_one_view_among_its_buffers_gets_no_stage_advice():
    # the 4-stage pipeline plus a 16-byte view of C: re-placing buffers around an overlay is
    # ambiguous, so no stage count is suggested
    pool = _pipeline(target=None)
    pool.alloc((16,), "uint8", name="head", alias_of=pool.buffer("C"))
    assert stages_that_fit(pool.plan().smem, 101_376) is None


def _loads_and_epilogue():
    """A (S, 64, 64) bf16 = 8,192 S bytes live in "load"; C 8,192 bytes live in "epilogue"."""
    pool = SMEMPool(phases=("load", "epilogue"))
    pool.alloc_mma((4, 64, 64), "bfloat16", name="A", live="load")
    pool.alloc((8192,), "uint8", name="C", live="epilogue")
    return pool.plan().smem


def test_stage_advice_packs_by_the_phases_of_the_entries():
    # C lies over the stages: S stages take 8,192 S bytes, so 4 fit in 32,768
    assert stages_that_fit(_loads_and_epilogue(), 32_768) == (4, 8_192)


def test_an_entry_without_phases_counts_as_live_in_every_phase():
    # with C's phases unknown it may not share A's bytes: 8,192 S + 8,192 <= 32,768 -> 3 stages
    plan = _loads_and_epilogue()
    a, c = plan.entries
    mixed = dataclasses.replace(plan, entries=(a, dataclasses.replace(c, phases=())))
    assert stages_that_fit(mixed, 32_768) == (3, 8_192)
