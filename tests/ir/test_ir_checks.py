"""Checks of the kernel IR that a later, generic failure used to hide: each asserts its own
error class and words, so deleting the check fails here."""

from __future__ import annotations

import pytest

from tilemem import T
from tilemem.errors import IRError
from tilemem.ir.intrinsics import registry
from tilemem.ir.intrinsics.registry import intrinsic


def build(body, target="sm_90a", name="probe"):
    @T.kernel(target, block=32, name=name)
    def kernel(out: T.Buffer((4,), "int32")):
        body(out)

    return kernel


# -- T.Then / T.Else outside T.If ----------------------------------------------------------


def _then_alone(out):
    with T.Then():
        out[0] = 1


def _else_alone(out):
    with T.Else():
        out[0] = 1


def _then_in_a_loop_inside_if(out):
    with T.If(out[0] == 0):
        for _ in T.serial(2):
            with T.Then():
                out[0] = 1


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (_then_alone, "T.Then() must sit directly inside `with T.If(cond):`"),
        (_else_alone, "T.Else() must sit directly inside `with T.If(cond):`"),
        (_then_in_a_loop_inside_if, "T.Then() must sit directly inside"),
    ],
)
def test_a_branch_outside_its_if_is_an_ir_error(body, words):
    with pytest.raises(IRError) as err:
        build(body)
    assert words in str(err.value)


def _else_first(out):
    with T.If(out[0] == 0), T.Else():
        out[0] = 1


def _two_thens(out):
    with T.If(out[0] == 0):
        with T.Then():
            out[0] = 1
        with T.Then():
            out[0] = 2


def _loose_and_then(out):
    with T.If(out[0] == 0):
        out[1] = 3
        with T.Then():
            out[0] = 1


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (_else_first, "T.Else() needs a T.Then() before it"),
        (_two_thens, "T.If already has a T.Then"),
        (_loose_and_then, "put every statement of a T.If with a T.Then inside T.Then or T.Else"),
    ],
)
def test_misordered_branches(body, words):
    with pytest.raises(IRError) as err:
        build(body)
    assert words in str(err.value)


# -- kernel names are C identifiers, refused before NVRTC ------------------------------------


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("a-b", "kernel name 'a-b' is not an identifier"),
        ("1st", "kernel name '1st' is not an identifier"),
        ("gemm kernel", "is not an identifier"),
        ("kernel\nint x;", "is not an identifier"),
        ("núcleo", "is not an identifier"),
        ("class", "kernel name 'class' is a C++ or Python keyword"),
        ("template", "is a C++ or Python keyword"),
        ("tm_gemm", "kernel name 'tm_gemm' is reserved"),
        ("__k", "kernel name '__k' is reserved"),
    ],
)
def test_bad_kernel_names_are_refused(name, words):
    with pytest.raises(IRError) as err:
        build(lambda out: None, name=name)
    assert words in str(err.value)


def test_a_good_kernel_name_is_the_symbol():
    kernel = build(lambda out: None, name="my_kernel2")
    assert 'extern "C" __global__ void __launch_bounds__(32) my_kernel2(' in kernel.source


# -- the intrinsic registry refuses a second declaration -----------------------------------


def test_a_second_declaration_of_an_intrinsic_is_refused():
    first = registry.INTRINSICS["ptx.wgmma.fence"]
    with pytest.raises(ValueError, match=r"intrinsic 'ptx.wgmma.fence' is declared twice"):
        intrinsic("ptx.wgmma.fence", ptx="nop;")
    assert registry.INTRINSICS["ptx.wgmma.fence"] is first  # the first one stays


def test_a_second_t_path_is_refused():
    first = registry.LANGUAGE["ptx.wgmma.fence"]
    with pytest.raises(ValueError, match=r"T.ptx.wgmma.fence is declared twice"):
        registry.expose("ptx.wgmma.fence")(lambda: None)
    assert registry.LANGUAGE["ptx.wgmma.fence"] is first


def test_an_intrinsic_needs_exactly_one_lowering():
    with pytest.raises(ValueError, match="give exactly one of ptx="):
        intrinsic("ptx.test.nothing")
    assert "ptx.test.nothing" not in registry.INTRINSICS


# -- tcgen05.mma's kind check, directly -----------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("f32", "tcgen05.mma kind::f32: dense kinds are f16, tf32, f8f6f4, i8"),
        ("mxf4", "block-scaled ones go through T.ptx.tcgen05.mma_block_scale"),
        ("mxf8f6f4", "dense kinds are f16, tf32, f8f6f4, i8"),
        ("F16", "tcgen05.mma kind::F16"),
    ],
)
def test_tcgen05_mma_refuses_a_kind_it_cannot_issue(kind, words):
    with pytest.raises(IRError) as err:
        T.ptx.tcgen05.mma(0, 0, 0, 0, kind=kind)
    assert words in str(err.value)


@pytest.mark.parametrize(
    ("kind", "vec", "words"),
    [
        ("f16", 1, "block-scaled tcgen05.mma kinds are mxf8f6f4, mxf4, mxf4nvf4, got kind::f16"),
        ("mxf4", 4, "kind::mxf4 takes scale_vec::2X, got scale_vec 4"),
        ("mxf8f6f4", 2, "kind::mxf8f6f4 takes scale_vec::1X, got scale_vec 2"),
        ("mxf4nvf4", 1, "kind::mxf4nvf4 takes scale_vec::2X/4X, got scale_vec 1"),
    ],
)
def test_tcgen05_block_scale_refuses_kind_and_vector(kind, vec, words):
    with pytest.raises(IRError) as err:
        T.ptx.tcgen05.mma_block_scale(0, 0, 0, 0, 0, 0, kind=kind, scale_vec=vec)
    assert words in str(err.value)
