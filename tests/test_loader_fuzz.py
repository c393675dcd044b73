"""Fuzzing the one loader, ``tilemem.load_plan``, with mutations of the shipped plan files.

TOML: lines of examples/*.toml dropped, duplicated, swapped, keys renamed, values retyped
(extreme integers, floats, odd strings, arrays, inline tables, dates), tables inserted.
JSON: the same plans' ``--json`` form with keys dropped or renamed, values retyped, array
items duplicated. Each document is either refused with a tilemem error that names the file
and a line inside it (TOML) or the file and the path of the bad value (JSON), or gives a
plan that round-trips through JSON; a sample of the accepted plans' C++ headers is then
compiled with g++ in one translation unit.

TILEMEM_LOADER_DOCS (default 5000) sets how many documents a run tries, split between the
two forms.
"""

import contextlib
import json
import os
import random
import re
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from tilemem.errors import TilememError
from tilemem.plan import MemoryPlan
from tilemem.planfile import load_plan

EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "examples"
EXAMPLE_TEXTS = [p.read_text() for p in sorted(EXAMPLES_DIR.glob("*.toml"))]
DOCS = int(os.environ.get("TILEMEM_LOADER_DOCS", "5000"))
TOML_DOCS = DOCS * 3 // 5
JSON_DOCS = DOCS - TOML_DOCS
HEADER_SAMPLE = 40  # accepted plans whose headers are compiled

KEYS = sorted(
    {m.group(1) for text in EXAMPLE_TEXTS for m in re.finditer(r"^(\w+)\s*=", text, re.M)}
    | {"alias_of", "offset", "tmem_addr", "slot_of", "move_base_to", "commit", "strides"}
)
HEADERS = ["[smem]", "[[smem.buffers]]", "[[tmem]]", "[[tmem.buffers]]", "[[tmem.stages]]"]
HEADERS += ["[smem.buffers]", "[tmem]", "[tmem.stages]", "[other]"]

ODD_STRINGS = [
    "",
    " ",
    "A",
    "acc",
    "tmem",
    "smem",
    "mainloop",
    "epilogue",
    "auto",
    "128B",
    "bitand",
    "NULL",
    "a-b",
    "a b",
    "\n",
    "a\\",
    "x\ny",
    "*/",
    '"',
    "é",
    "\u202e",
    "x" * 300,
    "sm_90a",
    "sm_100a",
    "float32",
    "bfloat16",
    "D",
]
EXTREME_INTS = [0, 1, -1, 2, 3, 7, 8, 32, 127, 128, 511, 512, 513, 1024, 4096]
EXTREME_INTS += [2**31, 2**32 + 8, 2**40, 2**63 - 1, -(2**63), 10**30]


def _toml_string(s: str) -> str:
    return json.dumps(s)  # a JSON string with ASCII escapes is a TOML basic string


# Values drawn from fixed pools (cheap to draw, so the time goes to the loader)
JSON_SCALARS = [*EXTREME_INTS, 0.0, -0.0, 0.5, 2.0, 1e308, True, False, None, *ODD_STRINGS]
JSON_VALUES = [*JSON_SCALARS, [], {}, [0], [-1], [1, 2], [[0, 32]], ["A"], {"a": 1}, [None], [{}]]
TOML_SCALARS = [str(v) for v in EXTREME_INTS if -(2**63) <= v < 2**63]
TOML_SCALARS += ["2.0", "0.5", "nan", "inf", "-inf", "1e308", "-0.0", "true", "false"]
TOML_SCALARS += [_toml_string(s) for s in ODD_STRINGS]
TOML_SCALARS += ["1979-05-27", "07:32:00", "1979-05-27T07:32:00Z", "99999999999999999999"]
TOML_VALUES = [*TOML_SCALARS, "[]", "[0]", "[-1]", "[1, 2.0]", '["mainloop"]', "[[1], [2]]"]
TOML_VALUES += ["[128, 0]", "[2, 128, 64]", "[0, 128, 64]", '["A", 1]', "{}", "{ a = 1 }"]
TOML_VALUES += ["{ mainloop = false, epilogue = true }", "[{ name = 'x' }]", "[" * 40 + "]" * 40]
ASCII = "abcdefghijklmnopqrstuvwxyz_0123456789 -\\\n\"'\t"


def _random_text(rng: random.Random) -> str:
    return "".join(rng.choice(ASCII) for _ in range(rng.randint(0, 6)))


