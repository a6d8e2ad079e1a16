"""cute_py: CuTe's layout algebra in pure Python, with copy atoms for NVIDIA Hopper.

``import cute_py`` needs only the standard library.  The names follow NVIDIA's
CuTe DSL so code and habits move between the two.
"""

from .core.memo import clear_caches, memoization
from .core.algebra import complement, composition
from .core.inverse import left_inverse, max_alignment, max_common_layout, max_common_vector, nullspace, right_inverse
from .errors import (CuteError, CuteIndexError, CuteTypeError, CuteValueError, DivisibilityError, NotInjectiveError,
                     RankError, StaticValueRequired)
from .core.congruence import (elem_less, elem_scale, inner_product, is_compatible, is_congruent, is_weakly_congruent,
                              leading_dim, repeat_like)
from .core.coords import crd2idx, idx2crd, prefix_product, suffix_product
from .core.division import ceil_div, round_up, shape_div
from .core.int_tuple import depth, get, rank, size
from .core.leaves import assume
from .core.normalise import is_static
from .core.products import product, product_each
from .core.coalescing import coalesce, filter, filter_zeros
from .core.layout import cosize, is_layout, Layout, make_layout, make_layout_like, make_ordered_layout
from .core.modes import append, dice, flatten, group_modes, prepend, select, shape, slice_, slice_and_offset
from .core.basis import (ArithTuple, E, ScaledBasis, as_arith_tuple, basis_get, basis_value, is_scaled_basis,
                         make_basis_like, make_identity_layout)
from .core.composed import (ComposedLayout, SmemPtrFlag, as_position_independent_swizzle_layout,
                            get_nonswizzle_portion, get_swizzle_portion, is_byte_swizzled, is_composed_layout,
                            make_composed_layout)
from .atom import (CopyAtom, CopyOp, CopyUniversalOp, ThrCopy, TiledCopy, make_copy_atom, make_tiled_copy,
                   make_tiled_copy_D, make_tiled_copy_S, make_tiled_copy_tv)
from .mma import MmaAtom, MmaOp, TiledMma, make_mma_atom, make_tiled_mma
from .mma_thread import ThrMma  # TiledMma.get_slice makes its ThrMma, registered by this module
from .tensor.dtypes import (BFloat16, Boolean, Float8E4M3FN, Float8E5M2, Float16, Float32, Float64, Int8, Int16, Int32,
                            Int64, TFloat32, Uint8, Uint16, Uint32, Uint64)
from .core.parse import parse_int_tuple, parse_layout, parse_swizzle
from .core.recast import downcast, recast_exactness, recast_layout, upcast, upcast_exactness
from .core.swizzle import Swizzle, is_swizzle, make_swizzle
from .tensor.pointer import AddressSpace, Pointer, make_ptr, recast_ptr
from .tensor.tensor import Tensor, is_tensor, make_fragment_like, make_identity_tensor, make_tensor, recast_tensor
from .tensor.partition import domain_offset, local_partition, local_tile
from .tensor.rmem import make_rmem_tensor_like
from .core.typing import Coord, IntTuple, Shape, Stride, Tile, Tiler, XTuple
from .core.symbolic import SymInt, sym_int, sym_int32, sym_int64
from .core.tiling import (blocked_product, flat_divide, flat_product, logical_divide, logical_product, make_layout_tv,
                          raked_product, tile_to_shape, tiled_divide, tiled_product, zipped_divide, zipped_product)

from .tensor import dtypes
from .tensor.dtypes import DType as Numeric, dtype

__version__ = "0.1.0"

