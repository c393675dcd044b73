"""Plan-file error positions and texts that mutation testing showed no other test pinned.

Each expected line number is counted by hand in the text given (line 1 is the first line).
"""

import pytest

from tilemem.errors import PlanFileError
from tilemem.planfile import parse_plan_file


def _error(text: str) -> str:
    with pytest.raises(PlanFileError) as info:
        parse_plan_file(text, "k.toml").build()
    return str(info.value)


def test_a_kind_that_is_no_string_gets_no_suggestion():
    # difflib has nothing to say about the integer 5: the message ends with the kinds
    text = """\
target = "sm_90a"
[smem]
threads = 128
[[smem.buffers]]
name = "a"
shape = [64, 64]
dtype = "bf16"
kind = 5
"""
    message = _error(text)
    assert (
        message == "k.toml:8: [[smem.buffers]] #1: kind = 5; SMEM buffers are kind 'alloc' or 'mma'"
    )


def test_an_inline_table_without_any_header_is_placed_on_line_1():
    # no [smem] nor [[smem.buffers]] header anywhere: the item's line is the file's first
    text = (
        'smem = { threads = 128, buffers = [{ name = "a", shape = [64, 64], dtype = "bf16", '
        'kind = "bogus" }] }\n'
    )
    assert _error(text).startswith("k.toml:1: [[smem.buffers]] #1: kind = 'bogus'")


def test_an_inline_stage_view_is_placed_on_its_tmem_header():
    # the stage views are an inline array inside the only [[tmem]], whose header is line 2
    text = """\
target = "sm_100a"
[[tmem]]
total_cols = 32
buffers = [{ name = "acc", shape = [128, 32] }]
stages = [{ buffer = "nope", col_start = 0, width = 16, stages = 2 }]
"""
    message = _error(text)
    assert message.startswith("k.toml:2: [[tmem.stages]] #1 of 'tmem': buffer = 'nope'")


def test_an_inline_stage_view_of_the_first_pool_is_not_placed_on_a_later_pool():
    # two [[tmem]] pools (lines 2 and 7); the bad view belongs to the first
    text = """\
target = "sm_100a"
[[tmem]]
name = "t0"
total_cols = 32
buffers = [{ name = "acc", shape = [128, 32] }]
stages = [{ buffer = "nope", col_start = 0, width = 16, stages = 2 }]
[[tmem]]
name = "t1"
total_cols = 32
"""
    assert _error(text).startswith("k.toml:2: [[tmem.stages]] #1 of 't0': buffer = 'nope'")
