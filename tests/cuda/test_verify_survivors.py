"""``verify.py`` pinned where mutation testing found no test that notices a change: the
default seed of the wgmma check. The checks run only on a GPU; here torch is a stand-in that
records the seed the check's generator is given, and stops the check there."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tilemem import verify


class _Stop(Exception):
    pass


def test_the_wgmma_check_seeds_its_data_with_2(monkeypatch):
    # the load, store and wgmma checks draw their data from seeds 0, 1 and 2 by default
    # (test_verify_mutants pins 0 and 1), so no two of them see the same bytes
    seeds = []

    class Generator:
        def __init__(self, device=None):
            assert device == "cuda"

        def manual_seed(self, seed):
            seeds.append(seed)
            raise _Stop

    monkeypatch.setattr(verify, "_torch", lambda: SimpleNamespace(Generator=Generator))
    print("building the wgmma check kernel (128B, n = 64)")
    with pytest.raises(_Stop):
        verify.check_wgmma("128B", 64)
    assert seeds == [2]
