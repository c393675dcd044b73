"""CuTe DSL (placeholder filled below)."""
