"""A minimal stand-in for the simulator's context (the SimContext protocol of
tilemem.ir.intrinsics.registry): one warp, flat shared memory, TMEM and registers, and
asynchronous operations that complete when the test says. It lets the wgmma / tcgen05
semantic functions be tested on their own, with operands placed by hand."""

from __future__ import annotations

import numpy as np

from tilemem.dtype import DataType, float32_to_bits
from tilemem.ir.nodes import Call
from tilemem.layout.operand import smem_descriptor
from tilemem.layout.smem import mma_shared_layout


class FakeContext:
    def __init__(self, warp: int = 0, smem: np.ndarray | None = None, tmem=None, regs=None):
        self.warp = warp
        self.lanes = np.arange(32, dtype=np.int32)
        self.active = np.ones(32, dtype=bool)
        self.thread_ids = self.lanes + 32 * warp
        self.cta, self.rank, self.cluster_size = (0, 0, 0), 0, 1
        self.smem = smem if smem is not None else np.zeros(1 << 18, np.uint8)
        self.tmem = tmem if tmem is not None else np.zeros((128, 512), np.uint32)
        self.regs: dict = regs if regs is not None else {}
        self.args: list = []
        self.pending: list = []
        self.hazards: list = []
        self.fences: list = []
        self.groups: list = []
        self.tmem_reads: list = []
        self.peers: dict = {}  # cluster rank -> FakeContext of that CTA (cta_group::2)

    def _cta(self, rank):
        return self if rank is None or rank == self.rank else self.peers[rank]

    # operands
    def value(self, i: int) -> np.ndarray:
        return np.full(32, self.args[i])

    def uniform(self, i: int) -> int:
        return int(self.args[i])

    # memory
    def smem_read(self, addrs, nbytes, *, rank=None):
        a = np.asarray(addrs, np.int64)[..., None] + np.arange(nbytes)
        return self._cta(rank).smem[a]

    def smem_write(self, addrs, data, *, rank=None):
        a = np.asarray(addrs, np.int64)[..., None] + np.arange(data.shape[-1])
        self.smem[a] = data

    def regs_read(self, var):
        return self.regs[var].copy()

    def regs_write(self, var, values, lanes=None):
        lanes = self.active if lanes is None else lanes
        self.regs[var][lanes] = np.asarray(values)[lanes]

    def tmem_read(self, lanes, cols, *, rank=None):
        lanes, cols = np.broadcast_arrays(np.asarray(lanes), np.asarray(cols))
        self.tmem_reads.append((lanes.copy(), cols.copy()))
        return self._cta(rank).tmem[lanes, cols]

    def tmem_write(self, lanes, cols, data, *, rank=None):
        lanes, cols = np.broadcast_arrays(np.asarray(lanes), np.asarray(cols))
        self._cta(rank).tmem[lanes, cols] = np.broadcast_to(data, lanes.shape)

    def tmem_alloc(self, slot, ncols, cta_group):
        yield ("alloc", slot, ncols, cta_group)
        return 0

    # asynchrony
    def issue(self, queue, complete, what, *, writes=()):
        self.pending.append((queue, complete, what))

    def complete_all(self):
        while self.pending:
            _, complete, _ = self.pending.pop(0)
            complete(self)

    def commit_group(self, queue):
        self.groups.append(("commit", queue))

    def wait_group(self, queue, n):
        self.groups.append(("wait", queue, n))
        self.complete_all()

    def mbarrier_arrive(self, bar, count=1, *, tx=0, rank=None):
        self.groups.append(("arrive", bar, count))

    def fence(self, kind):
        self.fences.append(kind)

    def hazard(self, kind, message, *, space="", buffer="", where=""):
        self.hazards.append((kind, message))


def run(sim, ctx: FakeContext, op: str, args: tuple, values: list, **attrs):
    """Run semantic function ``sim`` for ``Call(op, args, attrs)`` with operand values."""
    ctx.args = values
    return sim(ctx, Call(op, args, attrs=tuple(attrs.items())))


def place(smem, base, values, dtype, mode, major, arch="sm_90a", fmt=None):
    """Write ``values`` (rows x cols, cols contiguous) into ``smem`` at ``base`` laid out as
    tilemem lays out an operand tile (its layouts and descriptors are checked against CuTe),
    padded with zeros to whole swizzle rows; returns the descriptor of its first slice.
    ``fmt``: encode the values in this format inside ``dtype``'s containers (fp6 in bytes)."""
    dt = DataType(dtype)
    rows, cols = values.shape
    atom = {"none": 16, "32B": 32, "64B": 64, "128B": 128}[mode] * 8 // dt.bits
    padded = np.zeros((rows, -(-cols // atom) * atom), np.float32)
    padded[:, :cols] = values
    layout = mma_shared_layout(dtype, mode, padded.shape)
    fmt = fmt or ("tf32" if dtype == "float32" else dtype)
    words = float32_to_bits(padded, fmt).astype(np.uint64).ravel()
    bit = layout.positions()["m"] * dt.bits  # row-major over (rows, cols)
    if dt.bits == 4:
        at = base + bit // 8
        nibble = (bit % 8).astype(np.uint64)
        np.bitwise_and.at(
            smem, at, (~(np.uint64(0xF) << nibble) & np.uint64(0xFF)).astype(np.uint8)
        )
        np.bitwise_or.at(smem, at, (words << nibble).astype(np.uint8))
    else:
        for i in range(dt.bits // 8):
            smem[base + bit // 8 + i] = (words >> np.uint64(8 * i)) & np.uint64(0xFF)
    return smem_descriptor(layout, dtype, arch=arch, major=major, start_address=base)
