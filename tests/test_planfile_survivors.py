"""Plan-file error lines, messages and accepted values that mutation testing showed no other
test pinned (``planfile.py``).

Each expected line number is counted by hand in the text given (line 1 is the first line);
the limits come from the file format's rules (threads per CTA in [1, 1024] on sm_90a, a
summary of 1 to 1000 printable characters).
"""

from __future__ import annotations

import pytest

from tilemem.errors import PlanFileError, TilememError
from tilemem.planfile import parse_plan_file

BUFFER = """\
[[smem.buffers]]
name = "a"
shape = [64, 64]
dtype = "bfloat16"
"""


def _error(text: str) -> str:
    with pytest.raises(PlanFileError) as info:
        parse_plan_file(text, "k.toml").build()
    return str(info.value)


def _error_of_any_class(text: str) -> str:
    with pytest.raises(TilememError) as info:
        parse_plan_file(text, "k.toml").build()
    return str(info.value)


# -- lines ------------------------------------------------------------------------------------


def test_an_inline_buffer_is_placed_on_its_smem_header():
    # no [[smem.buffers]] header: buffer #1 is written inline in [smem] (header on line 2)
    text = """\
target = "sm_90a"
[smem]
threads = 128
buffers = [{ name = "a", shape = [64, 64], dtype = "bfloat16", kind = "bogus" }]
"""
    assert _error(text).startswith("k.toml:2: [[smem.buffers]] #1: kind = 'bogus'")


@pytest.mark.parametrize("tail", ["", "[[tmem]]\n"])
def test_a_top_level_key_on_line_1_is_found_there(tail):
    # smem = 5 is on line 1; line 3 only looks like a key (it is inside target's string);
    # the search starts at line 1 whatever the last line is (a header or not)
    text = 'smem = 5\ntarget = """sm_90a\nsmem = 1"""\n' + tail
    assert _error(text) == "k.toml:1: smem must be the table [smem], got int"


def test_a_key_of_a_table_without_header_is_not_sought_past_the_next_header():
    # [smem] is given by a dotted key on line 1 (no [smem] header: its line is 1); its
    # threads are refused, and "threads" on line 3 belongs to the [[tmem]] table of line 2
    text = "smem.threads = 2000\n[[tmem]]\nthreads = 64\n"
    assert _error_of_any_class(text) == (
        "k.toml:1: [smem]: threads must be an integer in [1, 1024], got 2000"
    )


def test_toml_that_ends_too_early_is_placed_on_the_last_line():
    # tomllib says "at end of document" without a line: the file's last line, 3
    assert _error("a = 1\nb = 2\nc = ").startswith("k.toml:3: not valid TOML: ")


def test_an_unknown_key_of_an_inline_smem_table_is_on_line_1():
    # smem = {...} on line 1, no [smem] header: the table's line is 1
    text = 'smem = { bogus = 1 }\ntarget = "sm_90a"\n'
    assert _error(text).startswith("k.toml:1: [smem]: unknown key 'bogus'")


# -- messages ---------------------------------------------------------------------------------


def test_a_date_is_named_a_date_or_time():
    assert _error("threads = 1979-05-27\n") == (
        "k.toml:1: threads must be an integer, got a date or time datetime.date(1979, 5, 27)"
    )


def test_a_live_table_of_booleans_gets_the_array_it_means():
    # lines: target 1, [[smem.buffers]] 2, name 3, shape 4, dtype 5, live 6
    text = 'target = "sm_90a"\n' + BUFFER + "live = {mainloop = false, epilogue = true}\n"
    assert _error(text).endswith(
        'live takes no table; write the phases it is live in as an array: ["epilogue"]'
    )


def test_a_live_table_not_all_booleans_gets_no_array():
    # "x" is no boolean: no array can be read off the table, so the message ends there
    text = 'target = "sm_90a"\n' + BUFFER + 'live = {mainloop = "x", epilogue = true}\n'
    assert _error(text) == (
        "k.toml:6: [[smem.buffers]] #1 'a': live = {'mainloop': 'x', 'epilogue': True} is a "
        "table; live takes no table"
    )


@pytest.mark.parametrize("summary", ["", "tab\\there"])  # TOML "\\t": a tab
def test_a_summary_that_is_not_one_printable_line_is_refused(summary):
    text = f'target = "sm_90a"\nsummary = "{summary}"\n' + BUFFER
    assert _error(text).startswith("k.toml:2: summary must be one line of 1 to 1000 printable")


def test_a_summary_of_1000_characters_is_taken():
    text = 'target = "sm_90a"\nsummary = "' + "s" * 1000 + '"\n' + BUFFER
    assert parse_plan_file(text, "k.toml").summary == "s" * 1000


def test_a_name_that_is_no_identifier_is_refused_on_its_line():
    assert _error('target = "sm_90a"\nname = "a b"\n' + BUFFER) == (
        "k.toml:2: name 'a b' is not an identifier: use ASCII letters, digits and '_', not "
        "starting with a digit"
    )


# -- threads ----------------------------------------------------------------------------------


def test_smem_threads_are_the_plans_threads_without_top_level_ones():
    text = 'target = "sm_90a"\n[smem]\nthreads = 128\n' + BUFFER
    assert parse_plan_file(text, "k.toml").threads == 128


@pytest.mark.parametrize("threads", [1, 1024])
def test_top_level_threads_at_both_limits_are_taken(threads):
    # sm_90a: 1 to 1024 threads per CTA, both ends included
    text = f'target = "sm_90a"\nthreads = {threads}\n' + BUFFER
    assert parse_plan_file(text, "k.toml").threads == threads


