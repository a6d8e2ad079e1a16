"""The layout algebra: IntTuples (``int_tuple``), ``Layout`` and its operations (``layout``), composition,
complement and inverses (``algebra``), divides and products (``tiling``), swizzles (``swizzle``), composed
layouts (``composed``), basis strides (``basis``), recast (``recast``), run-time integers with known values
(``valued``), parsing of CuTe notation (``parse``) and memoisation (``memo``).

This layer imports only the standard library and :mod:`cute_py.errors`; the package façade
(``cute_py``) re-exports its public names.
"""
