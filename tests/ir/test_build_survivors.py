"""A Python error raised by a kernel body: a BuildError naming the user's line, or, when no
frame of the error lies outside tilemem (a kernel body tilemem defines itself), the error as
it was raised: there is no user line to name, and the error is tilemem's own."""

from __future__ import annotations

import _thread
import os
import threading

import pytest

import tilemem
from tilemem import T
from tilemem.ir import BuildError


def test_a_python_error_in_a_kernel_body_names_the_users_line():
    items: list[int] = []
    with pytest.raises(BuildError) as info:

        @T.kernel(target="sm_90a", block=32)
        def k(x: T.Buffer((32,), "float32")):
            x[T.thread_id()] = items[3]  # IndexError: the list is empty

    message = str(info.value)
    here = os.path.abspath(__file__)
    assert message.startswith(f"{here}:")
    assert " in k: IndexError: list index out of range\n" in message
    assert message.endswith("x[T.thread_id()] = items[3]  # IndexError: the list is empty")
    assert isinstance(info.value.__cause__, IndexError)


def _body_inside_tilemem():
    """A kernel body whose code claims a file of the tilemem package (as a built-in kernel's
    does): every frame of its error is tilemem's."""
    path = os.path.join(os.path.dirname(os.path.abspath(tilemem.__file__)), "_no_such_file.py")
    scope: dict = {}
    exec(compile("def body(x):\n    return 1 // 0\n", path, "exec"), scope)
    body = scope["body"]
    body.__annotations__ = {"x": T.Buffer((32,), "float32")}
    return body


def test_an_error_with_no_frame_outside_tilemem_is_raised_as_it_is():
    with pytest.raises(ZeroDivisionError) as info:
        T.kernel(target="sm_90a", block=32)(_body_inside_tilemem())
    assert not isinstance(info.value, BuildError)
    assert str(info.value) == "integer division or modulo by zero"


def test_statements_built_with_no_caller_outside_tilemem_are_located_at_question_mark():
    # kernel.locations maps each statement to the first caller outside ir/, pool/ and lang.py
    # (what the simulator's hazard and deadlock reports cite). A thread started on tilemem's
    # own code (here: code that claims a file of tilemem/ir/) has no such caller: "?"
    ir_dir = os.path.join(os.path.dirname(os.path.abspath(tilemem.__file__)), "ir")
    source = (
        "def body(x):\n"
        "    x[T.thread_id()] = 1.0\n"
        "def entry(done, finished):\n"
        "    try:\n"
        "        done.append(T.kernel(target='sm_90a', block=32)(body))\n"
        "    except BaseException as exc:\n"
        "        done.append(exc)\n"
        "    finished.set()\n"
    )
    scope: dict = {"T": T}
    exec(compile(source, os.path.join(ir_dir, "_no_such_file.py"), "exec"), scope)
    scope["body"].__annotations__ = {"x": T.Buffer((32,), "float32")}
    done: list = []
    finished = threading.Event()
    _thread.start_new_thread(scope["entry"], (done, finished))  # no frame of this file
    assert finished.wait(60)
    (kernel,) = done
    assert not isinstance(kernel, BaseException), kernel
    locations = kernel.ir.locations
    assert locations and set(locations.values()) == {"?"}