# Names that load on first use, so that `import cute_py` stays fast and light: the copies of MMA operands and
# gemm, the Hopper operations (cpasync, TMA, warp and warpgroup MMA, smem layout atoms, multicast masks), the
# host run-time helpers, the compiler (MLIR, cuda-python), the kernel builtins and the pictures.
# name -> (module, attribute or None for the module)
_LAZY = {
    **{n: ("mma_copy", n) for n in ("make_tiled_copy_A", "make_tiled_copy_B", "make_tiled_copy_C",
                                    "make_tiled_copy_C_atom")},
    "gemm": ("mma_gemm", "gemm"),
    "SmemLayoutAtomKind": ("nvgpu.warpgroup.smem", "SmemLayoutAtomKind"),
    "make_smem_layout_atom": ("nvgpu.warpgroup.smem", "make_smem_layout_atom"),
    "make_layout_image_mask": ("nvgpu.tma.multicast", "make_layout_image_mask"),
    "nvgpu": ("nvgpu", None),
    "runtime": ("runtime", None),
    "kernel": ("compiler", "kernel"),
    "math": ("compiler.builtins.math", None),
    "printf": ("compiler.builtins.printing", "printf"),
    "jit": ("compiler", "jit"),
    "compile": ("compiler", "compile"),
    "copy": ("compiler", "copy"),
    "async_copy": ("compiler", "async_copy"),
    "autovec_copy": ("compiler.builtins.thread_copy", "autovec_copy"),
    "basic_copy": ("compiler.builtins.thread_copy", "basic_copy"),
    "tma_copy": ("compiler", "tma_copy"),
    "c2d_im2col": ("compiler", "c2d_im2col"),
    "range": ("compiler", "range"),
    "range_constexpr": ("compiler", "range_constexpr"),
    "const_expr": ("compiler", "const_expr"),
    "if_": ("compiler", "if_"),
    "make_fragment": ("compiler", "make_fragment"),
    "make_rmem_tensor": ("compiler", "make_rmem_tensor"),
    "where": ("compiler.lang.tensor_ssa", "where"),
    "ReductionOp": ("compiler.lang.tensor_ssa", "ReductionOp"),
    "max": ("compiler.lang.tensor_ssa", "maximum"),
    "min": ("compiler.lang.tensor_ssa", "minimum"),
    "TensorSSA": ("compiler.lang.tensor_ssa", "TensorSSA"),
    "predicate": ("compiler", "predicate"),
    "DeviceArraySpec": ("compiler", "DeviceArraySpec"),
    "Compiled": ("compiler", "Compiled"),
    "compiler": ("compiler", None),
    **{n: ("compiler.specs.options", n) for n in (
        "GenerateLineInfo", "OptLevel", "EnableAssertions", "KeepPTX", "KeepCUBIN", "GPUArch", "DumpDir",
        "PtxasOptions", "KeepSASS", "RDC")},
    "Constexpr": ("compiler.specs.annotations", "Constexpr"),
    "dsl_user_op": ("compiler.specs.annotations", "dsl_user_op"),
    "struct": ("compiler.lang.smem_struct", "struct"),
    "size_in_bytes": ("compiler.lang.smem_struct", "size_in_bytes"),
    "arch": ("arch", None),
    "cuda": ("cuda", None),
    "utils": ("utils", None),
    "pipeline": ("pipeline", None),
    "viz": ("viz", None),
    "print_layout": ("viz", "print_layout"),
    "print_tensor": ("viz", "print_tensor"),
}


def __getattr__(name):
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    try:
        module = importlib.import_module(f".{where[0]}", __name__)
    except ImportError as e:  # an optional dependency: say which extra brings it
        from .errors import is_missing_dependency, missing_extra

        if isinstance(e, CuteError) or not is_missing_dependency(e):
            raise

        raise missing_extra(name, e) from e
    value = module if where[1] is None else getattr(module, where[1])
    if name not in _SHADOWED_BUILTINS:  # later reads are plain attribute reads (a builtin keeps its own name here)
        globals()[name] = value
    return value


_SHADOWED_BUILTINS = {"range", "min", "max", "compile"}


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


def _repr_svg_(obj):
    """Jupyter's rich display of layouts and tiled copies: the picture of :mod:`cute_py.viz`, or ``None``
    (the text repr) when it cannot be drawn.  Registered here so that the algebra never imports the pictures."""
    from .viz import repr_svg

    return repr_svg(obj)


for _cls in (Layout, ComposedLayout, TiledCopy):
    _cls._repr_svg_ = _repr_svg_
del _cls

