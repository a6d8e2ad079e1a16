"""The layout algebra: IntTuples (their structure in ``int_tuple``, which also re-exports the rest; their leaves,
static and run-time, in ``leaves``; printing in ``notation``; the normalisation of user input in ``normalise``;
products and sums in ``products``; ``shape_div``, ``ceil_div`` and ``round_up`` in ``division``; comparisons and
congruence in ``congruence``; coordinates and compact strides in ``coords``), ``Layout`` and its basic operations (``layout``; coalescing and filtering in
``coalescing``; modes, slices and dice in ``modes``), composition and complement (``algebra``), inverses,
common vectors, nullspaces and alignment (``inverse``), divides and products (``tiling``), swizzles
(``swizzle``), composed layouts (``composed``), basis strides (``basis``), recast (``recast``), run-time
integers with known values (``valued``), parsing of CuTe notation (``parse``) and memoisation (``memo``).

This layer imports only the standard library and :mod:`cute_py.errors`; the package façade
(``cute_py``) re-exports its public names (each module's ``__all__``).

**Internal API.** The names below, outside the ``__all__`` lists, are what the other modules of cute_py
may import from this layer; nothing else outside ``__all__`` is imported across modules (a test checks it).
A name ending in ``_unchecked`` is the public function of the same stem on arguments that are already
normalised — IntTuples of ``int`` and :class:`~cute_py.core.leaves.DynamicInt` leaves, valid layouts —
with no conversion and no argument checks (the library's own hot paths); ``make_layout_unchecked`` builds a
layout from such a shape and stride without validating them.
"""

INTERNAL_API = {
    "int_tuple": (
        "depth_unchecked",
        "exchange_sort",                 # CuTe's (unstable) exchange sort, as the indices of the sorted keys
        "flatten_unchecked",
        "get_unchecked",
        "int_like",                      # re-exported from normalise, where it is defined
        "is_int_value",                  # a static int equal to a value
        "product_unchecked",             # re-exported from products, where it is defined
        "unwrap_single",                 # the element of a 1-tuple, else the tuple
    ),
    "normalise": (
        "as_mode",                       # a (nested) mode index given as an int or a sequence, as a tuple
        "index_or_none",                 # the int of an integer-like value, or None
        "int_like",                      # the int of an integer-like value that is no bool, or None
        "is_shaped",                     # a layout, tensor or other algebra object with a shape
        "is_static_unchecked",
        "depth_guarded",                 # a recursive function guarded against nesting deeper than MAX_DEPTH
        "need_static",                   # StaticValueRequired unless a value is static
        "need_nonzero_stride",           # StaticValueRequired for a run-time stride where stride-0 modes are removed
        "shape_of",                      # the shape of an IntTuple, layout or tensor
    ),
    "products": (
        "product_each_unchecked",
        "product_unchecked",
        "product_like_unchecked",        # the product of a tuple over the profile of another
    ),
    "division": (
        "ceil_div_unchecked",
    ),
    "congruence": (
        "as_tiler_tuple",                # a tiler normalised: lists to tuples, layouts and None kept
        "congruent_unchecked",
        "evenly_divides_unchecked",
        "filter_zeros_tuple_unchecked",
        "weakly_congruent_unchecked",
        "zeros_like",                    # zeros of the profile of an IntTuple
    ),
    "coords": (
        "compact_col_major_unchecked",
        "crd2idx_colex",                 # the colexicographic index of a coordinate in a shape
        "crd2idx_unchecked",
        "idx2crd_unchecked",
    ),
    "layout": (
        "UPPER_LAYER_OPERATIONS",        # where the layers above register the operations a Layout offers
        "check_layout",                  # CuteTypeError unless a Layout, naming the operation
        "concat_layouts",                # layouts as the modes of one layout
        "has_none",                      # a coordinate with a None (a slice)
        "is_flat_int_tuple",             # a flat tuple of ints (a coordinate needing no normalising)
        "limit_depth",                   # a layout, unless nested deeper than MAX_DEPTH
        "make_layout_unchecked",
        "map_outer",                     # the outer-layout mapper of a composed layout, or None
        "offset_table",                  # a static layout's values at every index, as a list
        "vector_layout",                 # ``n:1`` (``1:0`` for a static 1)
    ),
    "function_inner": (
        "FunctionInner",                 # a Python function as a composed layout's inner function
    ),
    "coalescing": (
        "coalesce_flat",                 # CuTe's back-to-front coalescing of flat modes, as a layout
        "coalesce_flat_lists",           # ... as lists of shapes and strides
        "coalesce_unchecked",
    ),
    "algebra": (
        "complement_unchecked",
        "composition_unchecked",
        "disjoint_complement",           # a complement that keeps order and disjointness (it may leave gaps)
        "need_layout",                   # CuteTypeError unless a Layout
    ),
    "recast": (
        "upcast_unchecked",              # CuTe's upcast<n>, rounding as the C++ does
    ),
    "swizzle": (
        "downcast_swizzle",              # a swizzle over elements n times narrower
        "upcast_swizzle",                # a swizzle over elements n times wider
    ),
}
