"""scripts/mutate.py --skip-verdicts: which mutants of a tiny module a fake log and a fake
equivalents file leave to run. The module and every log line are written here by hand; the
expected list is read off them (a logged killed/timeout line and a judged equivalent have a
verdict; a logged survived or uncovered line, a survivors file's SURVIVED line, a line without
a column, another column or module do not; a repeated line's copies are told apart by line
number)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "mutate.py"

FAKE = "x = 1 + 2\ny = x * 3\nx = 1 + 2\nw = y > 4\n"  # line 3 repeats line 1

LOG = """\
src/fake.py: 16 mutants, tests tests/test_fake.py
  [1/16] killed   src/fake.py:1: `+` -> `-` @ col 4+5  (x = 1 + 2)  1.2 s
  [2/16] timeout  src/fake.py:2: `*` -> `//` @ col 4+5  (y = x * 3)  31.0 s
  [3/16] survived src/fake.py:2: `3` -> `4` @ col 8+1  (y = x * 3)  1.0 s
  [4/16] uncovered src/fake.py:2: `3` -> `2` @ col 8+1  (y = x * 3)  0.1 s
  [5/16] killed   src/fake.py:3: `2` -> `3` @ col 8+1  (x = 1 + 2)  1.1 s
  [6/16] killed   src/fake.py:4: `>` -> `>=`  (w = y > 4)  0.9 s
  [7/16] killed   src/fake.py:4: `4` -> `5` @ col 7+1  (w = y > 4)  0.9 s
  [8/16] killed   src/other.py:4: `4` -> `3` @ col 8+1  (w = y > 4)  0.9 s
  [9/16] killed   src/fake.py:9: `1` -> `2` @ col 4+1  (x = 1 + 2)  1.0 s
"""
# 1: both copies of line 1/3 have this mutant, and line 1 is the logged one: only line 1's
#    copy is skipped. 2: timeout is a kill. 3, 4: survived / uncovered are no verdicts. 5: the
#    line 3 copy only. 6: no column. 7: another column. 8: another module. 9: a logged line
#    number that holds no copy now (edited above): neither copy is skipped. Line 4's `4` -> `3`
#    is killed only in another module: it runs.

SURVIVORS = "src/fake.py:4: `4` -> `3` @ col 8+1  (w = y > 4)  SURVIVED\n"
EQUIVALENT = "src/fake.py | x = 1 + 2 | `1` -> `0` @ col 4+1 | both copies of line 1 and 3\n"


@pytest.fixture
def mutate(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("mutate_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look the module up by name
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "ROOT", tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "fake.py").write_text(FAKE)
    (tmp_path / "run.log").write_text(LOG)
    (tmp_path / "survivors.txt").write_text(SURVIVORS)
    (tmp_path / "equivalent.txt").write_text(EQUIVALENT)
    yield module
    del sys.modules[spec.name]


def _listed(mutate, tmp_path, capsys, *logs: str) -> list[str]:
    argv = ["--module", "src/fake.py", "--list", "--equivalent", str(tmp_path / "equivalent.txt")]
    assert mutate.main([*argv, "--skip-verdicts", *(str(tmp_path / f) for f in logs)]) == 0
    return capsys.readouterr().out.splitlines()


def test_skips_exactly_the_mutants_with_a_verdict(mutate, tmp_path, capsys):
    out = _listed(mutate, tmp_path, capsys, "run.log")
    assert out == [
        "src/fake.py:1: `1` -> `2` @ col 4+1  (x = 1 + 2)",
        "src/fake.py:1: `2` -> `3` @ col 8+1  (x = 1 + 2)",
        "src/fake.py:1: `2` -> `1` @ col 8+1  (x = 1 + 2)",
        "src/fake.py:2: `3` -> `4` @ col 8+1  (y = x * 3)",
        "src/fake.py:2: `3` -> `2` @ col 8+1  (y = x * 3)",
        "src/fake.py:3: `+` -> `-` @ col 4+5  (x = 1 + 2)",
        "src/fake.py:3: `1` -> `2` @ col 4+1  (x = 1 + 2)",
        "src/fake.py:3: `2` -> `1` @ col 8+1  (x = 1 + 2)",
        "src/fake.py:4: `>` -> `>=` @ col 4+5  (w = y > 4)",
        "src/fake.py:4: `4` -> `5` @ col 8+1  (w = y > 4)",
        "src/fake.py:4: `4` -> `3` @ col 8+1  (w = y > 4)",
        "--skip-verdicts: src/fake.py: 11 to run of 16 mutants (3 with a verdict in the logs, "
        "2 judged equivalent)",
    ]


def test_a_survivors_file_gives_no_verdict(mutate, tmp_path, capsys):
    # SURVIVED (as a log may quote a survivors file of a run with only some of the tests)
    out = _listed(mutate, tmp_path, capsys, "run.log", "survivors.txt")
    assert "src/fake.py:4: `4` -> `3` @ col 8+1  (w = y > 4)" in out
    assert out[-1].startswith("--skip-verdicts: src/fake.py: 11 to run of 16 mutants")


def test_an_unrepeated_line_matches_at_any_line_number(mutate, tmp_path, capsys):
    # the module edited above line 2: its kill logged at line 12 still counts (one copy)
    (tmp_path / "moved.log").write_text(
        "  [1/1] killed   src/fake.py:12: `3` -> `4` @ col 8+1  (y = x * 3)  1.0 s\n"
    )
    out = _listed(mutate, tmp_path, capsys, "moved.log")
    assert "src/fake.py:2: `3` -> `4` @ col 8+1  (y = x * 3)" not in out
    assert out[-1].startswith("--skip-verdicts: src/fake.py: 13 to run of 16 mutants (1 with")
