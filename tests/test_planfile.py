"""Plan files: TOML in, the same plan as the Python calls out; errors name the file's line."""

import json
from pathlib import Path

import pytest

from tilemem.errors import (
    AlignmentError,
    AllocationError,
    PlanFileError,
    SwizzleError,
    TMEMOverflowError,
)
from tilemem.examples import EXAMPLES
from tilemem.planfile import load_plan, parse_plan_file

EXAMPLE_FILES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_shipped_plan_file_gives_the_python_plan(name):
    path = EXAMPLE_FILES / f"{name}.toml"
    loaded = parse_plan_file(path.read_text(), str(path))
    python = EXAMPLES[name]
    # the file's threads reach its SMEM pool (and so its plan); the Python example gives them apart
    assert loaded.build().plan() == python.build().plan().with_threads(python.threads)
    assert (loaded.name, loaded.target, loaded.threads, loaded.summary) == (
        python.name,
        python.target,
        python.threads,
        python.summary,
    )


def test_every_shipped_plan_file_is_a_builtin_example():
    assert sorted(p.stem for p in EXAMPLE_FILES.glob("*.toml")) == sorted(EXAMPLES)


SMEM_ONLY = """\
target = "sm_90a"
[smem]
name = "tiles"

[[smem.buffers]]
kind = "mma"
name = "A"
shape = [2, 64, 64]
dtype = "bfloat16"

[[smem.buffers]]
name = "bar"
shape = [2]
dtype = "uint64"

[[smem.buffers]]
move_base_to = 0

[[smem.buffers]]
name = "C"
shape = [16]
dtype = "float32"
align = 16
"""


def test_smem_operations_replay_in_file_order():
    plan = parse_plan_file(SMEM_ONLY).build().plan()
    # A: 2*64*64 bf16 = 16384 bytes at 0; bar 16 bytes at 16384; C over A after move_base_to(0)
    assert [(e.name, e.offset, e.end) for e in plan.smem.entries] == [
        ("A", 0, 16384),
        ("bar", 16384, 16400),
        ("C", 0, 64),
    ]
    assert plan.smem.name == "tiles" and plan.target == "sm_90a"
    assert plan.smem.entries[2].overlaps == ("A",)


def test_tmem_slot_goes_where_the_file_puts_it():
    text = """\
target = "sm_100a"
[smem]
threads = 1024  # 2 CTAs per SM x 64 columns: no TMEM waits
[[smem.buffers]]
slot_of = "t"
[[smem.buffers]]
name = "bar"
shape = [1]
dtype = "uint64"
[[tmem]]
name = "t"
total_cols = 64
[[tmem.buffers]]
name = "acc"
shape = [128, 64]
"""
    plan = parse_plan_file(text).build().plan()
    # the 4-byte slot at 0, the 8-aligned barrier at 8
    assert [(e.name, e.offset) for e in plan.smem.entries] == [("t_addr", 0), ("bar", 8)]
    assert [(e.name, e.offset, e.end) for e in plan.tmem[0].entries] == [("acc", 0, 64)]


def _error(text, cls=PlanFileError):
    with pytest.raises(cls) as info:
        parse_plan_file(text, "k.toml")
    return str(info.value)


def test_toml_syntax_error_names_the_line():
    message = _error('target = "sm_90a"\n[smem]\nname = \n')
    assert message.startswith("k.toml:3: not valid TOML")


def test_unknown_key_names_its_line_and_the_keys_allowed():
    message = _error(SMEM_ONLY.replace('name = "bar"\n', 'name = "bar"\nsize = 3\n'))
    assert message.startswith("k.toml:13: [[smem.buffers]] #2: unknown key 'size'")
    keys = "alias_of, align, dtype, kind, layout, live, name, offset, scope, shape, strides"
    assert keys in message


def test_pool_error_keeps_its_class_and_gains_the_line():
    # (64, 32) bfloat16 rows are 64 bytes: no 128B swizzle
    bad = SMEM_ONLY.replace('dtype = "bfloat16"', 'dtype = "bfloat16"\nswizzle_mode = "128B"')
    message = _error(bad.replace("[2, 64, 64]", "[2, 64, 32]"), SwizzleError)
    # line 8 is A's shape, the key the message tells to change (the table starts at line 5)
    assert message.startswith("k.toml:8: [[smem.buffers]] #1 'A': ")
    assert "64-byte rows" in message


def test_second_tmem_pool_errors_point_into_that_pool():
    text = """\
target = "sm_100a"
[[tmem]]
name = "t0"
total_cols = 32
[[tmem.buffers]]
shape = [128, 32]
[[tmem]]
name = "t1"
total_cols = 32
[[tmem.buffers]]
shape = [128, 16]
[[tmem.buffers]]
shape = [128, 32]
"""
    message = _error(text, TMEMOverflowError)
    assert message.startswith("k.toml:12: [[tmem.buffers]] #2 of 't1': ")
    assert "32" in message and "48" in message


def test_kind_unknown_names_the_kinds():
    message = _error(SMEM_ONLY.replace('kind = "mma"', 'kind = "swizzled"'))
    assert message.startswith("k.toml:6: [[smem.buffers]] #1: kind = 'swizzled'")
    assert "'alloc' or 'mma'" in message


def test_stage_view_of_an_unknown_buffer_is_refused():
    text = """\
target = "sm_100a"
[[tmem]]
total_cols = 32
[[tmem.buffers]]
name = "acc"
shape = [128, 32]
[[tmem.stages]]
buffer = "accumulator"
col_start = 0
width = 16
stages = 2
"""
    message = _error(text)
    assert message.startswith("k.toml:8: [[tmem.stages]] #1")  # the buffer = line
    assert "'accumulator' names no buffer" in message and "acc" in message


