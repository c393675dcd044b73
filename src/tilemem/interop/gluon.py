"""tilemem layouts as Triton Gluon layouts (placeholder filled below)."""
