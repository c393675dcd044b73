"""CLI outputs that mutation testing showed no other test pinned: file modes, column widths,
JSON indentation, titles, and what ``emit`` prints beside the kernel. Run in-process."""

import json
import os
import stat

from tilemem.cli import main
from tilemem.examples import EXAMPLES
from tilemem.kernels import KERNELS


def test_an_output_file_is_readable_by_everyone_like_a_plain_write(tmp_path):
    # written through a private temporary file (mode 0600), then set to rw-r--r--
    out = tmp_path / "plan.txt"
    assert main(["plan", "-o", str(out)]) == 0
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o644


def test_the_example_list_aligns_its_columns_on_the_longest_name(capsys):
    # the longest name is 'hopper-gemm-persistent', 22 characters: every target starts at
    # column 22 + 2 = 24 and every summary at 24 + 8 + 1 = 33
    assert main(["plan", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line[:24].rstrip() for line in lines] == list(EXAMPLES)
    for line, example in zip(lines, EXAMPLES.values()):
        assert line[24:33] == f"{example.target:<8} "
        assert line[33:] == example.summary
    assert lines[1].startswith("hopper-gemm-persistent  sm_90a   Persistent")


def test_the_json_plan_is_indented_by_two_spaces(capsys):
    assert main(["plan", "--json"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[:3] == ["{", '  "example": "hopper-gemm",', '  "schema": 1,']
    assert out.endswith("}\n") and json.loads(out)["example"] == "hopper-gemm"


def _write_plan(tmp_path, extra: str):
    path = tmp_path / "p.toml"
    path.write_text(f'name = "tiny"\n{extra}target = "sm_90a"\n[smem]\nthreads = 128\n')
    return str(path)


def test_a_plan_file_is_titled_by_its_name_and_summary(tmp_path, capsys):
    path = _write_plan(tmp_path, 'summary = "one small plan"\n')
    assert main(["plan", path]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "tiny: one small plan"


def test_a_plan_file_without_a_summary_is_titled_by_its_file(tmp_path, capsys):
    path = _write_plan(tmp_path, "")
    assert main(["plan", path]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"tiny: plan file {path}"


def test_plan_refuses_a_file_and_an_example_together(tmp_path, capsys):
    path = _write_plan(tmp_path, "")
    assert main(["plan", path, "--example", "hopper-gemm"]) == 2
    assert capsys.readouterr().err == "tilemem: give a plan file or --example, not both\n"


def test_emit_to_standard_output_prints_the_source_alone(capsys):
    assert main(["emit", "-e", "hopper-gemm"]) == 0
    assert capsys.readouterr().out == KERNELS["hopper-gemm"]().source


def test_emit_to_a_file_says_what_it_wrote(tmp_path, capsys):
    out = tmp_path / "k.cu"
    assert main(["emit", "-e", "hopper-gemm", "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"wrote {out}: kernel ")
    assert said.endswith(" bytes of dynamic shared memory\n")
    assert out.read_text() == KERNELS["hopper-gemm"]().source


def test_emit_refuses_a_file_and_an_example_before_looking_at_ir(tmp_path, capsys):
    path = _write_plan(tmp_path, "")
    assert main(["emit", path, "--example", "hopper-gemm", "--ir"]) == 2
    assert capsys.readouterr().err == "tilemem: give a plan file or --example, not both\n"
