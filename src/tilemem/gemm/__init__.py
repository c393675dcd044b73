"""Production GEMM kernels built on tilemem's plans.

``plan.py`` holds their memory plans (plan-only: no IR, no CUDA); ``hopper.py``
the persistent warp-specialised Hopper kernel and its host-side launcher.
"""
