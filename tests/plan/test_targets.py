"""Target table against docs/HARDWARE-RULES.md (CUDA C++ Programming Guide, compute capability
tables)."""

import pytest

from tilemem import SMEMPool
from tilemem.errors import TargetError
from tilemem.plan import TARGETS, get_target

KB = 1024
# (SMEM per SM, opt-in max dynamic SMEM per block, TMEM columns) from docs/HARDWARE-RULES.md
TABLE = {
    "sm_80": (164 * KB, 166_912, 0),
    "sm_86": (100 * KB, 101_376, 0),
    "sm_89": (100 * KB, 101_376, 0),
    "sm_90a": (228 * KB, 232_448, 0),
    "sm_100a": (228 * KB, 232_448, 512),
    "sm_120": (100 * KB, 101_376, 0),
}


@pytest.mark.parametrize("name", list(TABLE))
def test_capacities_match_the_hardware_table(name):
    t = get_target(name)
    assert (t.smem_per_sm, t.max_smem_per_block, t.tmem_cols) == TABLE[name]
    assert t.reserved_smem_per_block == 1024 and t.max_threads_per_block == 1024


def test_instructions_per_target():
    assert get_target("sm_90a").supports("wgmma") and not get_target("sm_90").supports("wgmma")
    assert get_target("sm_100a").supports("tcgen05") and not get_target("sm_100a").supports("wgmma")
    assert not get_target("sm_80").supports("tma") and get_target("sm_120").supports("tma")
    assert not get_target("sm_120").has_tmem


def test_require_names_the_targets_that_have_it():
    with pytest.raises(
        TargetError, match="tcgen05 does not exist on sm_90a; it needs one of: sm_100a"
    ):
        get_target("sm_90a").require("tcgen05")


def test_unknown_target_lists_the_known():
    with pytest.raises(TargetError) as exc:
        SMEMPool(target="sm_75")
    assert "sm_75" in str(exc.value) and "sm_90a" in str(exc.value)
    assert set(TABLE) <= set(TARGETS)
