import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tilemem import __version__
from tilemem.cli import main
from tilemem.examples import EXAMPLES


def run(*args):
    return subprocess.run(
        [sys.executable, "-m", "tilemem.cli", *args], capture_output=True, text=True, check=False
    )


def test_version():
    out = run("--version")
    assert out.returncode == 0 and __version__ in out.stdout


def test_default_plan_is_the_hopper_gemm(capsys):
    assert main(["plan"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("hopper-gemm") and "full_bar" in out and "high-water 196672 bytes" in out


def test_list_names_every_example(capsys):
    assert main(["plan", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in EXAMPLES)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_each_example_prints_and_exports(name, capsys):
    assert main(["plan", "--example", name, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["example"] == name and data["pools"][0]["entries"]


def test_unknown_example_fails_with_the_choices(capsys):
    assert main(["plan", "--example", "nope"]) == 2
    assert "hopper-gemm" in capsys.readouterr().err


def test_plan_only_use_imports_no_ir_or_cuda():
    code = (
        "import sys, tilemem\n"
        "s = tilemem.SMEMPool(target='sm_100a'); t = tilemem.TMEMPool(s, 64); s.alloc_mma((64, "
        "64), 'bfloat16')\n"
        "s.commit(); t.commit(); s.plan().format()\n"
        "bad = [m for m in sys.modules if m.startswith(('tilemem.ir', 'tilemem.cuda', 'cuda', "
        "'tvm_tirx'))]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_verify_without_a_gpu_says_so_and_fails(capsys):
    from tilemem.cli import _gpu_name

    if _gpu_name() is not None:
        pytest.skip("a GPU is present: scripts/gpu_check.sh runs tilemem verify")
    assert main(["verify"]) == 1
    assert "no CUDA GPU found" in capsys.readouterr().err


def test_plan_into_a_closed_pipe_ends_without_a_traceback():
    # the reader goes away before tilemem writes: every write then fails with EPIPE
    proc = subprocess.Popen(
        [sys.executable, "-m", "tilemem.cli", "plan", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait() == 141  # 128 + SIGPIPE, as a shell reports for `cat` in the same place
    assert err == ""


@pytest.mark.parametrize("command", [["emit", "-e", "hopper-gemm"], ["plan"], ["plan", "--json"]])
def test_unwritable_output_is_a_one_line_error(command, tmp_path):
    target = tmp_path / "missing" / "out.txt"
    out = run(*command, "-o", str(target))
    assert out.returncode == 1
    assert out.stderr.splitlines() == [f"tilemem: cannot write {target}: No such file or directory"]


def test_output_file_is_replaced_atomically(tmp_path, monkeypatch, capsys):
    # a write that fails at the last step leaves the old file whole and no temporary behind
    import os

    target = tmp_path / "k.cu"
    target.write_text("previous contents\n")

    def refuse(src, dst):
        raise OSError(28, "No space left on device", dst)

    monkeypatch.setattr(os, "replace", refuse)
    assert main(["emit", "-e", "hopper-gemm", "-o", str(target)]) == 1
    assert target.read_text() == "previous contents\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.cu"]
    assert capsys.readouterr().err == f"tilemem: cannot write {target}: No space left on device\n"


def test_output_file_gets_the_whole_text(tmp_path, capsys):
    target = tmp_path / "plan.json"
    assert main(["plan", "--json", "-o", str(target)]) == 0
    assert json.loads(target.read_text())["example"] == "hopper-gemm"
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("options", [["--json"], ["--list"], ["-e", "nvfp4-gemm"], []])
def test_options_without_a_command_mean_plan(options):
    assert run(*options).stdout == run("plan", *options).stdout != ""


@pytest.mark.parametrize("command", [[], ["plan"], ["emit"], ["verify"]])
def test_help_is_plain_text(command):
    out = run(*command, "--help")
    assert out.returncode == 0 and out.stdout.startswith("usage: tilemem")
    assert "``" not in out.stdout and ":func:" not in out.stdout


def test_verify_without_cuda_bindings_names_the_missing_package(monkeypatch, capsys):
    # None in sys.modules makes `import cuda.bindings.driver` raise ImportError, as when absent
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", None)
    assert main(["verify"]) == 1
    err = capsys.readouterr().err
    assert "cuda-bindings not installed" in err and "pip install 'tilemem[cuda]'" in err
    assert "no CUDA GPU" not in err


def test_plan_writes_a_cpp_header(tmp_path, capsys):
    header = tmp_path / "plan.h"
    assert main(["plan", "-e", "blackwell-gemm", "--header", str(header)]) == 0
    text = header.read_text()
    assert "namespace blackwell_gemm {" in text and "constexpr unsigned total_cols = 512;" in text
    assert "blackwell-gemm" in capsys.readouterr().out  # the report still goes to stdout


def test_plan_writes_an_svg_picture(tmp_path):
    import xml.etree.ElementTree as ET

    picture = tmp_path / "plan.svg"
    plan_file = Path(__file__).resolve().parents[1] / "examples" / "attention-fwd.toml"
    assert main([str(plan_file), "--svg", str(picture), "-o", os.devnull]) == 0
    root = ET.parse(picture).getroot()
    names = {r.get("data-name") for r in root.iter("{http://www.w3.org/2000/svg}rect")}
    assert {"Q", "KV", "S0", "P1"} <= names


def test_json_holds_occupancy_and_advice_as_data(capsys):
    assert main(["plan", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    # hopper-gemm, 384 threads on sm_90a: 213056 + 1024 reserved bytes of 228 KiB per SM
    assert data["occupancy"]["ctas_per_sm"] == 1
    assert data["occupancy"]["binding"] == "shared memory"
    assert data["occupancy"]["limits"] == {"shared memory": 1, "threads": 5, "block slots": 32}
    assert data["advice"]["padding"] == 0 and data["advice"]["order"] == []
    assert "sections" not in data


def test_plan_file_and_example_together_is_a_usage_error(capsys):
    assert main(["plan", "x.toml", "-e", "hopper-gemm"]) == 2
    assert capsys.readouterr().err == "tilemem: give a plan file or --example, not both\n"


def test_a_json_plan_gives_back_the_same_report_and_header(tmp_path, capsys):
    saved = tmp_path / "nvfp4.json"
    assert main(["plan", "-e", "nvfp4-gemm", "--json", "-o", str(saved)]) == 0
    assert main(["plan", "-e", "nvfp4-gemm", "--header", str(tmp_path / "a.h")]) == 0
    first = capsys.readouterr().out
    assert main(["plan", str(saved), "--header", str(tmp_path / "b.h")]) == 0
    again = capsys.readouterr().out
    assert again.split("\n", 1)[1] == first.split("\n", 1)[1]  # all but the title line
    assert (tmp_path / "a.h").read_text() == (tmp_path / "b.h").read_text()


def test_a_broken_json_plan_is_a_one_line_error_with_its_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "schema": 1,\n  "pools": [\n}\n')
    assert main(["plan", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"tilemem: {bad}:4: not valid JSON") and err.count("\n") == 1
