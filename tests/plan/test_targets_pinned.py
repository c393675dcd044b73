"""Every target's limits and instruction set, pinned field by field.

Shared memory from docs/HARDWARE-RULES.md's capacity table; threads and blocks per SM from the CUDA
C++ Programming Guide, "Technical Specifications per Compute Capability" (8.0: 2048 / 32,
8.6: 1536 / 16, 8.7: 1536 / 16, 8.9: 1536 / 24, 9.0 and 10.0: 2048 / 32, 12.0: 1536 / 32);
1024 threads per block and 1 KB reserved per block on all of them. TMEM: 512 columns on
sm_100-class SMs, reachable only from arch-specific sm_100a code (docs/HARDWARE-RULES.md).
Instructions per PTX ISA 9.0: wgmma and setmaxnreg need sm_90a (setmaxnreg also sm_100a), tcgen05
needs sm_100a; TMA, clusters and mbarrier tx-counts exist from sm_90 on.
"""

import pytest

from tilemem.errors import TargetError
from tilemem.plan import TARGETS, Target, get_target

KB = 1024
# name: (SMEM per SM, max SMEM per block, threads per SM, blocks per SM, TMEM columns)
LIMITS = {
    "sm_80": (164 * KB, 163 * KB, 2048, 32, 0),
    "sm_86": (100 * KB, 99 * KB, 1536, 16, 0),
    "sm_87": (164 * KB, 163 * KB, 1536, 16, 0),
    "sm_89": (100 * KB, 99 * KB, 1536, 24, 0),
    "sm_90": (228 * KB, 227 * KB, 2048, 32, 0),
    "sm_90a": (228 * KB, 227 * KB, 2048, 32, 0),
    "sm_100": (228 * KB, 227 * KB, 2048, 32, 512),
    "sm_100a": (228 * KB, 227 * KB, 2048, 32, 512),
    "sm_120": (100 * KB, 99 * KB, 1536, 32, 0),
}


def test_the_table_holds_exactly_these_targets():
    assert list(TARGETS) == list(LIMITS)


@pytest.mark.parametrize("name", list(LIMITS))
def test_limits(name):
    t = get_target(name)
    limits = (t.smem_per_sm, t.max_smem_per_block, t.max_threads_per_sm, t.max_blocks_per_sm)
    assert (*limits, t.tmem_cols) == LIMITS[name]
    assert (t.max_threads_per_block, t.reserved_smem_per_block) == (1024, 1024)
    assert t.arch == name


@pytest.mark.parametrize(
    ("name", "has_tmem"), [("sm_100a", True), ("sm_100", False), ("sm_90a", False)]
)
def test_only_arch_specific_blackwell_code_reaches_tmem(name, has_tmem):
    assert get_target(name).has_tmem is has_tmem


AMPERE = {"cp.async", "mbarrier", "ldmatrix", "mma.sync"}
HOPPER_BASE = AMPERE | {
    "cp.async.bulk",
    "tma",
    "cluster",
    "stmatrix",
    "elect.sync",
    "mbarrier.tx",
    "fence.proxy.async",
    "griddepcontrol",  # PTX ISA 9.0, griddepcontrol: PTX 7.8, sm_90 or higher
}
INSTRUCTIONS = {
    "sm_80": AMPERE,
    "sm_86": AMPERE,
    "sm_87": AMPERE,
    "sm_89": AMPERE,
    "sm_90": HOPPER_BASE,
    "sm_90a": HOPPER_BASE | {"wgmma", "setmaxnreg"},
    "sm_100": HOPPER_BASE,
    "sm_100a": HOPPER_BASE | {"tcgen05", "setmaxnreg"},
    "sm_120": HOPPER_BASE,
}


@pytest.mark.parametrize("name", list(INSTRUCTIONS))
def test_instruction_sets(name):
    t = get_target(name)
    assert set(t.instructions) == INSTRUCTIONS[name]
    for instruction in ("tcgen05", "wgmma", "tma", "cp.async"):
        assert t.supports(instruction) is (instruction in INSTRUCTIONS[name])


def test_a_default_target_has_no_tmem_and_no_instructions():
    t = Target("sm_x", 1, 1, 32, 1)
    assert (t.tmem_cols, t.instructions, t.has_tmem) == (0, frozenset(), False)
    assert (t.max_threads_per_block, t.reserved_smem_per_block) == (1024, 1024)


def test_require_passes_quietly_when_the_target_has_it():
    assert get_target("sm_100a").require("tcgen05") is None


def test_require_names_every_owner_and_suggests_the_last():
    with pytest.raises(TargetError) as exc:
        get_target("sm_80").require("setmaxnreg", "setmaxnreg.inc.sync.aligned.u32")
    assert str(exc.value) == (
        "setmaxnreg.inc.sync.aligned.u32 does not exist on sm_80; it needs one of: "
        "sm_90a, sm_100a; build for target='sm_100a'"
    )


def test_require_of_an_instruction_no_target_has():
    with pytest.raises(TargetError) as exc:
        get_target("sm_90a").require("teleport")
    assert str(exc.value) == "teleport does not exist on sm_90a; it needs one of: no known target"


def test_get_target_passes_a_target_through():
    custom = Target("sm_x", 1, 1, 32, 1)
    assert get_target(custom) is custom
    assert get_target("sm_90a") is TARGETS["sm_90a"]


@pytest.mark.parametrize("bad", ["sm_75", "SM_90A", 90, None])
def test_unknown_targets_are_refused_with_the_known_list(bad):
    with pytest.raises(TargetError) as exc:
        get_target(bad)
    assert str(exc.value) == (
        f"unknown target {bad!r}; known targets: sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a, "
        "sm_100, sm_100a, sm_120"
    )


@pytest.mark.parametrize(("tmem_cols", "has_tmem"), [(0, False), (1, True), (512, True)])
def test_tmem_needs_tensor_memory_on_the_sm_and_tcgen05(tmem_cols, has_tmem):
    # a target described by hand: any tensor memory at all (even one column) plus tcgen05 is
    # enough; tcgen05 alone, without the memory, is not
    target = Target(
        "sm_custom", 228 * KB, 227 * KB, 2048, 32, tmem_cols=tmem_cols, instructions={"tcgen05"}
    )
    assert target.has_tmem is has_tmem
