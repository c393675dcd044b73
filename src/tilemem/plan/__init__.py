"""Plans as data: targets, placement, the plan model, capacity checks, text reports."""

from ..intmath import align_up, is_power_of_two
from .advice import best_order, padding_advice
from .capacity import check_smem_capacity, stages_that_fit
from .jsonplan import plan_from_json_text
from .model import LayoutKind, MemoryPlan, PlanEntry, PoolPlan
from .occupancy import Occupancy, check_tmem_residency, occupancy
from .packing import Placement, place
from .stages import BufferRequest, StageSolution, smem_limit, solve_stages
from .target import TARGETS, Target, get_target

__all__ = [
    "TARGETS",
    "BufferRequest",
    "LayoutKind",
    "MemoryPlan",
    "Occupancy",
    "Placement",
    "PlanEntry",
    "PoolPlan",
    "StageSolution",
    "Target",
    "align_up",
    "best_order",
    "check_smem_capacity",
    "check_tmem_residency",
    "get_target",
    "is_power_of_two",
    "occupancy",
    "padding_advice",
    "place",
    "plan_from_json_text",
    "smem_limit",
    "solve_stages",
    "stages_that_fit",
]
