"""The hardware-oracle kernels of ``tilemem verify`` build and compile everywhere (CI has no
GPU)."""

import pytest

from tilemem.verify import MODES, all_checks, tma_load_kernel, tma_store_kernel, wgmma_kernel


@pytest.mark.parametrize("mode", MODES)
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
    assert len(names) == 72
    assert sum(n.startswith("wgmma") for n in names) == 12
    assert all(
        any(n.startswith(f"tma_load {m} {e}B") for n in names) for m in MODES for e in (1, 2, 4)
    )
