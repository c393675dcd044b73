"""Pool laws: without move_base_to no two buffers overlap and each honours its alignment."""

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from tilemem import SMEMPool, TMEMPool

DTYPES = ["uint8", "bfloat16", "float32", "uint64", "float4_e2m1fn", "float6_e2m3fn", "float64"]

smem_request = st.one_of(
    st.tuples(
        st.just("alloc"),
        st.lists(st.integers(1, 40), min_size=1, max_size=3),
        st.sampled_from(DTYPES),
        st.sampled_from([0, 1, 2, 8, 64, 128, 1024]),
    ),
    st.tuples(
        st.just("mma"),
        st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(1, 2)),
        st.sampled_from(["bfloat16", "float32", "int8"]),
        st.sampled_from(["auto", "none", "32B", "64B", "128B"]),
    ),
)


@given(st.lists(smem_request, min_size=1, max_size=12))
@settings(max_examples=150, deadline=None)
def test_smem_buffers_never_overlap_and_are_aligned(requests):
    smem = SMEMPool()
    for kind, shape, dtype, extra in requests:
        if kind == "alloc":
            smem.alloc(tuple(shape), dtype, align=extra)
        else:
            bits = {"bfloat16": 16, "float32": 32, "int8": 8}[dtype]
            stages, rows8, k = shape
            smem.alloc_mma((stages, 8 * rows8, k * 1024 // bits), dtype, extra)
    bufs = sorted(smem.buffers, key=lambda b: b.byte_offset)
    for buf in bufs:
        assert buf.byte_offset % buf.align == 0
        assert buf.align >= buf.dtype.natural_align
        period = getattr(getattr(buf.layout, "swizzle", None), "period", 1) * buf.dtype.bits // 8
        assert buf.byte_offset % max(period, 1) == 0
    for a, b in itertools.pairwise(bufs):
        assert a.byte_offset + a.nbytes <= b.byte_offset
    assert smem.max_offset == max(b.byte_offset + b.nbytes for b in bufs)
    assert not any(e.overlaps for e in smem.plan().smem.entries)


@given(
    st.lists(
        st.tuples(
            st.sampled_from([32, 64, 128]),
            st.integers(1, 64),
            st.sampled_from(["float32", "bfloat16"]),
        ),
        min_size=1,
        max_size=8,
    )
)
@settings(max_examples=100, deadline=None)
def test_tmem_buffers_never_share_columns(requests):
    smem = SMEMPool()
    tmem = TMEMPool(smem, "auto")
    placed = []
    for rows, half_cols, dtype in requests:
        if tmem.offset + half_cols * (2 if dtype == "float32" else 1) > 512:
            break
        placed.append(tmem.alloc((rows, 2 * half_cols), dtype))
    spans = sorted((b.col_offset, b.col_offset + b.cols) for b in placed)
    for (_a0, a1), (b0, _b1) in itertools.pairwise(spans):
        assert a1 <= b0
    total = tmem.commit()
    assert total >= tmem.max_offset and total & (total - 1) == 0 and 32 <= total <= 512
