"""An FA4-style attention forward's SMEM and TMEM, planned by tilemem, handed to CuTe DSL.

FlashAttention-4's CuTe DSL kernel counts TMEM columns by hand (``tmem_s_offset = [0,
128]``, ``tmem_o_offset = [256, 256 + head_dim]``, P written over S at ``s + 64``) and
sizes ``SharedStorage`` by hand, aliasing the O epilogue tile over Q with ``recast_ptr``.
Here tilemem plans both memories (``tilemem.examples.attention_fwd_fa4``: lifetimes put
the O tile over drained Q/KV bytes, P is a checked view inside S) and CuTe DSL reads:

- ``shared_storage(plan)``: a ``@cute.struct`` with every buffer at its planned offset and
  the lifetime overlay as a ``cute.union``;
- ``tmem_columns(plan)``: the column of S0, S1, O0, O1, P0, P1 and ``alloc_cols``;
- ``tmem_layout`` / ``smem_layout``: the layouts to make the tensors with.

``python examples/cute_dsl_fa4_plan.py`` prints the plan, the struct's field offsets
(CuTe's own numbers) and the TMEM tensors CuTe DSL builds from the plan.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute

from tilemem.examples import attention_fwd_fa4
from tilemem.interop.cute import shared_storage, tmem_columns, tmem_layout
from tilemem.layout import TileLayout, tmem_datapath_layout


def plan_fa4(head_dim: int = 128):
    return attention_fwd_fa4(kv_stages=3, head_dim=head_dim).plan()


def hand_offsets(head_dim: int = 128) -> dict[str, int]:
    """FA4's hand-written TMEM columns, for comparison: S at [0, 128], O after both S,
    P_i over the upper half of S_i (``s + n_block // 2`` with n_block = 128)."""
    s = [0, 128]
    o = [256, 256 + head_dim]
    return {"S0": s[0], "S1": s[1], "O0": o[0], "O1": o[1], "P0": s[0] + 64, "P1": s[1] + 64}


def tmem_tensors(plan, head_dim: int = 128) -> dict[str, str]:
    """Inside @cute.jit: the TMEM tensors of S, O (f32 accumulators) and P (bf16, packed two
    per column) at the planned columns, as CuTe DSL prints them."""
    cols = tmem_columns(plan)
    out: dict[str, str] = {}
    s_layout = tmem_datapath_layout("D", 128, 128)
    o_layout = tmem_datapath_layout("D", 128, head_dim)
    p_layout = TileLayout.of((128, 128), ("1@TLane", "1@TCol"))

    @cute.jit
    def make():
        base32 = cute.make_ptr(cutlass.Float32, 0, cute.AddressSpace.tmem)
        base16 = cute.make_ptr(cutlass.BFloat16, 0, cute.AddressSpace.tmem)
        for i in cutlass.range_constexpr(2):
            s = cute.make_tensor(base32 + cols[f"S{i}"], tmem_layout(s_layout, "float32"))
            o = cute.make_tensor(base32 + cols[f"O{i}"], tmem_layout(o_layout, "float32"))
            # bf16 elements: column c of 32-bit cells is element 2c
            p = cute.make_tensor(base16 + 2 * cols[f"P{i}"], tmem_layout(p_layout, "bfloat16"))
            out[f"S{i}"], out[f"O{i}"], out[f"P{i}"] = str(s), str(o), str(p)

    make()
    return out


def main() -> None:
    plan = plan_fa4()
    print(plan)
    storage = shared_storage(plan)
    print(f"SharedStorage: {storage.__sizeof__()} bytes, aligned to {storage.__alignof__()}")
    for name, offset in storage._offsets.items():
        if not name.startswith("_"):
            print(f"  {name:28s} at byte {offset}")
    cols = tmem_columns(plan)
    print(f"TMEM: allocate {cols.alloc_cols} columns")
    hand = hand_offsets()
    for name in sorted(cols):
        print(f"  {name:3s} column {cols[name]:3d}   (FA4 by hand: {hand.get(name)})")
    for name, tensor in tmem_tensors(plan).items():
        print(f"  {name}: {tensor}")


if __name__ == "__main__":
    main()
