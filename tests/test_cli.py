import json
import subprocess
import sys

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
    assert out.startswith("hopper-gemm") and "full_bar" in out and "high-water 213056 bytes" in out


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
