"""``tilemem.ir.nodes.statements`` and ``issues``: every nested statement, in program order."""

from tilemem import lang as T
from tilemem.ir.nodes import Call, ExprStmt, For, IfThenElse, PhaseStmt, SeqStmt, issues, statements


def _ops(kernel) -> list[str]:
    return [
        s.expr.op
        for s in statements(kernel.ir.body)
        if isinstance(s, ExprStmt) and isinstance(s.expr, Call)
    ]


def test_statements_reach_both_branches_and_loop_bodies_in_program_order():
    @T.kernel(target="sm_90a", block=32, name="nested")
    def kernel(y: T.Buffer((32,), "int32")):
        T.ptx.griddepcontrol.launch_dependents()
        with T.If(T.thread_id() == 0):
            with T.Then():
                T.cuda.syncthreads()
            with T.Else():
                for _ in T.serial(2):
                    T.ptx.griddepcontrol.wait()
        y[T.thread_id()] = 1

    ops = _ops(kernel)
    # the calls in the order they are written: before the if, its then, inside the else's loop
    assert ops.index("ptx.griddepcontrol.launch_dependents") < ops.index("ptx.griddepcontrol.wait")
    assert ops.count("ptx.griddepcontrol.wait") == 1  # a loop body is visited once, not unrolled
    kinds = {type(s) for s in statements(kernel.ir.body)}
    assert {SeqStmt, IfThenElse, For} <= kinds
    assert issues(kernel.ir.body, "ptx.griddepcontrol.wait")
    assert not issues(kernel.ir.body, "ptx.griddepcontrol.launch")  # whole names only


def test_a_phase_body_is_visited():
    @T.kernel(target="sm_90a", block=32, name="phased")
    def kernel():
        smem = T.SMEMPool(name="smem", phases=("a", "b"))
        x = smem.alloc((32,), "int32", name="x", live="a")
        smem.commit()
        with T.phase("a"):
            T.ptx.griddepcontrol.wait()
            x[T.thread_id()] = 1

    assert any(isinstance(s, PhaseStmt) for s in statements(kernel.ir.body))
    assert issues(kernel.ir.body, "ptx.griddepcontrol.wait")
