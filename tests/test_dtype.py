import pytest

from tilemem import DataType
from tilemem.dtype import as_dtype, known_dtypes
from tilemem.errors import DTypeError

# (name, bits): widths from the type definitions (IEEE, OCP MX spec for fp8/fp6/fp4)
WIDTHS = [
    ("bool", 8),
    ("int8", 8),
    ("int16", 16),
    ("int32", 32),
    ("int64", 64),
    ("uint8", 8),
    ("uint16", 16),
    ("uint32", 32),
    ("uint64", 64),
    ("float16", 16),
    ("bfloat16", 16),
    ("float32", 32),
    ("float64", 64),
    ("float8_e4m3fn", 8),
    ("float8_e5m2", 8),
    ("float8_e8m0fnu", 8),
    ("float6_e2m3fn", 6),
    ("float6_e3m2fn", 6),
    ("float4_e2m1fn", 4),
]


@pytest.mark.parametrize("name,bits", WIDTHS)
def test_every_spec_dtype_has_its_width(name, bits):
    dt = DataType(name)
    assert (dt.name, dt.bits, dt.bytes) == (name, bits, bits / 8)


def test_sub_byte_bytes_are_fractional():
    assert DataType("float4_e2m1fn").bytes == 0.5
    assert DataType("float6_e2m3fn").bytes == 0.75


def test_cuda_spelling_of_common_types():
    assert DataType("bfloat16").cuda_type == "tm_bf16"
    assert DataType("float16").cuda_type == "tm_f16"
    assert DataType("float32").cuda_type == "float"
    assert DataType("uint64").cuda_type == "uint64_t"


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(DTypeError) as exc:
        DataType("float9")
    assert "float9" in str(exc.value) and "bfloat16" in str(exc.value)
    assert isinstance(exc.value, ValueError)


def test_string_and_datatype_are_interchangeable():
    assert as_dtype("int8") == DataType("int8") == as_dtype(DataType("int8"))
    assert DataType(DataType("int8")) == DataType("int8")


def test_natural_alignment_is_element_size_clamped_to_1_and_16():
    assert DataType("float4_e2m1fn").natural_align == 1
    assert DataType("bfloat16").natural_align == 2
    assert DataType("float64").natural_align == 8


def test_storage_bytes_round_up_once():
    # 3 fp4 elements are 12 bits: 2 bytes, not 3 x ceil(0.5)
    assert DataType("float4_e2m1fn").storage_bytes(3) == 2
    assert DataType("float6_e2m3fn").storage_bytes(5) == 4  # 30 bits
    assert len(known_dtypes()) == len(WIDTHS)
