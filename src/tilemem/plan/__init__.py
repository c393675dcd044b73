"""Plans as data: targets, placement, capacity checks, reports."""

from .advice import best_order, padding_advice
from .capacity import check_smem_capacity, stages_that_fit
from .occupancy import Occupancy, check_tmem_residency, occupancy, plan_occupancy
from .stages import BufferRequest, StageSolution, smem_limit, solve_stages
from .packing import Placement, align_up, is_power_of_two, place
from .report import MemoryPlan, PlanEntry, PoolPlan
from .target import TARGETS, Target, get_target

__all__ = [
    "BufferRequest", "Occupancy", "StageSolution", "best_order", "check_tmem_residency", "occupancy",
    "padding_advice", "plan_occupancy", "smem_limit", "solve_stages",
    "MemoryPlan", "PlanEntry", "Placement", "PoolPlan", "TARGETS", "Target",
    "align_up", "check_smem_capacity", "get_target", "is_power_of_two", "place", "stages_that_fit",
]
