"""legal_mn against the PTX ISA's own table of tcgen05.mma shapes.

PTX ISA 9.7.16.2.1 "Matrix Shape", Table 39 "Various combinations of .kind and shapes",
rows "No .ws", "Dense", transcribed here by hand (M as listed, N as the row's set):

    kind::f16, ::tf32, ::f8f6f4   cta_group 1: 64xN, 128xN;  N = {8, 16, 24, ... 256} steps of 8
                                  cta_group 2: 128xN, 256xN; N = {16, 32, ... 256} steps of 16
    kind::mxf8f6f4, ::mxf4,       cta_group 1: 128xN;        N = {8, 16, ... 256} steps of 8
    ::mxf4nvf4                    cta_group 2: 128xN, 256xN; N = {16, 32, ... 256} steps of 16
    kind::i8                      cta_group 1: 64xN, 128xN;  N = {8, 16, 24, 32, 48, ... 256}
                                                             steps of 16 after N > 32
                                  cta_group 2: 128xN, 256xN; N = {32, 64, ... 256} steps of 32

kind::i8 at cta_group 1 keeps N = 24 (and 8): CUTLASS's SM100_MMA_S8 traits are stricter
(N == 8 or a multiple of 16) and would refuse the instruction the ISA documents, so the
table, not CuTe, decides here. (mxf4 / mxf4nvf4 at cta_group 2 also list a 256xNx96 shape,
a different K; legal_mn answers for the kind's one K.)
"""

import pytest

from tilemem.layout.operand import legal_mn

STEP8 = list(range(8, 257, 8))
STEP16 = list(range(16, 257, 16))
I8_CG1 = [8, 16, 24, 32, *range(48, 257, 16)]  # "{8, 16, 24, 32, 48, ... 256} steps of 16 after 32"
I8_CG2 = list(range(32, 257, 32))

TABLE = {
    ("f16", 1): ([64, 128], STEP8),
    ("tf32", 1): ([64, 128], STEP8),
    ("f8f6f4", 1): ([64, 128], STEP8),
    ("f16", 2): ([128, 256], STEP16),
    ("tf32", 2): ([128, 256], STEP16),
    ("f8f6f4", 2): ([128, 256], STEP16),
    ("mxf8f6f4", 1): ([128], STEP8),
    ("mxf4", 1): ([128], STEP8),
    ("mxf4nvf4", 1): ([128], STEP8),
    ("mxf8f6f4", 2): ([128, 256], STEP16),
    ("mxf4", 2): ([128, 256], STEP16),
    ("mxf4nvf4", 2): ([128, 256], STEP16),
    ("i8", 1): ([64, 128], I8_CG1),
    ("i8", 2): ([128, 256], I8_CG2),
}


@pytest.mark.parametrize(("kind", "cta_group"), sorted(TABLE))
def test_legal_mn_is_the_ptx_table(kind: str, cta_group: int) -> None:
    ms, ns = TABLE[(kind, cta_group)]
    got = legal_mn(kind, cta_group, "K")
    assert sorted(got) == ms
    for m in ms:
        assert list(got[m]) == ns, (kind, cta_group, m)


def test_i8_n24_is_in_the_table_and_n40_is_not() -> None:
    # the case CuTe's traits disagree on: 24 is listed, 40 is not (steps of 16 after 32)
    assert 24 in legal_mn("i8", 1, "K")[128]
    assert 40 not in legal_mn("i8", 1, "K")[128]
    assert 48 in legal_mn("i8", 1, "K")[64]
