"""Exceptions raised for user mistakes.

Every message says what is wrong, with the numbers, and how to fix it.
Catch :class:`TilememError` to catch them all; the ``ValueError`` subclasses
are raised where a value the caller passed is wrong.
"""


class TilememError(Exception):
    """Base class of every error tilemem raises on purpose."""


class DTypeError(TilememError, ValueError):
    """An unknown data type name, or a dtype that an operation does not accept."""


class LayoutError(TilememError, ValueError):
    """A layout that cannot be built, or a coordinate/shape it cannot answer."""


class SwizzleError(LayoutError):
    """An MMA operand tile whose shape or dtype does not fit the swizzle mode."""


class AlignmentError(TilememError, ValueError):
    """A requested alignment that is not a power of two, or a misplaced buffer."""


class AllocationError(TilememError, ValueError):
    """A buffer request the pool cannot honour (bad shape, columns, options)."""


class PoolStateError(TilememError, RuntimeError):
    """A pool used out of order: alloc after commit, commit twice, dealloc before commit."""


class CapacityError(TilememError, ValueError):
    """A plan that does not fit the target's shared memory or tensor memory."""


class TMEMOverflowError(CapacityError):
    """TMEM columns requested beyond the pool's ``total_cols``."""


class AliasError(TilememError, ValueError):
    """Buffers overlaid by hand (``move_base_to``, ``offset=``) that are live in a common phase."""


class PlanFileError(TilememError, ValueError):
    """A plan in a file form (TOML, JSON, C++ header) that cannot be read or written: syntax,
    an unknown key, a value of the wrong type, a name defined nowhere or unusable in C++."""


class PlanError(TilememError, ValueError):
    """A plan query that cannot be answered: something that is not a plan or plan entry, or
    a buffer name the plan does not hold."""


class TargetError(TilememError, ValueError):
    """An unknown target, or a feature the target lacks."""


class TMAError(TilememError, ValueError):
    """A buffer or tensor map that breaks a TMA rule; the message says which and how to fix it."""


# Kernel building, code generation, compilation and launch


class IRError(TilememError, ValueError):
    """An expression or statement that cannot be built (bad operand, wrong type)."""


class BuildError(TilememError):
    """An error raised while building a kernel; the message starts with the user's file and line."""


class CodegenError(TilememError):
    """An IR construct the CUDA backend cannot lower."""


class CompileError(TilememError):
    """NVRTC or ptxas rejected a generated kernel; the message has the log and the source around
    it."""


class LaunchError(TilememError, RuntimeError):
    """A kernel that cannot be launched here, with the kernel's name and the limit it hit."""


class GemmShapeError(TilememError, ValueError):
    """Operands the persistent GEMM cannot take; the message says which rule and the fix."""


class TilememWarning(UserWarning):
    """A plan that works but not as well as it looks (e.g. CTAs waiting for TMEM columns)."""


# The CPU simulator (tilemem.sim)


class SimError(TilememError):
    """A kernel the simulator cannot run: an instruction without semantics, an argument that
    does not match its parameter, an operand the hardware cannot execute at all."""


class HazardError(TilememError):
    """A simulated run reported hazards (``SimResult.raise_for_hazards``); the message lists
    them, each with its kind, buffer, byte range, accesses and usual fix."""


class MissingLibraryError(TilememError, ImportError):
    """An optional library (pycute, CuTe DSL, Triton) that a conversion needs is not installed;
    the message names the package to install."""
