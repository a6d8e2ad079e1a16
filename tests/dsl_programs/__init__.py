"""Programs written against the CuTe DSL's API, as NVIDIA's public examples use it; each differs from a DSL
program only in its imports (``import cute_py as cutlass``, ``import cute_py as cute``, ...)."""
