"""A TMEM pool with phases that overflows names its busiest phase and the buffers in it.

Worked by hand: with phases (mainloop, epilogue), acc (384 columns) is live in the mainloop
only and b, c, d (256 + 256 + 128 = 640 columns, all 128 lanes) in the epilogue only, so the
epilogue alone needs 640 > 512 columns on every lane.
"""

from __future__ import annotations

import warnings

import pytest

import tilemem
from tilemem.errors import TMEMOverflowError


def _overflowing(widths_by_phase: dict[str, list[int]]):
    smem = tilemem.SMEMPool(target="sm_100a", phases=("mainloop", "epilogue"))
    tmem = tilemem.TMEMPool(smem, 512)
    for phase, widths in widths_by_phase.items():
        for i, width in enumerate(widths):
            tmem.alloc((128, width), "float32", live=phase, name=f"{phase}{i}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the residency warning of a 512-column pool
        smem.commit()
    return tmem


def test_overflow_names_the_peak_phase_and_its_buffers():
    tmem = _overflowing({"mainloop": [384], "epilogue": [256, 256, 128]})
    with pytest.raises(TMEMOverflowError) as info:
        tmem.commit()
    text = str(info.value)
    assert "need 640 columns" in text and "free 128 columns" in text
    assert (
        "peak phase 'epilogue': 640 columns live at once on one lane, in 3 buffers: "
        "epilogue0 (256 columns), epilogue1 (256 columns), epilogue2 (128 columns)"
    ) in text
    assert "mainloop0" not in text.split("peak phase")[1]
    assert not tmem.committed  # refused before any state changed


def test_the_peak_is_the_heavier_phase_even_when_it_comes_first():
    tmem = _overflowing({"mainloop": [256, 256, 64], "epilogue": [128]})
    with pytest.raises(TMEMOverflowError, match=r"peak phase 'mainloop': 576 columns"):
        tmem.commit()
