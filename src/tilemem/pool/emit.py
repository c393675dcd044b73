"""The seam between pools and a kernel being built.

Pools plan the same way in both modes. When a kernel builder is active it
installs an emitter here; a pool created inside it keeps that emitter and
reports each event to it (declare a buffer, commit, TMEM alloc/dealloc).
Plan-only use never installs one, so nothing here imports the IR. The pools import this
module, so it names them only in words: ``pool`` is the SMEMPool or TMEMPool reporting the
event, ``stages`` a TMEMStages view.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any, Protocol

from .buffer import Buffer


class PoolEmitter(Protocol):
    """What a kernel builder implements to receive pool events."""

    def smem_pool(self, pool: Any) -> None: ...
    def smem_buffer(self, pool: Any, buf: Buffer) -> None: ...
    def smem_commit(self, pool: Any, size: int) -> None: ...
    def tmem_pool(self, pool: Any) -> None: ...
    def tmem_buffer(self, pool: Any, buf: Buffer) -> None: ...
    def tmem_commit(self, pool: Any) -> None: ...
    def tmem_dealloc(self, pool: Any) -> None: ...
    def load(self, buf: Buffer, index: tuple) -> Any: ...
    def store(self, buf: Buffer, index: tuple, value: Any) -> None: ...
    def tmem_stage(self, stages: Any, stage: Any, start: int, stop: int) -> Buffer: ...
    def is_current(self) -> bool: ...


_ACTIVE: contextvars.ContextVar[PoolEmitter | None] = contextvars.ContextVar(
    "tilemem_emitter", default=None
)


def current_emitter() -> PoolEmitter | None:
    return _ACTIVE.get()


@contextlib.contextmanager
def emitting(emitter: PoolEmitter) -> Iterator[PoolEmitter]:
    """Make pools created inside this block emit into ``emitter``."""
    token = _ACTIVE.set(emitter)
    try:
        yield emitter
    finally:
        _ACTIVE.reset(token)