def test_stage_views_appear_in_the_plan():
    text = """\
target = "sm_100a"
[smem]
threads = 1024
[[tmem]]
name = "t"
total_cols = 64
[[tmem.buffers]]
name = "acc"
shape = [128, 64]
[[tmem.stages]]
buffer = "acc"
col_start = 0
width = 32
stages = 2
"""
    stages = parse_plan_file(text).build().plan().tmem[0].stages
    assert [(v.buffer, v.spans) for v in stages] == [("acc", ((0, 32), (32, 64)))]


def test_schema_from_the_future_is_refused():
    message = _error("schema = 2\n")
    assert message.startswith("k.toml:1: schema = 2; this tilemem reads schema 1")


def test_missing_file_is_a_plan_file_error(tmp_path):
    with pytest.raises(PlanFileError, match=r"cannot read plan file .*nope\.toml: No such file"):
        load_plan(tmp_path / "nope.toml")


def test_cli_plans_a_file_and_reports_errors_in_one_line(tmp_path, capsys):
    from tilemem.cli import main

    good = tmp_path / "g.toml"
    good.write_text(SMEM_ONLY)
    assert main(["plan", str(good)]) == 0
    assert "tiles (shared.dyn)" in capsys.readouterr().out
    bad = tmp_path / "b.toml"
    bad.write_text(SMEM_ONLY.replace("move_base_to = 0", "move_base_to = -8"))
    assert main([str(bad)]) == 1
    err = capsys.readouterr().err
    assert (
        err.startswith(f"tilemem: {bad}:17: [[smem.buffers]] #3: move_base_to")
        and err.count("\n") == 1
    )


def test_move_base_to_takes_no_other_keys():
    message = _error(SMEM_ONLY.replace("move_base_to = 0", "move_base_to = 0\nname = 'x'"))
    assert message.startswith("k.toml:18: [[smem.buffers]] #3: unknown key 'name'")


def test_alignment_error_class_is_kept_and_points_at_the_buffer():
    message = _error(SMEM_ONLY.replace("align = 16", "align = 3"), AlignmentError)
    # line 23 is `align = 3`; the table's header is line 19
    assert message.startswith("k.toml:23: [[smem.buffers]] #4 'C': align must be a power of two")


def test_unknown_pool_key_is_a_plan_file_error():
    message = _error(SMEM_ONLY.replace('name = "tiles"', 'name = "tiles"\nregion = 4'))
    assert message.startswith("k.toml:4: [smem]: unknown key 'region'")
    assert "commit" in message and "threads" in message


LIFETIMES = """\
target = "sm_90a"
[smem]
phases = ["load", "mma", "epilogue"]

[[smem.buffers]]
kind = "mma"
name = "A"
shape = [2, 128, 64]
dtype = "bfloat16"
live = ["load", "mma"]

[[smem.buffers]]
kind = "mma"
name = "C"
shape = [128, 128]
dtype = "bfloat16"
live = "epilogue"

[[smem.buffers]]
name = "P"
shape = [64, 64]
dtype = "bfloat16"
alias_of = "C"
offset = 0
live = "epilogue"
"""


def test_lifetimes_in_a_plan_file_give_the_python_plan():
    from tilemem import SMEMPool

    smem = SMEMPool(target="sm_90a", phases=("load", "mma", "epilogue"))
    smem.alloc_mma((2, 128, 64), "bfloat16", name="A", live=("load", "mma"))
    c = smem.alloc_mma((128, 128), "bfloat16", name="C", live="epilogue")
    smem.alloc((64, 64), "bfloat16", name="P", alias_of=c, offset=0, live="epilogue")
    smem.commit()
    plan = parse_plan_file(LIFETIMES).build().plan()
    assert plan == smem.plan()
    # A (load, mma) and C (epilogue) are never live together: both at byte 0
    assert (plan.entry("A").offset, plan.entry("C").offset, plan.entry("P").alias_of) == (0, 0, "C")


def test_unknown_phase_in_a_plan_file_points_at_the_buffer():
    bad = LIFETIMES.replace('live = "epilogue"\n\n', 'live = "drain"\n\n', 1)
    message = _error(bad, AllocationError)  # the pool's own error class, with the line
    # line 17 is `live = "drain"`; C's table starts at line 12
    assert message.startswith("k.toml:17: [[smem.buffers]] #2 'C': ") and "drain" in message


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_toml_and_json_of_one_example_give_equal_plans(name, tmp_path):
    from tilemem.cli import main

    saved = tmp_path / f"{name}.json"
    assert main(["plan", "-e", name, "--json", "-o", str(saved)]) == 0
    from_toml = load_plan(EXAMPLE_FILES / f"{name}.toml")
    assert load_plan(saved) == from_toml
    example = EXAMPLES[name]  # name, summary and threads kept, advice given
    assert (from_toml.name, from_toml.summary, from_toml.threads) == (
        name,
        example.summary,
        example.threads,
    )
    assert from_toml.advice is not None
    assert from_toml.pools == example.build().plan().pools


def test_load_plan_reads_json_by_its_brace_whatever_the_name(tmp_path):
    saved = tmp_path / "plan.txt"
    plan = load_plan(EXAMPLE_FILES / "hopper-gemm.toml")
    saved.write_text(json.dumps(plan.to_dict()))
    assert load_plan(saved) == plan


def test_load_plan_is_exported_and_loaded_only_when_used():
    import subprocess
    import sys

    import tilemem
    import tilemem.planfile

    assert tilemem.load_plan is tilemem.planfile.load_plan and "load_plan" in tilemem.__all__
    code = "import sys, tilemem; print('tilemem.planfile' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.stdout == "False\n", out.stderr
