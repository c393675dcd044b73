import pytest

pytest.importorskip("cuda.core", reason="compiling needs the cuda extra")
