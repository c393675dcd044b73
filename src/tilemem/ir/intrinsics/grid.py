"""Grid dependency control: a kernel that overlaps its start with the previous kernel's end.

PTX ISA 9.0, "Parallel Synchronization and Communication Instructions: griddepcontrol"
(PTX 7.8, sm_90 and later): ``griddepcontrol.launch_dependents`` tells the hardware that the
grids depending on this one may be scheduled once every CTA of this grid has issued it or
exited; ``griddepcontrol.wait`` blocks until every grid this one depends on has completed and
its memory operations are performed and visible to this grid. A kernel is such a dependent
only when the host launches it with programmatic stream serialization (CUDA driver API,
``CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION``, :class:`~tilemem.cuda.Launcher`
``programmatic=True``); launched without it, ``wait`` returns at once and
``launch_dependents`` does nothing.

The pattern: every thread issues ``wait`` before its first access to global memory (the
work it may do before, such as barrier set-up and register reallocation, then runs under
the previous kernel's tail), and ``launch_dependents`` as early as the next kernel may
start its own set-up. A kernel launched with programmatic serialization that reads or
writes global memory before ``wait`` races with the previous kernel; the launcher refuses
such a launch of a kernel that has no ``wait`` at all.

In the simulator a kernel runs as the only grid: there is no earlier grid to wait for and
no later one to launch, so both instructions have no effect.
"""

from __future__ import annotations

from .registry import intrinsic


@intrinsic(
    "ptx.griddepcontrol.wait",
    feature="griddepcontrol",
    ptx="griddepcontrol.wait;",
    sim=lambda ctx, call: None,  # one grid: nothing earlier to wait for (module docstring)
)
def griddepcontrol_wait():
    """Block until the grids this kernel depends on have completed and their writes are
    visible (a no-op when the kernel was launched without programmatic serialization)."""
    return (), ()


@intrinsic(
    "ptx.griddepcontrol.launch_dependents",
    feature="griddepcontrol",
    ptx="griddepcontrol.launch_dependents;",
    sim=lambda ctx, call: None,  # one grid: no dependent to launch (module docstring)
)
def griddepcontrol_launch_dependents():
    """Let the kernels launched after this one with programmatic serialization start once
    every CTA of this grid has issued this or exited."""
    return (), ()