__all__ = [
    "Coord",
    "IntTuple",
    "Shape",
    "Stride",
    "Tile",
    "Tiler",
    "XTuple",
    "AddressSpace",
    "append",
    "as_position_independent_swizzle_layout",
    "ArithTuple",
    "as_arith_tuple",
    "basis_get",
    "basis_value",
    "BFloat16",
    "blocked_product",
    "Boolean",
    "ceil_div",
    "assume",
    "SymInt",
    "sym_int",
    "sym_int32",
    "sym_int64",
    "round_up",
    "clear_caches",
    "coalesce",
    "complement",
    "ComposedLayout",
    "composition",
    "CopyAtom",
    "CopyOp",
    "CopyUniversalOp",
    "cosize",
    "crd2idx",
    "CuteError",
    "CuteIndexError",
    "CuteTypeError",
    "CuteValueError",
    "depth",
    "dice",
    "DivisibilityError",
    "domain_offset",
    "downcast",
    "E",
    "elem_less",
    "elem_scale",
    "filter",
    "filter_zeros",
    "flat_divide",
    "flat_product",
    "flatten",
    "Float16",
    "Float32",
    "Float64",
    "Float8E4M3FN",
    "Float8E5M2",
    "get",
    "get_nonswizzle_portion",
    "get_swizzle_portion",
    "group_modes",
    "idx2crd",
    "inner_product",
    "Int16",
    "Int32",
    "Int64",
    "Int8",
    "is_byte_swizzled",
    "is_compatible",
    "is_composed_layout",
    "is_congruent",
    "is_layout",
    "is_scaled_basis",
    "is_static",
    "is_swizzle",
    "is_tensor",
    "is_weakly_congruent",
    "leading_dim",
    "Layout",
    "left_inverse",
    "local_partition",
    "local_tile",
    "logical_divide",
    "logical_product",
    "make_basis_like",
    "make_composed_layout",
    "make_copy_atom",
    "make_fragment_like",
    "make_rmem_tensor_like",
    "make_identity_layout",
    "make_identity_tensor",
    "make_layout",
    "make_layout_like",
    "make_layout_tv",
    "make_ordered_layout",
    "make_ptr",
    "make_smem_layout_atom",
    "make_swizzle",
    "make_tensor",
    "make_tiled_copy",
    "make_tiled_copy_tv",
    "make_tiled_copy_A",
    "make_tiled_copy_B",
    "make_tiled_copy_C",
    "make_tiled_copy_C_atom",
    "make_tiled_copy_S",
    "make_tiled_copy_D",
    "make_mma_atom",
    "make_tiled_mma",
    "MmaAtom",
    "MmaOp",
    "TiledMma",
    "ThrMma",
    "gemm",
    "max_common_layout",
    "max_alignment",
    "max_common_vector",
    "memoization",
    "NotInjectiveError",
    "nullspace",
    "nvgpu",
    "parse_int_tuple",
    "parse_layout",
    "parse_swizzle",
    "Pointer",
    "prefix_product",
    "prepend",
    "print_layout",
    "print_tensor",
    "product",
    "product_each",
    "raked_product",
    "rank",
    "repeat_like",
    "RankError",
    "recast_layout",
    "recast_tensor",
    "recast_ptr",
    "struct",
    "size_in_bytes",
    "right_inverse",
    "runtime",
    "ScaledBasis",
    "select",
    "shape",
    "shape_div",
    "size",
    "slice_",
    "slice_and_offset",
    "make_layout_image_mask",
    "SmemLayoutAtomKind",
    "SmemPtrFlag",
    "StaticValueRequired",
    "suffix_product",
    "Swizzle",
    "Tensor",
    "TFloat32",
    "ThrCopy",
    "tile_to_shape",
    "tiled_divide",
    "tiled_product",
    "TiledCopy",
    "Uint16",
    "Uint32",
    "Uint64",
    "Uint8",
    "upcast",
    "upcast_exactness",
    "recast_exactness",
    "viz",
    "zipped_divide",
    "zipped_product",
    "dtypes",
    "dtype",
    "kernel",
    "jit",
    "compile",
    "copy",
    "async_copy",
    "autovec_copy",
    "basic_copy",
    "tma_copy",
    "c2d_im2col",
    "range",
    "if_",
    "make_fragment",
    "predicate",
    "DeviceArraySpec",
    "Compiled",
    "compiler",
    "Constexpr",
    "arch",
    "utils",
    "pipeline",
    "Numeric",
]
