"""Buffer pinned at its edges: when a missing offset is an error (docs/DESIGN.md#lifetimes: a pool
with phases places its buffers at commit), ndim, and what the repr says about the offset.
"""

from tilemem import Buffer, SMEMPool, TMEMPool
from tilemem.dtype import as_dtype
from tilemem.layout import TileLayout


def test_a_buffer_outside_any_pool_simply_has_no_offset():
    buf = Buffer("x", (4,), as_dtype("float32"), "shared.dyn", TileLayout.of((4,)), 16, 4)
    assert buf.byte_offset is None
    assert buf.placed is False


def test_an_smem_buffer_waiting_for_commit_has_no_tmem_column():
    # only the offset of the buffer's own memory waits for commit(); col_offset is not an
    # SMEM buffer's field at all, so it reads None without an error
    pool = SMEMPool(phases=("load", "store"))
    buf = pool.alloc((4,), "float32", name="x")
    assert buf.col_offset is None


def test_ndim_counts_the_dimensions():
    assert SMEMPool().alloc((2, 3, 4), "uint8").ndim == 3


def test_the_repr_of_an_smem_buffer_shows_its_byte_offset_or_that_commit_decides():
    # (4, 8) float32 after a 100-byte buffer: natural alignment 4, so byte 100
    pool = SMEMPool()
    pool.alloc((100,), "uint8")
    assert repr(pool.alloc((4, 8), "float32", name="x")) == (
        "Buffer('x', (4, 8), float32, shared.dyn, byte_offset=100, layout=row-major)"
    )
    waiting = SMEMPool(phases=("load", "store")).alloc((4, 8), "float32", name="y")
    assert "byte_offset=(at commit)" in repr(waiting)


def test_the_repr_of_a_tmem_buffer_shows_its_columns():
    # a (128, 32) float32 accumulator in data path D: 32 columns from column 0
    smem = SMEMPool(target="sm_100a")
    acc = TMEMPool(smem, 32, name="t").alloc((128, 32), "float32", name="acc")
    assert "tmem, col_offset=0, cols=32," in repr(acc)
