"""Plans as data: targets, placement, capacity checks, reports."""

from .capacity import check_smem_capacity, stages_that_fit
from .packing import Placement, align_up, is_power_of_two, place
from .report import MemoryPlan, PlanEntry, PoolPlan
from .target import TARGETS, Target, get_target

__all__ = [
    "MemoryPlan", "PlanEntry", "Placement", "PoolPlan", "TARGETS", "Target",
    "align_up", "check_smem_capacity", "get_target", "is_power_of_two", "place", "stages_that_fit",
]
