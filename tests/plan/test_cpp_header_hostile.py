"""Hostile plans for the C++ header: one that is written compiles and is right, one that is
wrong does not compile, and nothing a plan holds can inject C++.

Headers that should compile go into one translation unit (each in its own file and outer
namespace) and are compiled once with ``g++ -std=c++17 -fsyntax-only -Wall -Werror``;
headers that must fail go into another, compiled once, and each must fail with its own
static_assert message on its own file.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import warnings
from functools import cache
from pathlib import Path

import pytest
from test_serialize_hostile import BASES as JSON_BASES  # tests/plan is on sys.path

from tilemem import SMEMPool, TMEMPool
from tilemem.errors import PlanFileError, PoolStateError
from tilemem.examples import EXAMPLES
from tilemem.plan import MemoryPlan, PlanEntry, PoolPlan
from tilemem.plan.model import StageViews, TMEMAllocation

GXX = shutil.which("g++")
needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ is not installed")


def smem_entry(name: str, offset: int, length: int, **changes) -> PlanEntry:
    fields = dict(
        name=name,
        scope="shared.dyn",
        offset=offset,
        length=length,
        align=8,
        padding=0,
        dtype="uint64",
        shape=(max(1, length // 8),),
        layout="row-major",
    )
    return PlanEntry(**{**fields, **changes})


def smem_plan(*entries: PlanEntry, committed: int | None = None, **changes) -> MemoryPlan:
    high = max((e.end for e in entries), default=0)
    smem = PoolPlan(
        "smem", "shared.dyn", "bytes", entries, high, high if committed is None else committed
    )
    return dataclasses.replace(MemoryPlan((smem,)), **changes)


def tmem_plan(*entries: PlanEntry, stages=(), committed=512, name="tmem", **pool_changes):
    slot = smem_entry("tmem_addr", 0, 4, align=4, dtype="uint32", shape=(1,))
    smem = PoolPlan("smem", "shared.dyn", "bytes", (slot,), 4, 4)
    high = max((e.end for e in entries), default=0)
    tmem = PoolPlan(
        name,
        "tmem",
        "cols",
        entries,
        high,
        committed,
        allocation=TMEMAllocation(1, 0, 0, "tmem_addr", 0),
        stages=stages,
    )
    return MemoryPlan((smem, dataclasses.replace(tmem, **pool_changes)), target="sm_100a")


def tmem_entry(name: str, offset: int, cols: int, **changes) -> PlanEntry:
    fields = dict(
        name=name,
        scope="tmem",
        offset=offset,
        length=cols,
        align=1,
        padding=0,
        dtype="float32",
        shape=(128, cols),
        layout="datapath D",
        lanes=((0, 128),),
    )
    return PlanEntry(**{**fields, **changes})


# -- plans whose header must compile: the examples, pools with odd but legal choices -------


def _pools_plan(build) -> MemoryPlan:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TMEM residency advice
        return build()


def _legal_names() -> MemoryPlan:
    smem = SMEMPool(name="final", target="sm_100a")
    for name in ("offset", "bytes", "align", "stages", "Null", "unix_time", "bitand_", "main"):
        smem.alloc((4,), "uint32", name=name)
    tmem = TMEMPool(smem, 512, name="override")
    acc = tmem.alloc((128, 256), "float32", name="acc")
    tmem.stages(acc, 0, 128, 2)
    tmem.stages(acc, 0, 64, 4)  # acc_stages2
    tmem.alloc((128, 64), "float32", name="acc_stages3")  # no third view: a free name
    smem.commit()
    tmem.commit()
    return smem.plan()


def _two_tmem_pools() -> MemoryPlan:
    smem = SMEMPool(name="tmem", target="sm_100a")  # the default TMEM names move aside
    first, second = TMEMPool(smem, 256), TMEMPool(smem, 128)
    first.alloc((128, 256), "float32", name="acc")
    second.alloc((128, 128), "float32", name="acc2")
    smem.commit()
    first.commit()
    second.commit()
    assert (first.name, second.name) == ("tmem1", "tmem2")
    return smem.plan()


def _no_target_near_2_to_31() -> MemoryPlan:
    # the largest numbers a header writes: 2**31 - 1 in all, an offset + size of exactly that
    last = smem_entry("last", 2**31 - 17, 16, align=1, dtype="uint8", shape=(16,))
    return smem_plan(smem_entry("first", 0, 16, shape=(2,)), last, committed=2**31 - 1)


def _comment_strings() -> MemoryPlan:
    # strings that reach comments: each made comment-safe (no backslash, no trigraph)
    entries = [
        smem_entry(f"b{i}", 8 * i, 8, shape=(1,), dtype=dtype, layout=label)
        for i, (dtype, label) in enumerate(
            [
                ("uint64\\", "row-major"),
                ("uint64", "row-major\\"),
                ("uint64\n#error injected", "a\r\nb"),
                ("uint64", "??/"),
                ("uint64", "*/ /* \u00e9 \x00"),
            ]
        )
    ]
    return smem_plan(*entries)


def _unequal_stages_within() -> MemoryPlan:
    stages = (StageViews("acc", ((0, 64), (64, 192), (192, 512))),)
    return tmem_plan(tmem_entry("acc", 0, 512), stages=stages)


COMPILES = {
    **{f"example-{name}": (lambda e=e: e.build().plan()) for name, e in EXAMPLES.items()},
    "legal-names": _legal_names,
    "two-tmem-pools-default-names": _two_tmem_pools,
    "numbers-near-2-to-31": _no_target_near_2_to_31,
    "comment-strings": _comment_strings,
    "unequal-stages-within-512": _unequal_stages_within,
    # the plans the JSON campaign edits: accepted as they are, so their headers compile
    **{f"json-base-{name}": (lambda plan=plan: plan) for name, plan in JSON_BASES.items()},
}


@cache
def accepted_headers() -> dict[str, str]:
    return {
        key: _pools_plan(build).to_cpp_header(f"plan_{i}")
        for i, (key, build) in enumerate(COMPILES.items())
    }


def batch_compile(headers: dict[str, str], flags: tuple[str, ...], directory: Path):
    """Compile every header in one translation unit; {key: file name}, and the result."""
    files = {}
    for i, (key, text) in enumerate(headers.items()):
        (directory / f"h{i}.h").write_text(text)
        files[key] = f"h{i}.h"
    main = directory / "main.cpp"
    main.write_text("".join(f'#include "{f}"\n' for f in files.values()) + "int main() {}\n")
    command = [GXX, "-std=c++17", "-fsyntax-only", *flags, str(main)]
    print(f"compiling {len(files)} headers in one g++ run")
    return files, subprocess.run(command, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def compiled_ok(tmp_path_factory):
    directory = tmp_path_factory.mktemp("headers_ok")
    return batch_compile(accepted_headers(), ("-Wall", "-Werror"), directory)


@needs_gxx
@pytest.mark.parametrize("key", list(COMPILES))
def test_accepted_headers_compile(key, compiled_ok):
    files, result = compiled_ok
    mine = [line for line in result.stderr.splitlines() if f"/{files[key]}:" in line]
    assert not mine, "\n".join(mine)


@needs_gxx
def test_the_accepted_batch_compiles_without_a_warning(compiled_ok):
    _, result = compiled_ok
    assert result.returncode == 0, result.stderr[-3000:]


def test_comment_strings_are_spelled_safely():
    header = accepted_headers()["comment-strings"]
    assert "\\" not in header and "??" not in header
    # the newline did not end the comment: '#error' stays inside it
    assert [line for line in header.splitlines() if "#error" in line] == [
        "// b2: uint64_#error injected[1], a__b"
    ]
    comments = [line for line in header.splitlines() if re.match(r"// b\d:", line)]
    # each disallowed character (backslash, '?', newline, CR, non-ASCII, NUL) became '_'
    assert comments == [
        "// b0: uint64_[1], row-major",
        "// b1: uint64[1], row-major_",
        "// b2: uint64_#error injected[1], a__b",
        "// b3: uint64[1], __/",
        "// b4: uint64[1], */ /* _ _",
    ]


def test_header_numbers_of_the_largest_plan():
    header = accepted_headers()["numbers-near-2-to-31"]
    assert "constexpr unsigned committed_bytes = 2147483647;" in header  # 2**31 - 1
    assert "constexpr unsigned offset = 2147483631;" in header  # 2**31 - 17


def test_legal_names_keep_their_spelling():
    header = accepted_headers()["legal-names"]
    for name in ("final", "override", "offset", "Null", "bitand_", "acc_stages2", "acc_stages3"):
        assert f"namespace {name} {{" in header


# -- plans whose header must not compile ---------------------------------------------------


def _edit(plan: MemoryPlan, pool: int, buffer: str | None = None, **changes) -> MemoryPlan:
    pools = list(plan.pools)
    if buffer is None:
        pools[pool] = dataclasses.replace(pools[pool], **changes)
    else:
        entries = tuple(
            dataclasses.replace(e, **changes) if e.name == buffer else e
            for e in pools[pool].entries
        )
        pools[pool] = dataclasses.replace(pools[pool], entries=entries)
    return dataclasses.replace(plan, pools=tuple(pools))


def _hopper() -> MemoryPlan:
    return EXAMPLES["hopper-gemm"].build().plan()


def _blackwell() -> MemoryPlan:
    return EXAMPLES["blackwell-gemm"].build().plan()


BROKEN = {
    # hopper-gemm: B (bf16, 128B swizzle) at 65536; full_bar (uint64) after the tiles
    "swizzle-off-period": (
        lambda: _edit(_hopper(), 0, "B", offset=65536 + 512),
        "B: a swizzled buffer starts on its swizzle period",
    ),
    "offset-off-align": (
        lambda: _edit(_hopper(), 0, "full_bar", offset=_hopper().entry("full_bar").offset + 4),
        "full_bar: offset breaks its alignment",
    ),
    "ends-beyond-committed": (
        lambda: _edit(_hopper(), 0, "empty_bar", length=64),
        "empty_bar: ends beyond the committed bytes",
    ),
    "committed-below-high-water": (
        lambda: _edit(_hopper(), 0, committed=_hopper().smem.high_water - 16),
        "smem: committed below high-water",
    ),
    "beyond-the-target": (
        lambda: _edit(_hopper(), 0, committed=232448 + 1024),  # sm_90a: 227 KiB per block
        "smem: more dynamic shared memory than sm_90a gives a block",
    ),
    "tmem-columns-beyond": (
        lambda: _edit(_blackwell(), 1, "acc", offset=8),
        "acc: columns beyond total_cols",
    ),
    "tmem-not-a-power-of-two": (
        lambda: _edit(_blackwell(), 1, committed=384),
        "tmem: tcgen05.alloc takes a power of two of columns in [32, 512]",
    ),
    "tmem-high-water-beyond": (
        lambda: _edit(_blackwell(), 1, committed=256),
        "tmem: buffers beyond total_cols",
    ),
    "two-pools-beyond-512": (
        lambda: dataclasses.replace(
            _blackwell(),
            pools=(
                *_blackwell().pools,
                dataclasses.replace(_blackwell().tmem[0], name="tmem2", entries=(), stages=()),
            ),
        ),
        "the TMEM pools of one CTA need more than its 512 columns",
    ),
    "unequal-stages-past-512": (
        lambda: tmem_plan(
            tmem_entry("acc", 0, 512),
            stages=(StageViews("acc", ((0, 64), (64, 600))),),  # widths 64 and 536
        ),
        "acc: a stage reaches beyond total_cols",
    ),
    "equal-stages-past-256": (
        lambda: tmem_plan(
            tmem_entry("acc", 0, 256),
            stages=(StageViews("acc", ((0, 128), (128, 256), (256, 384))),),
            committed=256,
        ),
        "acc: a stage reaches beyond total_cols",
    ),
}


@pytest.fixture(scope="module")
def compiled_broken(tmp_path_factory):
    directory = tmp_path_factory.mktemp("headers_broken")
    headers = {
        key: build().to_cpp_header(f"broken_{i}")
        for i, (key, (build, _)) in enumerate(BROKEN.items())
    }
    return batch_compile(headers, (), directory)


@needs_gxx
@pytest.mark.parametrize("key", list(BROKEN))
def test_a_wrong_header_does_not_compile(key, compiled_broken):
    files, result = compiled_broken
    assert result.returncode != 0
    errors = [
        line for line in result.stderr.splitlines() if f"{files[key]}:" in line and "error" in line
    ]
    assert errors and all("static assertion failed" in e for e in errors), errors
    assert any(BROKEN[key][1] in e for e in errors), errors


# -- plans no header is written for --------------------------------------------------------

REFUSED = [
    (
        "offset-2-to-the-32-plus-8",
        lambda: smem_plan(smem_entry("a", 2**32 + 8, 8)),
        PlanFileError,
        ["smem committed = 4294967312", "32-bit"],
    ),
    (
        "committed-2-to-the-31",
        lambda: smem_plan(smem_entry("a", 0, 8), committed=2**31),
        PlanFileError,
        ["2147483648 does not fit", "0..2147483647"],
    ),
    (
        "negative-offset",
        lambda: smem_plan(smem_entry("a", -8, 16)),
        PlanFileError,
        ["a offset = -8 does not fit"],
    ),
    (
        "float-length",
        lambda: smem_plan(smem_entry("a", 0, 8.0)),
        PlanFileError,
        ["8.0 does not fit"],
    ),
    (
        "keyword-buffer",
        lambda: smem_plan(smem_entry("bitand", 0, 8)),
        PlanFileError,
        ["'bitand' is a C++ or Python keyword"],
    ),
    (
        "macro-buffer",
        lambda: smem_plan(smem_entry("NULL", 0, 8)),
        PlanFileError,
        ["'NULL' is a macro"],
    ),
    (
        "newline-buffer",
        lambda: smem_plan(smem_entry("a\nb", 0, 8)),
        PlanFileError,
        ["is not an identifier"],
    ),
    (
        "pool-constant-buffer",
        lambda: smem_plan(smem_entry("committed_bytes", 0, 8)),
        PlanFileError,
        ["'committed_bytes' has the name of a pool constant"],
    ),
    (
        "two-buffers-one-name",
        lambda: smem_plan(smem_entry("a", 0, 8), smem_entry("a", 8, 8)),
        PlanFileError,
        ["would define 'a' twice"],
    ),
    (
        "smem-and-tmem-pool-one-name",
        lambda: tmem_plan(tmem_entry("acc", 0, 64), name="smem"),
        PlanFileError,
        ["two pools are named 'smem'"],
    ),
    (
        "buffer-named-like-stage-views",
        lambda: tmem_plan(
            tmem_entry("acc", 0, 128),
            tmem_entry("acc_stages", 128, 64),
            stages=(StageViews("acc", ((0, 64), (64, 128))),),
        ),
        PlanFileError,
        ["would define 'acc_stages' twice"],
    ),
    (
        "buffer-named-like-second-stage-views",
        lambda: tmem_plan(
            tmem_entry("acc", 0, 128),
            tmem_entry("acc_stages2", 128, 64),
            stages=(StageViews("acc", ((0, 64),)), StageViews("acc", ((64, 128),))),
        ),
        PlanFileError,
        ["would define 'acc_stages2' twice"],
    ),
    (
        "stage-views-over-a-bad-name",
        lambda: tmem_plan(tmem_entry("acc", 0, 64), stages=(StageViews("a-b", ((0, 64),)),)),
        PlanFileError,
        ["'a-b' is not an identifier"],
    ),
    (
        "slot-with-a-newline",
        lambda: tmem_plan(
            tmem_entry("acc", 0, 64), allocation=TMEMAllocation(1, 0, 0, "x\n#define y", 0)
        ),
        PlanFileError,
        ["address slot 'x\\n#define y' is not an identifier"],
    ),
    (
        "slot-without-offset",
        lambda: tmem_plan(tmem_entry("acc", 0, 64), allocation=TMEMAllocation(1, 0, 0, "s", None)),
        PlanFileError,
        ["address slot 's' has no offset yet"],
    ),
    (
        "target-with-a-newline",
        lambda: smem_plan(smem_entry("a", 0, 8), target="sm_90a\n#define x"),
        PlanFileError,
        ["the plan's target: unknown target"],
    ),
    (
        "uncommitted-smem",
        lambda: _edit(smem_plan(smem_entry("a", 0, 8)), 0, committed=None),
        PoolStateError,
        ["pool 'smem' is not committed"],
    ),
]


def _uncommitted_tmem(total_cols) -> MemoryPlan:
    smem = SMEMPool(target="sm_100a")
    tmem = TMEMPool(smem, total_cols)
    tmem.alloc((128, 64), "float32", name="acc")
    smem.commit()  # the SMEM pool is committed, the TMEM pool is not
    return smem.plan()


REFUSED += [
    (
        f"uncommitted-tmem-{cols}",
        lambda cols=cols: _uncommitted_tmem(cols),
        PoolStateError,
        ["pool 'tmem' is not committed"],
    )
    for cols in (512, 64, "auto")
]


@pytest.mark.parametrize(
    ("build", "error", "words"), [pytest.param(*case[1:], id=case[0]) for case in REFUSED]
)
def test_a_plan_no_header_can_spell_is_refused(build, error, words):
    plan = build()
    with pytest.raises(error) as info:
        plan.to_cpp_header()
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize("namespace", ["xor_eq", "compl", "NULL", "a-b", "x\n", "_Plan", "a__b"])
def test_the_outer_namespace_is_a_safe_identifier(namespace):
    with pytest.raises(PlanFileError, match="namespace"):
        _hopper().to_cpp_header(namespace)


def test_an_uncommitted_tmem_pool_has_no_committed_size():
    plan = _uncommitted_tmem(512)
    assert plan.tmem[0].committed is None  # 512 would be exported as if allocated
    assert plan.tmem[0].used == 64  # until commit, the pool's extent is its high-water mark
