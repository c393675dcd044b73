"""CuTe C++ layout types as text (placeholder filled below)."""
