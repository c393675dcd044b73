"""Pools: SMEMPool (shared memory), TMEMPool and TMEMStages (tensor memory)."""

from .buffer import SMEM, TMEM, Buffer
from .emit import PoolEmitter, current_emitter, emitting
from .smem import SMEMPool
from .tmem import TMEMPool, TMEMStages

__all__ = [
    "SMEM",
    "TMEM",
    "Buffer",
    "PoolEmitter",
    "SMEMPool",
    "TMEMPool",
    "TMEMStages",
    "current_emitter",
    "emitting",
]