def toml_value(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.7:
        return rng.choice(TOML_VALUES)
    if roll < 0.85:
        return str(rng.randint(-(2**63), 2**63 - 1))
    return _toml_string(_random_text(rng))


def json_value(rng: random.Random) -> object:
    roll = rng.random()
    if roll < 0.7:
        return json.loads(json.dumps(rng.choice(JSON_VALUES)))  # a copy: it may be mutated
    if roll < 0.85:
        return rng.randint(-(2**70), 2**70)
    return _random_text(rng)


def mutate_toml(rng: random.Random) -> str:
    """One of the shipped plan files with one to three line mutations."""
    lines = rng.choice(EXAMPLE_TEXTS).splitlines()
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        how = rng.choice(["drop", "dup", "swap", "rename", "retype", "insert", "table"])
        key, eq, value = lines[i].partition("=")
        if how == "drop":
            del lines[i]
        elif how == "dup":
            lines.insert(i, lines[i])
        elif how == "swap":
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif how == "rename" and eq:
            new = rng.choice(KEYS) if rng.random() < 0.7 else _random_text(rng).strip()
            lines[i] = f"{new or 'k'} ={value}"
        elif how == "retype" and eq:
            lines[i] = f"{key.strip()} = {toml_value(rng)}"
        elif how == "insert":
            lines.insert(i, f"{rng.choice(KEYS)} = {toml_value(rng)}")
        else:
            lines.insert(i, rng.choice(HEADERS))
        if not lines:
            lines = ["# empty"]
    return "\n".join(lines) + "\n"


def mutate_json(rng: random.Random, bases: list[dict]) -> object:
    """One of the shipped plans' JSON with one to three mutations at random depths."""
    doc: object = json.loads(json.dumps(rng.choice(bases)))
    for _ in range(rng.randint(1, 3)):
        parent: Any = None
        key: Any = None
        node = doc
        while isinstance(node, (dict, list)) and node and rng.random() < 0.75:
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            parent, key = node, rng.choice(keys)
            node = node[key]
        how = rng.choice(["drop", "rename", "retype", "dup", "wrap"])
        if parent is None:
            doc = json_value(rng) if how == "retype" else doc
        elif how == "drop":
            del parent[key]
        elif how == "rename" and isinstance(parent, dict):
            parent[rng.choice([*KEYS, "x", "", "Entries"])] = parent.pop(key)
        elif how == "dup" and isinstance(parent, list):
            parent.insert(key, json.loads(json.dumps(parent[key])))
        elif how == "wrap":
            parent[key] = [parent[key]]
        else:
            parent[key] = json_value(rng)
    return doc


# Hypothesis draws a batch of seeds per example; each seed's document is made by the
# mutation functions above (a draw per document costs far less than a draw per choice)
BATCH = 10
seed_batches = st.lists(st.integers(0, 2**32 - 1), min_size=BATCH, max_size=BATCH)
FUZZ_SETTINGS = settings(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _round_trips(plan: MemoryPlan) -> None:
    data = json.loads(json.dumps(plan.to_dict()))
    assert MemoryPlan.from_dict(data) == plan


ACCEPTED: dict[str, str] = {}  # header text -> where it came from


def _keep_header(plan: MemoryPlan, origin: str) -> None:
    if len(ACCEPTED) < HEADER_SAMPLE * 4:
        # a plan the header writer refuses says so: not a header that lies
        with contextlib.suppress(TilememError):
            ACCEPTED.setdefault(plan.to_cpp_header(namespace="fuzz"), origin)


def _check_toml(path: Path, text: str) -> None:
    path.write_text(text)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # TMEM residency advice is not an error
            plan = load_plan(path)
    except TilememError as exc:
        message = str(exc)
        match = re.match(rf"{re.escape(str(path))}:(\d+): ", message)
        assert match, f"no file:line in {message!r} for\n{text}"
        assert 1 <= int(match.group(1)) <= max(1, len(text.splitlines())), message
    else:
        _round_trips(plan)
        _keep_header(plan, text)


@pytest.fixture
def scratch(tmp_path):
    """A folder for the documents: in memory (/dev/shm) where there is one."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(prefix="tilemem-fuzz-", dir=shm))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_toml_mutations_are_refused_with_their_line_or_round_trip(scratch):
    path = scratch / "fuzz.toml"

    @settings(FUZZ_SETTINGS, max_examples=max(1, TOML_DOCS // BATCH))
    @given(seed_batches)
    def check(seeds):
        for seed in seeds:
            text = mutate_toml(random.Random(seed))
            note(f"seed {seed}:\n{text}")
            _check_toml(path, text)

    check()


JSON_BASES = []


def _json_bases(tmp_path: Path) -> list[dict]:
    if not JSON_BASES:
        for n, text in enumerate(EXAMPLE_TEXTS):
            path = tmp_path / f"base{n}.toml"
            path.write_text(text)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                JSON_BASES.append({"example": f"e{n}", **load_plan(path).to_dict()})
    return JSON_BASES


def _check_json(path: Path, doc: object) -> None:
    path.write_text(json.dumps(doc, indent=1))
    try:
        plan = load_plan(path)
    except TilememError as exc:
        message = str(exc)
        assert message.startswith(f"{path}: "), message
        assert re.match(rf"{re.escape(str(path))}: (plan\b|a plan|the plan)", message), message
    else:
        _round_trips(plan)
        _keep_header(plan, json.dumps(doc)[:2000])


def test_json_mutations_are_refused_with_their_path_or_round_trip(scratch):
    path = scratch / "fuzz.json"
    bases = _json_bases(scratch)

    @settings(FUZZ_SETTINGS, max_examples=max(1, JSON_DOCS // BATCH))
    @given(seed_batches)
    def check(seeds):
        for seed in seeds:
            doc = mutate_json(random.Random(seed), bases)
            note(f"seed {seed}: {json.dumps(doc)[:3000]}")
            _check_json(path, doc)

    check()


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_accepted_headers_compile_in_one_translation_unit(tmp_path):
    """The accepted plans of the two fuzz runs above (run alone: the shipped files), each
    header in a namespace of its own, compiled together by one g++ -fsyntax-only."""
    if not ACCEPTED:
        for n, text in enumerate(EXAMPLE_TEXTS):
            _check_toml(tmp_path / f"e{n}.toml", text)
    sample = list(ACCEPTED)[:HEADER_SAMPLE]
    units = []
    for n, header in enumerate(sample):
        (tmp_path / f"h{n}.h").write_text(header)
        units.append(f'namespace sample{n} {{\n#include "h{n}.h"\n}}\n')
    (tmp_path / "all.cpp").write_text("".join(units))
    print(f"compiling {len(sample)} accepted plan headers with g++ -fsyntax-only")
    out = subprocess.run(
        ["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Werror", str(tmp_path / "all.cpp")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr[:4000]
    assert len(sample) >= min(len(EXAMPLE_TEXTS), HEADER_SAMPLE)
