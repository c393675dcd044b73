"""T.select, T.min and T.max in a kernel: the generated C++ and the simulator's values.

Values worked by hand: for thread t of 32, select(t < 16, t, 100 - t), min(t, 10), max(t, 10).
"""

from __future__ import annotations

import numpy as np

import tilemem.sim as sim
from tilemem import T


def _kernel():
    @T.kernel(target="sm_90a", grid=1, block=32)
    def k(out: T.Buffer((3, 32), "int32")):
        t = T.thread_id()
        out[0, t] = T.select(t < 16, t, 100 - t)
        out[1, t] = T.min(t, 10)
        out[2, t] = T.max(t, 10)

    return k


def test_select_min_max_compute_what_they_say():
    out = np.zeros((3, 32), np.int32)
    result = sim.run(_kernel(), out, schedule="in-order")
    assert result.ok, result.hazards
    t = np.arange(32)
    assert out[0].tolist() == [*range(16), *(100 - t[16:]).tolist()]
    assert out[1].tolist() == [*range(10), *[10] * 22]
    assert out[2].tolist() == [*[10] * 10, *range(10, 32)]


def test_select_min_max_are_emitted_as_cpp_expressions():
    src = _kernel().source
    t = "(int)threadIdx.x"  # out is (3, 32) row-major: row r starts at element 32 r
    assert f"out[{t}] = (({t} < 16) ? {t} : (100 - {t}));" in src
    assert f"out[(32 + {t})] = min({t}, 10);" in src
    assert f"out[(64 + {t})] = max({t}, 10);" in src
