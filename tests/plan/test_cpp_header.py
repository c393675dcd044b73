"""The plan as a C++ header: its numbers are the plan's, it compiles as plain C++17, and its
static_asserts refuse a plan that breaks a hardware rule."""

import dataclasses
import re
import shutil
import subprocess

import pytest

from tilemem import SMEMPool
from tilemem.errors import AllocationError, PlanFileError, PoolStateError
from tilemem.examples import EXAMPLES

GXX = shutil.which("g++")


def gxx(source, *flags):
    command = [GXX, "-std=c++17", "-fsyntax-only", *flags, str(source)]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def constants(header: str, namespace: str) -> dict[str, int]:
    """{name: value} of the constexpr lines inside ``namespace X { ... }`` (first match)."""
    body = header.split(f"namespace {namespace} {{", 1)[1].split(f"}}  // namespace {namespace}")[0]
    return {m[0]: int(m[1]) for m in re.findall(r"constexpr unsigned (\w+) = (\d+);", body)}


def test_smem_numbers_are_the_plans():
    plan = EXAMPLES["hopper-gemm"].build().plan()
    header = plan.to_cpp_header("hopper_gemm")
    b = constants(header, "B")
    # B: 4 x 256 x 64 bf16 = 131072 bytes after A's 65536; 128B swizzle repeats every 1024 bytes
    assert b == {
        "offset": 65536,
        "bytes": 131072,
        "align": 1024,
        "swizzle_mode": 3,
        "swizzle_bytes": 128,
        "swizzle_period": 1024,
    }
    assert constants(header, "empty_bar")["offset"] == 196640  # C is packed over A
    smem = constants(header, "smem")
    assert smem["committed_bytes"] == 196672
    assert smem["target_max_bytes"] == 227 * 1024  # sm_90a opt-in maximum per block


def test_tmem_numbers_and_stage_views():
    header = EXAMPLES["blackwell-gemm"].build().plan().to_cpp_header()
    tmem = constants(header, "tmem")
    assert (tmem["total_cols"], tmem["cta_group"], tmem["alloc_warp"]) == (512, 1, 1)
    assert tmem["slot_offset"] == 196704
    acc = constants(header, "acc")
    assert (acc["col_offset"], acc["cols"], acc["lane_first"], acc["lane_end"]) == (0, 512, 0, 128)
    stages = constants(header, "acc_stages")
    assert (stages["stages"], stages["first_col"], stages["stride_cols"], stages["cols"]) == (
        2,
        0,
        256,
        256,
    )
    assert stages["stage1_col_offset"] == 256


def test_uncommitted_pool_has_no_header():
    smem = SMEMPool()
    smem.alloc((4,), "uint64", name="bar")
    with pytest.raises(PoolStateError, match="'smem' is not committed"):
        smem.plan().to_cpp_header()


def test_namespace_must_be_a_cpp_identifier():
    plan = EXAMPLES["hopper-gemm"].build().plan()
    with pytest.raises(PlanFileError, match="'hopper-gemm' is not an identifier"):
        plan.to_cpp_header("hopper-gemm")
    with pytest.raises(PlanFileError, match="keyword"):
        plan.to_cpp_header("namespace")


def test_buffer_named_like_a_pool_constant_is_refused():
    smem = SMEMPool()
    with pytest.raises(AllocationError, match="'high_water' is the name of a pool constant"):
        smem.alloc((4,), "uint64", name="high_water")  # refused when given
    smem.alloc((4,), "uint64", name="bar")
    smem.commit()
    plan = smem.plan()
    bar = dataclasses.replace(plan.pools[0].entries[0], name="high_water")  # edited by hand
    plan = dataclasses.replace(plan, pools=(dataclasses.replace(plan.pools[0], entries=(bar,)),))
    with pytest.raises(PlanFileError, match="'high_water' has the name of a pool constant"):
        plan.to_cpp_header()


@pytest.mark.skipif(GXX is None, reason="g++ is not installed")
@pytest.mark.parametrize("name", list(EXAMPLES))
def test_header_compiles_as_plain_cpp17(name, tmp_path):
    (tmp_path / "plan.h").write_text(EXAMPLES[name].build().plan().to_cpp_header("plan"))
    source = tmp_path / "use.cpp"
    source.write_text(
        '#include "plan.h"\nint main() { return plan::smem::committed_bytes == 0; }\n'
    )
    result = gxx(source, "-Wall", "-Werror")
    assert result.returncode == 0, result.stderr


def _misplaced(plan, name, **changes):
    pools = []
    for pool in plan.pools:
        entries = tuple(
            dataclasses.replace(e, **changes) if e.name == name else e for e in pool.entries
        )
        pools.append(dataclasses.replace(pool, entries=entries))
    return dataclasses.replace(plan, pools=tuple(pools))


@pytest.mark.skipif(GXX is None, reason="g++ is not installed")
@pytest.mark.parametrize(
    ("example", "buffer", "changes", "message"),
    [
        ("hopper-gemm", "B", {"offset": 65536 + 512}, "B: a swizzled buffer starts on its swizzle"),
        ("hopper-gemm", "full_bar", {"offset": 212996}, "full_bar: offset breaks its alignment"),
        ("hopper-gemm", "empty_bar", {"length": 64}, "empty_bar: ends beyond the committed bytes"),
        ("blackwell-gemm", "acc", {"offset": 8}, "acc: columns beyond total_cols"),
    ],
)
def test_static_asserts_refuse_a_broken_plan(example, buffer, changes, message, tmp_path):
    # plans are data: one edited by hand must not compile into a kernel
    plan = _misplaced(EXAMPLES[example].build().plan(), buffer, **changes)
    source = tmp_path / "use.cpp"
    source.write_text(plan.to_cpp_header("plan"))
    result = gxx(source)
    assert result.returncode != 0 and message in result.stderr


@pytest.mark.skipif(GXX is None, reason="g++ is not installed")
def test_static_assert_refuses_two_tmem_pools_beyond_512_columns(tmp_path):
    # tilemem refuses this at commit; a plan edited by hand meets the header's assert instead
    plan = EXAMPLES["blackwell-gemm"].build().plan()
    second = dataclasses.replace(plan.tmem[0], name="tmem2", entries=(), stages=())
    source = tmp_path / "use.cpp"
    source.write_text(dataclasses.replace(plan, pools=(*plan.pools, second)).to_cpp_header())
    assert "the TMEM pools of one CTA need more than its 512 columns" in gxx(source).stderr
