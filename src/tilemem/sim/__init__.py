"""``tilemem.sim``: run a ``@T.kernel`` program on the CPU, with the hardware's asynchrony,
and report every memory hazard (races, missing proxy fences, uninitialised reads,
out-of-bounds and lifetime accesses, TMEM protocol and mbarrier misuse, deadlocks).

>>> result = tilemem.sim.run(kernel, x, 3, grid=2, schedule="adversarial")
>>> result.raise_for_hazards()
"""

from ..errors import HazardError, SimError
from .result import KINDS, Access, Hazard, SimResult
from .run import SCHEDULES, run

__all__ = ["KINDS", "SCHEDULES", "Access", "Hazard", "HazardError", "SimError", "SimResult", "run"]
