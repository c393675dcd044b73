"""Every instruction declares its simulation beside its lowering."""

from __future__ import annotations

import inspect

from tilemem.ir.intrinsics import INTRINSICS


def test_every_intrinsic_has_semantics():
    missing = sorted(op for op, spec in INTRINSICS.items() if not callable(spec.sim))
    assert not missing, f"declare sim= for {missing}"


def test_semantics_take_a_context_and_the_call():
    for op, spec in INTRINSICS.items():
        params = list(inspect.signature(spec.sim).parameters)
        assert len(params) == 2, (op, params)
