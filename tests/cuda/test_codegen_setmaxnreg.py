"""A kernel that moves registers between warpgroups (``setmaxnreg``) is compiled with its
register count at entry fixed: ``__launch_bounds__(threads, 1)``. Without the minimum of one
block per SM, ptxas sizes the kernel by what its code needs, says "'setmaxnreg' ignored;
unable to determine register count at entry" (C7508) and caps every warpgroup there."""

import pytest

from tilemem import T


def _kernel(action: str | None):
    @T.kernel(target="sm_90a", block=(256,), name=f"regs_{action}")
    def k(x: T.Buffer((256,), "float32")):
        with T.If(T.warp_id() // 4 == 0):
            with T.Then():
                if action:
                    T.ptx.setmaxnreg.dec(40)
                x[T.thread_id()] = 1.0
            with T.Else():
                if action:
                    T.ptx.setmaxnreg.inc(232)
                x[T.thread_id()] = 2.0

    return k


def test_a_kernel_calling_setmaxnreg_asks_for_one_block_per_sm():
    assert "__launch_bounds__(256, 1) regs_both(" in _kernel("both").source


def test_a_kernel_without_setmaxnreg_keeps_the_thread_bound_alone():
    assert "__launch_bounds__(256) regs_None(" in _kernel(None).source


def _ptxas_log(source: str) -> str:
    import io

    from cuda.core import Program, ProgramOptions

    print("compiling a 256-thread setmaxnreg kernel with ptxas -v")
    log = io.StringIO()
    options = ProgramOptions(arch="sm_90a", std="c++17", name="r.cu", ptxas_options="-v")
    Program(source, "c++", options).compile("cubin", logs=log)
    return log.getvalue()


def test_ptxas_honours_setmaxnreg_only_with_one_block_per_sm():
    # the kernel needs a handful of registers: under the thread bound alone ptxas allocates
    # those, so the count at entry is not fixed and setmaxnreg is ignored (C7508); with one
    # block per SM it is
    pytest.importorskip("cuda.core")
    source = _kernel("both").source
    assert "C7508" not in _ptxas_log(source)
    unbounded = source.replace("__launch_bounds__(256, 1)", "__launch_bounds__(256)")
    assert "C7508" in _ptxas_log(unbounded)
