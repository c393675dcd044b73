"""Shadow state for hazard detection: who last wrote and read each memory unit, and when.

Happens-before is tracked with vector clocks over *threads*: every warp, and the agents
of each warp's asynchronous queues (an asynchronous operation is a thread forked at its
issue and joined by its wait; a warp's TMA loads, which complete in no set order, take
several agents in turn: ``machine.QUEUE_SLOTS``). An access is stamped with an
epoch ``(thread, clock)`` (FastTrack: Flanagan and Freund, PLDI 2009); a later access by
thread ``u`` with vector clock ``V`` is ordered after it iff ``clock <= V[thread]``. Writes
keep one epoch per unit; reads keep either the last reader's epoch or, where many threads
read one unit concurrently (shared memory), one clock per thread of the CTA.
"""

from __future__ import annotations

import numpy as np

NO_THREAD = -1


class Shadow:
    """Epochs of ``n`` memory units (bytes, elements or TMEM cells).

    ``readers``: None keeps the last reader only; an int ``L`` keeps a read clock per
    thread ``first_reader .. first_reader + L - 1`` (other readers fall back to the
    last-reader slot).
    """

    def __init__(self, n: int, readers: int | None = None, first_reader: int = 0):
        self.n = n
        self.wt = np.full(n, NO_THREAD, np.int32)  # writer thread
        self.wc = np.zeros(n, np.int32)  # writer clock
        self.wrec = np.full(n, -1, np.int32)  # writer's access record
        self.wasync = np.zeros(n, bool)  # written by the async proxy
        self.init = np.zeros(n, bool)
        self.rt = np.full(n, NO_THREAD, np.int32)  # last reader
        self.rc = np.zeros(n, np.int32)
        self.rrec = np.full(n, -1, np.int32)
        self.first_reader = first_reader
        self.readers = readers or 0
        self.reads = np.zeros((n, readers), np.int32) if readers else None

    def unordered_writes(self, idx: np.ndarray, vc: np.ndarray) -> np.ndarray:
        """Units of ``idx`` whose last write is not ordered before an access with ``vc``."""
        t = self.wt[idx]
        return (t >= 0) & (vc[np.maximum(t, 0)] < self.wc[idx])

    def unordered_reads(self, idx: np.ndarray, vc: np.ndarray) -> np.ndarray:
        """Units of ``idx`` read by some thread not ordered before an access with ``vc``."""
        t = self.rt[idx]
        out = (t >= 0) & (vc[np.maximum(t, 0)] < self.rc[idx])
        if self.reads is not None:
            local = vc[self.first_reader : self.first_reader + self.readers]
            out |= (self.reads[idx] > local[None, :]).any(axis=1)
        return out

    def record_read(self, idx: np.ndarray, thread: int, clock: int, rec: int) -> None:
        local = thread - self.first_reader
        if self.reads is not None and 0 <= local < self.readers:
            self.reads[idx, local] = clock
        self.rt[idx], self.rc[idx], self.rrec[idx] = thread, clock, rec

    def record_write(self, idx: np.ndarray, thread: int, clock: int, rec: int, async_: bool):
        self.wt[idx], self.wc[idx], self.wrec[idx] = thread, clock, rec
        self.wasync[idx] = async_
        self.init[idx] = True
        # reads ordered before this write need no more checking (the write orders them)
        self.rt[idx] = NO_THREAD
        if self.reads is not None:
            self.reads[idx] = 0
