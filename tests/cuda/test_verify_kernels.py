"""The hardware-oracle kernels of ``tilemem verify`` build and compile everywhere (CI has no
GPU)."""

import pytest

from tilemem.verify import (
    MODES,
    ROW_MAJOR,
    TMA_LAYOUTS,
    all_checks,
    tma_load_kernel,
    tma_store_kernel,
    wgmma_kernel,
)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.nvrtc
def test_oracle_kernels_compile(mode):
    row = (16 << MODES.index(mode)) // 2 if mode != "none" else 8
    load, tile = tma_load_kernel(mode, 2, (3, 32, 2 * row), pad=1500)
    assert tile.byte_offset == 2048 and load.compile()
    store, _ = tma_store_kernel(mode, 4, (2, 32, row))
    assert store.compile()
    mma, _a, _b = wgmma_kernel(mode, 128)
    assert "m64n128k16" in mma.source and mma.compile()


def test_the_full_check_list_covers_modes_sizes_and_n():
    names = [name for name, _ in all_checks()]
    # 5 buffer layouts x 3 element sizes x (3 load + 2 store shapes) + 4 modes x 3 wgmma N
    assert len(names) == 5 * 3 * 5 + 12
    assert sum(n.startswith("wgmma") for n in names) == 12
    assert all(
        any(n.startswith(f"tma_load {m} {e}B") for n in names)
        for m in TMA_LAYOUTS
        for e in (1, 2, 4)
    )


@pytest.mark.parametrize("esize", [1, 2, 4])
@pytest.mark.nvrtc
def test_row_major_oracle_kernels_issue_one_box_per_tile(esize):
    cols = 64 // esize  # 64-byte rows
    load, tile = tma_load_kernel(ROW_MAJOR, esize, (2, 16, cols))
    assert tile.byte_offset % 128 == 0
    # two stages, one box each (a box spans whole rows: docs/HARDWARE-RULES.md#tma)
    assert load.source.count("cp.async.bulk.tensor.2d") == 2 and load.compile()
    store, _ = tma_store_kernel(ROW_MAJOR, esize, (16, cols))
    assert store.source.count("cp.async.bulk.tensor.2d") == 1 and store.compile()
