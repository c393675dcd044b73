"""Names of the memories a buffer or pool lives in (TIRx's scope strings)."""

SMEM = "shared.dyn"  # the block's dynamic shared memory
TMEM = "tmem"  # Blackwell tensor memory
