"""tilemem: plans the shared memory and tensor memory of NVIDIA GPU tile kernels.

Plan-only use needs numpy alone::

    import tilemem
    smem = tilemem.SMEMPool(target="sm_90a")
    a = smem.alloc_mma((4, 128, 64), "bfloat16")   # 4 stages, 128B swizzle
    smem.commit()
    print(smem.plan())
"""

from typing import TYPE_CHECKING

from . import errors, layout
from .dtype import DataType
from .layout import SwizzleMode
from .plan import MemoryPlan, Target, get_target
from .pool import Buffer, SMEMPool, TMEMPool, TMEMStages
from .version import __version__

if TYPE_CHECKING:
    from .planfile import load_plan


def __getattr__(name: str):
    # The kernel language pulls in the IR; plan-only use never imports it.
    if name == "T":
        from . import lang

        return lang
    # Plan files are read by the examples' layer; importing the package never loads it.
    if name == "load_plan":
        from .planfile import load_plan

        return load_plan
    raise AttributeError(f"module 'tilemem' has no attribute {name!r}")


__all__ = [
    "Buffer",
    "DataType",
    "MemoryPlan",
    "SMEMPool",
    "SwizzleMode",
    "T",
    "TMEMPool",
    "TMEMStages",
    "Target",
    "__version__",
    "errors",
    "get_target",
    "layout",
    "load_plan",
]
