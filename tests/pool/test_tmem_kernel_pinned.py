"""The TMEM protocol a pool emits, pinned on the generated CUDA source and on the emitter seam.

docs/DESIGN.md#tmem-pools: commit() emits, under the alloc-warp guard, tcgen05.alloc.cta_group::N of
total_cols into the slot, then __syncwarp() when sync_after_alloc (default True); dealloc()
emits, under the dealloc-warp guard, tcgen05.relinquish_alloc_permit then tcgen05.dealloc.
Warp w of a block of 128 threads is threadIdx.x / 32 == w (CUDA C++ Programming Guide).
"""

from tilemem import T
from tilemem.pool import SMEMPool, TMEMPool, emitting


def _block(source: str, first: str) -> list[str]:
    """The lines of the guarded block around the first line containing ``first``."""
    lines = source.splitlines()
    at = next(i for i, line in enumerate(lines) if first in line)
    start = max(i for i in range(at) if lines[i].lstrip().startswith("if ("))
    end = next(i for i in range(at, len(lines)) if lines[i].strip() == "}")
    return lines[start : end + 1]


def kernel_source() -> str:
    @T.kernel(target="sm_100a", block=128)
    def k(x: T.Buffer((1,), "float32")):
        smem = T.SMEMPool()
        tmem = T.TMEMPool(smem, 32, alloc_warp=1, dealloc_warp=2)
        tmem.alloc((128, 32), name="acc")
        smem.commit()
        tmem.commit()
        tmem.dealloc()

    return k.source


def test_commit_emits_the_alloc_then_syncwarp_under_the_alloc_warp_guard():
    block = _block(kernel_source(), "tcgen05.alloc.")
    assert "/ 32) == 1)" in block[0]  # warp 1 only
    assert "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32" in block[1]
    assert '"r"(32u)' in block[1]  # total_cols = 32
    assert "__syncwarp" in block[2]  # sync_after_alloc defaults to True


def test_dealloc_emits_relinquish_then_dealloc_under_the_dealloc_warp_guard():
    block = _block(kernel_source(), "tcgen05.relinquish_alloc_permit")
    assert "/ 32) == 2)" in block[0]  # warp 2 only
    assert "tcgen05.relinquish_alloc_permit.cta_group::1" in block[1]
    assert "tcgen05.dealloc.cta_group::1" in block[2] and '"r"(32u)' in block[2]


def test_a_slot_of_a_pool_carved_out_of_the_kernel_smem_is_accepted():
    # the slot lives in `inner`, carved out of `smem`: the same kernel's shared memory
    @T.kernel(target="sm_100a", block=128)
    def k(x: T.Buffer((1,), "float32")):
        smem = T.SMEMPool()
        inner = T.SMEMPool(ptr=smem.alloc((16,), "uint32", name="region"))
        slot = inner.alloc((1,), "uint32", name="slot")
        tmem = T.TMEMPool(smem, 32, tmem_addr=slot)
        smem.commit()
        tmem.commit()
        tmem.dealloc()

    lines = k.source.splitlines()
    # region is the first buffer of the kernel's pool (byte 0) and slot the first of region,
    # so slot is byte 0 of the kernel's shared memory; alloc writes 32 columns' base there
    # and dealloc reads it back from the slot
    assert "  uint32_t* slot = reinterpret_cast<uint32_t*>(smem + 0);" in lines
    (alloc,) = [line for line in lines if "tcgen05.alloc." in line]
    assert '"r"(tm_smem_addr((uint8_t*)slot + 0)), "r"(32u)' in alloc
    (dealloc,) = [line for line in lines if "tcgen05.dealloc." in line]
    assert '"r"(slot[0]), "r"(32u)' in dealloc


class Recorder:
    """A PoolEmitter that records the events a pool reports."""

    def __init__(self):
        self.events: list[tuple[str, str]] = []

    def smem_pool(self, pool):
        self.events.append(("smem_pool", pool.name))

    def smem_buffer(self, pool, buf):
        self.events.append(("smem_buffer", buf.name))

    def smem_commit(self, pool, size):
        self.events.append(("smem_commit", pool.name))

    def tmem_pool(self, pool):
        self.events.append(("tmem_pool", pool.name))

    def tmem_buffer(self, pool, buf):
        self.events.append(("tmem_buffer", buf.name))

    def tmem_commit(self, pool):
        self.events.append(("tmem_commit", pool.name))

    def tmem_dealloc(self, pool):
        self.events.append(("tmem_dealloc", pool.name))


def test_a_tmem_pool_reports_each_event_to_its_emitter():
    recorder = Recorder()
    with emitting(recorder):
        smem = SMEMPool(name="smem")
        tmem = TMEMPool(smem, 64, name="tmem")
        tmem.alloc((128, 32), name="acc")
        tmem.alloc_sf((128, 4), "float8_e8m0fnu", sf_per_mma=4, name="sfa")
        smem.commit()
        tmem.commit()
        tmem.dealloc()
    assert recorder.events == [
        ("smem_pool", "smem"),
        ("smem_buffer", "tmem_addr"),
        ("tmem_pool", "tmem"),
        ("tmem_buffer", "acc"),
        ("tmem_buffer", "sfa"),
        ("smem_commit", "smem"),
        ("tmem_commit", "tmem"),
        ("tmem_dealloc", "tmem"),
    ]