def test_one_line_toml_that_ends_too_early_is_placed_on_line_1():
    assert _error("a = ").startswith("k.toml:1: not valid TOML: ")


def test_an_unknown_top_level_key_on_line_1_is_placed_there():
    assert _error('bogus = 1\ntarget = "sm_90a"\n').startswith(
        "k.toml:1: top level: unknown key 'bogus'"
    )


def test_threads_that_disagree_name_the_line_of_each():
    # top-level threads on line 1, [smem] threads inside the inline table of line 2
    text = (
        "threads = 128\n"
        'smem = { threads = 64, buffers = [{ name = "a", shape = [64, 64], dtype = "bf16" }] }\n'
    )
    assert _error(text) == (
        "k.toml:1: threads = 128 disagrees with [smem] threads = 64 (line 2); give it once"
    )


def test_threads_that_disagree_name_a_dotted_smem_threads_line():
    text = 'threads = 128\ntarget = "sm_90a"\nsmem.threads = 64\n'
    assert _error(text) == (
        "k.toml:1: threads = 128 disagrees with [smem] threads = 64 (line 3); give it once"
    )


# -- operations -------------------------------------------------------------------------------

SLOT = 'target = "sm_100a"\n[[smem.buffers]]\nslot_of = "t"\n'
POOL = '[[tmem]]\nname = "t"\ntotal_cols = 256\n'


def test_an_smem_move_takes_no_other_key():
    text = 'target = "sm_90a"\n[[smem.buffers]]\nmove_base_to = 1024\nname = "x"\n'
    assert _error(text) == (
        "k.toml:4: [[smem.buffers]] #1: unknown key 'name'; the keys here are move_base_to"
    )


def test_a_slot_placement_takes_no_other_key():
    text = 'target = "sm_100a"\n[[smem.buffers]]\nslot_of = "t"\nname = "x"\n' + POOL
    assert _error(text) == (
        "k.toml:4: [[smem.buffers]] #1: unknown key 'name'; the keys here are slot_of"
    )


def test_a_tmem_slot_is_placed_once():
    # lines: target 1, [[smem.buffers]] 2, slot_of 3, [[smem.buffers]] 4, slot_of 5
    text = SLOT + '[[smem.buffers]]\nslot_of = "t"\n' + POOL
    assert (
        _error(text) == "k.toml:5: [[smem.buffers]] #2: the slot of TMEM pool 't' is placed twice"
    )


def test_a_tmem_move_takes_no_other_key():
    # lines: 1-3 SLOT, [[tmem]] 4-6, [[tmem.buffers]] 7, move_base_to 8, name 9
    text = SLOT + POOL + '[[tmem.buffers]]\nmove_base_to = 64\nname = "x"\n'
    assert _error(text) == (
        "k.toml:9: [[tmem.buffers]] #1 of 't': unknown key 'name'; the keys here are move_base_to"
    )


def test_a_tmem_move_places_the_next_buffer_there():
    text = SLOT + POOL + "[[tmem.buffers]]\nmove_base_to = 64\n"
    text += '[[tmem.buffers]]\nname = "acc"\nshape = [128, 32]\ndtype = "float32"\n'
    pool = parse_plan_file(text, "k.toml").build()
    assert pool.tmem_pools[0].buffer("acc").col_offset == 64


def test_an_error_naming_two_keys_is_placed_on_the_first_named():
    # the message names "stages" ("2 stages of 300 columns") before "buffer" ("the buffer's
    # 512 columns"): the line of stages (15), not of buffer (12). Lines: 1-3 SLOT, [[tmem]]
    # 4-6, [[tmem.buffers]] 7-10, [[tmem.stages]] 11, buffer 12, width 13, col_start 14,
    # stages 15
    text = SLOT + POOL.replace("256", "512")
    text += '[[tmem.buffers]]\nname = "acc"\nshape = [128, 512]\ndtype = "float32"\n'
    text += '[[tmem.stages]]\nbuffer = "acc"\nwidth = 300\ncol_start = 0\nstages = 2\n'
    assert _error_of_any_class(text) == (
        "k.toml:15: [[tmem.stages]] #1 of 't': TMEMStages over 'acc': 2 stages of 300 columns, "
        "stride 300, from column 0 reach column 600, beyond the buffer's 512 columns"
    )


# -- defaults from the file name --------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "name"), [("k.toml", "k"), ("dir/gemm_1.toml", "gemm_1"), ("my plan.toml", "plan")]
)
def test_the_default_name_is_the_file_stem_when_it_is_an_identifier(source, name):
    assert parse_plan_file('target = "sm_90a"\n' + BUFFER, source).name == name


def test_the_default_summary_names_the_file_up_to_1000_characters():
    # "plan file " is 10 characters: a 990-character source gives a 1000-character summary,
    # one more character gives the bare "plan file"; a tab is not printable
    text = 'target = "sm_90a"\n' + BUFFER
    source = "p" * 990
    assert parse_plan_file(text, source).summary == "plan file " + source
    assert parse_plan_file(text, source + "q").summary == "plan file"
    assert parse_plan_file(text, "a\tb.toml").summary == "plan file"


# last in the file: the deep nesting ends a line tracer (sys.settrace) that runs the tests
def test_arrays_nested_too_deep_are_refused_on_line_1():
    text = "x = " + "[" * 3000 + "]" * 3000 + "\n"
    assert _error(text) == (
        "k.toml:1: not valid TOML here: arrays or tables nested too deep to read"
    )
