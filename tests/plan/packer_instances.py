"""Random kernel-like packer instances shared by the packer tests of tests/plan."""

from __future__ import annotations

import random

from tilemem.plan.lifetimes import Item


def kernel_like(rng: random.Random, count: int, phase_counts=(2, 3, 4, 6, 8)):
    """``count`` items over ``rng.choice(phase_counts)`` phases: tiles with 256-1024-byte
    alignment and sizes multiples of it, barriers, small arrays; one item in five live
    throughout (as the planning benchmark's instances, smaller). Returns (items, phases)."""
    phases = tuple(f"p{i}" for i in range(rng.choice(phase_counts)))
    items = []
    for n in range(count):
        kind = rng.random()
        if kind < 0.6:
            align = rng.choice((256, 512, 1024))
            size = align * rng.randint(1, 64)
        elif kind < 0.8:
            align, size = 8, 8 * rng.randint(1, 8)
        else:
            align = rng.choice((16, 128))
            size = align * rng.randint(1, 32)
        live = frozenset(rng.sample(phases, rng.randint(1, len(phases))))
        items.append(Item(f"b{n}", size, align, None if rng.random() < 0.2 else live))
    return items, phases
