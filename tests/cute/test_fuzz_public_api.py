"""Fuzz of the public API (all of ``cute_py`` but the JIT names and ``cute_py.nvgpu``) with hostile values.

Every function is called with arguments drawn from a mix of plausible values for each
parameter and hostile ones: floats, numpy scalars, ``None``, strings, bools, negative,
zero and huge ints, deep nesting, lists, and objects of the wrong kind.  Each call must
either return a result that satisfies the function's law, checked here by evaluation
against small reference implementations, or raise a ``CuteError``; it must not hang and
no other exception type may escape. The values and the reference implementations are in ``_fuzz_values``, the
laws in ``_fuzz_laws``; this module has the table of functions, their roles and laws, and the tests.
"""

import collections
import io
import os
import signal

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cute_py as cute
from cute_py import Layout
from cute_py.errors import CuteError

from _fuzz_values import CALL_SECONDS, Invalid, ROLES, arg, injective, ref
from _fuzz_laws import (law_assume, law_ceil_div, law_coalesce, law_complement, law_composition, law_crd2idx,
                        law_depth, law_divide, law_downcast, law_elem_less, law_exactness,
                        law_filter, law_flatten, law_identity_layout, law_idx2crd,
                        law_inner_product, law_layout, law_layout_call, law_left_inverse,
                        law_make_swizzle, law_max_alignment, law_parse, law_pointer,
                        law_pointer_add, law_position_independent, law_predicate,
                        law_prefix_product, law_product, law_product_op, law_rank,
                        law_right_inverse, law_round_up, law_shape_div, law_size,
                        law_suffix_product, law_swizzle, law_swizzle_call, law_sym_int,
                        law_tensor_read, law_tile_to_shape, law_upcast, law_view, with_any)


def _ptr():
    return cute.make_ptr(cute.Float32, 4096, cute.AddressSpace.gmem, 16)


def _law_repeat_like(args, r):
    # the target's nesting, every leaf the value (as an IntTuple: lists are tuples, integer-likes ints)
    target = args[1]
    try:
        x = ref(args[0], none=True)
    except Invalid:
        x = args[0]  # a layout or another leaf of the algebra, as it is

    def same(a, t):
        if isinstance(t, (tuple, list)):
            assert isinstance(a, tuple) and len(a) == len(t)
            for u, v in zip(a, t):
                same(u, v)
        else:
            assert a == x
    same(r, target)


def _law_shape(args, r):
    x = args[0]
    if isinstance(x, cute.Layout):
        assert r == x.shape
    elif isinstance(x, tuple):
        assert r == x


def _law_rmem_like(args, r):
    # a register tensor of the source's shape, compact but for the source's stride-0 (broadcast) modes; where the
    # source itself overlaps (two modes of one stride), the order of its strides ties, as in C++'s make_layout_like
    assert r.shape == args[0].shape
    if cute.size(r.layout) and cute.size(args[0]) <= 4096 and injective(cute.filter_zeros(args[0])):
        assert cute.cosize(r.layout) == cute.size(cute.filter_zeros(r.layout))


API = [
    # IntTuples
    ("product", cute.product, ["tuple"], law_product),
    ("product_each", cute.product_each, ["tuple"], None),
    ("size", cute.size, ["tuple"], law_size),
    ("size_layout", cute.size, ["layout"], law_size),
    ("rank", cute.rank, ["tuple"], law_rank),
    ("depth", cute.depth, ["tuple"], law_depth),
    ("get", cute.get, ["tuple", "coord"], None),
    ("ceil_div", cute.ceil_div, ["tuple", "tuple"], law_ceil_div),
    ("round_up", cute.round_up, ["tuple", "tuple"], law_round_up),
    ("assume", cute.assume, ["any", "any"], law_assume),
    ("sym_int", cute.sym_int, ["any"], law_sym_int),
    ("sym_int32", cute.sym_int32, ["any"], law_sym_int),
    ("sym_int64", cute.sym_int64, ["any"], law_sym_int),
    ("SymInt", lambda a, b: cute.SymInt.leaf("s", a, b), ["any", "any"], law_sym_int),
    ("shape_div", cute.shape_div, ["tuple", "tuple"], law_shape_div),
    ("prefix_product", cute.prefix_product, ["tuple"], law_prefix_product),
    ("suffix_product", cute.suffix_product, ["tuple"], law_suffix_product),
    ("crd2idx", cute.crd2idx, ["coord", "tuple"], law_crd2idx),
    ("crd2idx_strided", cute.crd2idx, ["coord", "tuple", "tuple"], law_crd2idx),
    ("idx2crd", cute.idx2crd, ["int", "shape"], law_idx2crd),
    ("inner_product", cute.inner_product, ["tuple", "tuple"], law_inner_product),
    ("elem_scale", cute.elem_scale, ["tuple", "tuple"], None),
    ("elem_less", cute.elem_less, ["tuple", "tuple"], law_elem_less),
    ("is_congruent", cute.is_congruent, ["tuple", "tuple"], law_predicate),
    ("is_weakly_congruent", cute.is_weakly_congruent, ["tuple", "tuple"], law_predicate),
    ("is_compatible", cute.is_compatible, ["tuple", "tuple"], law_predicate),
    ("is_static", cute.is_static, ["tuple"], law_predicate),
    ("flatten", cute.flatten, ["tuple"], law_flatten),
    # layouts
    ("Layout", Layout, ["tuple"], law_layout),
    ("Layout_strided", Layout, ["tuple", "tuple"], law_layout),
    ("make_layout", cute.make_layout, ["layout", "layout"], law_layout),
    ("make_ordered_layout", cute.make_ordered_layout, ["shape", "tuple"], law_layout),
    ("make_layout_like", cute.make_layout_like, ["layout"], law_layout),
    ("layout_call", lambda layout, c: layout(c), ["layout!", "coord"], law_layout_call),
    ("cosize", cute.cosize, ["layout"], None),
    ("coalesce", cute.coalesce, ["layout"], law_coalesce),
    ("coalesce_profile", cute.coalesce, ["layout", "tuple"], law_coalesce),
    ("filter", cute.filter, ["layout"], law_filter),
    ("filter_zeros", cute.filter_zeros, ["layout", "tuple"], None),
    ("select", cute.select, ["layout", "tuple"], None),
    ("group_modes", cute.group_modes, ["layout", "int", "int"], None),
    ("append", cute.append, ["tuple", "tuple", "int"], None),
    ("prepend", cute.prepend, ["layout", "layout"], None),
    ("slice_", cute.slice_, ["layout", "coord"], None),
    ("slice_and_offset", cute.slice_and_offset, ["coord", "layout"], None),
    ("dice", cute.dice, ["coord", "tuple"], None),
    ("flatten_layout", cute.flatten, ["layout"], law_flatten),
    # the algebra
    ("composition", cute.composition, ["layout", "layout"], law_composition),
    ("composition_tiler", cute.composition, ["layout", "tiler"], law_composition),
    ("complement", cute.complement, ["layout"], law_complement),
    ("complement_cotarget", cute.complement, ["layout", "tuple"], law_complement),
    ("right_inverse", cute.right_inverse, ["layout"], law_right_inverse),
    ("left_inverse", cute.left_inverse, ["layout"], law_left_inverse),
    ("max_common_vector", cute.max_common_vector, ["layout", "layout"], None),
    ("max_common_layout", cute.max_common_layout, ["layout", "layout"], None),
    ("max_alignment", cute.max_alignment, ["layout"], law_max_alignment),
    ("max_alignment_composed", cute.max_alignment, ["composed"], law_max_alignment),
    ("nullspace", cute.nullspace, ["layout"], None),
    # tiling
    ("logical_divide", cute.logical_divide, ["layout", "tiler"], law_divide),
    ("zipped_divide", cute.zipped_divide, ["layout", "tiler"], None),
    ("tiled_divide", cute.tiled_divide, ["layout", "tiler"], None),
    ("flat_divide", cute.flat_divide, ["layout", "tiler"], None),
    ("logical_product", cute.logical_product, ["layout", "tiler"], law_product_op),
    ("zipped_product", cute.zipped_product, ["layout", "tiler"], None),
    ("tiled_product", cute.tiled_product, ["layout", "tiler"], None),
    ("flat_product", cute.flat_product, ["layout", "tiler"], None),
    ("blocked_product", cute.blocked_product, ["layout", "layout"], law_product_op),
    ("raked_product", cute.raked_product, ["layout", "layout"], law_product_op),
    ("tile_to_shape", cute.tile_to_shape, ["layout", "shape"], law_tile_to_shape),
    ("make_layout_tv", cute.make_layout_tv, ["layout", "layout"], None),
    # recast, swizzles, composed layouts, bases
    ("upcast", cute.upcast, ["layout", "bits"], law_upcast),
    ("downcast", cute.downcast, ["layout", "bits"], law_downcast),
    ("recast_layout", cute.recast_layout, ["bits", "bits", "layout"], None),
    ("upcast_composed", cute.upcast, ["composed", "bits"], None),
    ("upcast_exactness", cute.upcast_exactness, ["layout", "bits"], law_exactness),
    ("upcast_exactness_composed", cute.upcast_exactness, ["composed", "bits"], law_exactness),
    ("recast_exactness", cute.recast_exactness, ["bits", "bits", "layout"], law_exactness),
    ("Swizzle", cute.Swizzle, ["int", "int", "int"], law_swizzle),
    ("swizzle_call", lambda sw, x: sw(x), ["swizzle!", "int"], law_swizzle_call),
    ("make_swizzle", lambda y, z: cute.make_swizzle(None, yyy_msk=y, zzz_msk=z), ["int", "int"], law_make_swizzle),
    ("ComposedLayout", cute.make_composed_layout, ["swizzle", "int", "layout"], None),
    ("composed_call", lambda c, x: c(x), ["composed!", "coord"], None),
    ("composed_composition", cute.composition, ["composed", "tiler"], None),
    ("layout_o_swizzle", cute.composition, ["layout", "swizzle"], None),
    ("composed_divide", cute.zipped_divide, ["composed", "tiler"], None),
    ("composed_slice", cute.slice_and_offset, ["coord", "composed"], None),
    ("get_swizzle_portion", cute.get_swizzle_portion, ["composed"], None),
    ("E", cute.E, ["int"], None),
    ("ScaledBasis", cute.ScaledBasis, ["int", "tuple"], None),
    ("make_basis_like", cute.make_basis_like, ["shape"], None),
    ("make_identity_layout", cute.make_identity_layout, ["shape"], law_identity_layout),
    ("basis_get", cute.basis_get, ["int", "tuple"], None),
    # parsing
    ("parse_layout", cute.parse_layout, ["text"], law_parse),
    ("parse_int_tuple", cute.parse_int_tuple, ["text"], None),
    ("parse_swizzle", cute.parse_swizzle, ["text"], None),
    # host tensors and pointers
    ("make_tensor", lambda n, layout: cute.make_tensor(np.arange(64, dtype=np.float32), layout), ["int", "layout"], None),
    ("tensor_read", lambda t, c: t[c], ["tensor!", "coord"], law_tensor_read),
    ("tensor_write", lambda t, c: t.__setitem__(c, 1.0), ["tensor!", "coord"], None),
    ("local_tile", cute.local_tile, ["tensor", "tiler", "coord"], law_view),
    ("local_partition", cute.local_partition, ["tensor", "layout", "int"], law_view),
    ("domain_offset", cute.domain_offset, ["coord", "tensor"], None),
    ("recast_tensor", cute.recast_tensor, ["tensor", "dtype"], None),
    ("make_fragment_like", cute.make_fragment_like, ["layout", "dtype"], None),
    ("make_rmem_tensor_like", cute.make_rmem_tensor_like, ["layout", "dtype"], _law_rmem_like),
    ("repeat_like", cute.repeat_like, ["int", "tuple"], _law_repeat_like),
    ("shape", cute.shape, ["layout"], _law_shape),
    ("shape_tuple", cute.shape, ["tuple"], _law_shape),
    ("leading_dim", cute.leading_dim, ["shape", "tuple"], None),
    ("make_identity_tensor", cute.make_identity_tensor, ["shape"], None),
    ("make_ptr", lambda a, al: cute.make_ptr(cute.Float32, a, cute.AddressSpace.gmem, al), ["int", "bits"], law_pointer),
    ("make_ptr_any", cute.make_ptr, ["dtype", "int", "any", "bits"], None),
    ("Pointer", cute.Pointer, ["dtype", "any", "bits", "int"], None),
    ("pointer_add", lambda p, n: p + n, ["pointer!", "int"], law_pointer_add),
    ("Tensor", cute.Tensor, ["any", "layout"], None),
    ("make_coord_tensor", cute.tensor.make_coord_tensor, ["layout"], None),
    ("make_fake_tensor", cute.runtime.make_fake_tensor, ["dtype", "shape", "tuple"], None),
    ("make_smem_layout_atom", cute.make_smem_layout_atom, ["any", "bits"], None),
    # the remaining basis, composed and swizzle helpers
    ("basis_value", cute.basis_value, ["int"], None),
    ("as_arith_tuple", cute.as_arith_tuple, ["any"], None),
    ("ArithTuple_add", lambda t, x: cute.ArithTuple(t) + x, ["shape!", "tuple"], None),
    ("basis_scale", lambda k: cute.E(1) * k, ["int"], None),
    ("get_nonswizzle_portion", cute.get_nonswizzle_portion, ["composed"], None),
    ("make_composed_layout", cute.make_composed_layout, ["any", "int", "layout"], None),
    ("SmemPtrFlag", cute.SmemPtrFlag, ["bits", "int"], None),
    ("is_byte_swizzled", cute.is_byte_swizzled, ["composed"], law_predicate),
    ("is_byte_swizzled_any", cute.is_byte_swizzled, ["any"], law_predicate),
    ("as_position_independent_swizzle_layout", cute.as_position_independent_swizzle_layout, ["composed"], None),
    ("flagged_position_independent", cute.as_position_independent_swizzle_layout, ["flagged"], law_position_independent),
    # shared storage and pointer casts
    ("recast_ptr", cute.recast_ptr, ["pointer!", "any", "dtype"], None),
    ("size_in_bytes", cute.size_in_bytes, ["dtype", "layout"], None),
    ("size_in_bytes_any", cute.size_in_bytes, ["any", "any"], None),
    # multicast masks of a cluster layout (static coordinates here; traced ones in tests/jit)
    ("make_layout_image_mask", cute.make_layout_image_mask, ["layout", "tuple", "int"], None),
    # printing and the copy atoms
    ("print_layout", lambda x: cute.print_layout(x, file=io.StringIO()), ["layout"], None),
    ("print_layout_any", lambda x: cute.print_layout(x, file=io.StringIO()), ["any"], None),
    ("make_copy_atom", lambda d, b: cute.make_copy_atom(cute.CopyUniversalOp(), d, b), ["dtype", "bits"], None),
    ("make_tiled_copy", lambda tv, t: cute.make_tiled_copy(_universal_atom(), tv, t), ["layout", "tiler"], None),
    ("make_tiled_copy_tv", lambda a, b: cute.make_tiled_copy_tv(_universal_atom(), a, b), ["layout", "layout"], None),
]
ROLES["pointer"] = st.just(_ptr())


def _universal_atom():
    return cute.make_copy_atom(cute.CopyUniversalOp(), cute.Float32)


OUTCOMES = collections.Counter()  # (name, "returned" | "raised"): how often each outcome was seen


def _call(fn, args):
    def on_alarm(signum, frame):
        raise TimeoutError(f"the call did not return within {CALL_SECONDS} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, CALL_SECONDS)
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _show(args):
    out = []
    for a in args:
        try:
            text = repr(a)
        except Exception:
            text = type(a).__name__
        out.append(text if len(text) < 120 else text[:117] + "...")
    return ", ".join(out)


@pytest.mark.parametrize("name, fn, roles, law", API, ids=[e[0] for e in API])
@settings(max_examples=int(os.environ.get("CUTE_PY_FUZZ_EXAMPLES", 40)), deadline=None,
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_public_api_returns_a_lawful_result_or_raises_a_cute_error(name, fn, roles, law, data):
    args = [data.draw(arg(r), label=r) for r in roles]
    try:
        result = _call(fn, args)
    except CuteError:
        OUTCOMES[name, "raised"] += 1
        return
    except TimeoutError:
        pytest.fail(f"{name}({_show(args)}) hangs")
    except Exception as e:  # noqa: BLE001 - the point of the test
        pytest.fail(f"{name}({_show(args)}) raised {type(e).__name__}: {e}")
    OUTCOMES[name, "returned"] += 1
    try:
        with_any(law)(args, result)
    except Invalid:
        pytest.fail(f"{name}({_show(args)}) accepted an invalid argument and returned {result!r}")
    except AssertionError as e:
        pytest.fail(f"{name}({_show(args)}) returned {result!r}, which breaks its law: {e}")


def test_the_fuzz_covers_every_public_algebra_and_tensor_name():
    fuzzed = {getattr(e[1], "__name__", "") for e in API} | {e[0] for e in API}
    skipped = {  # names that are dtypes, enums, error classes, caches, printing, the copy atoms, or type predicates
        "AddressSpace", "ArithTuple", "BFloat16", "Boolean", "CopyAtom", "CopyOp", "CopyUniversalOp", "CuteError", "CuteIndexError",
        "CuteTypeError", "CuteValueError", "DivisibilityError", "Float16", "Float32", "Float64", "Float8E4M3FN",
        "Float8E5M2", "Int16", "Int32", "Int64", "Int8", "NotInjectiveError", "RankError", "SmemLayoutAtomKind",
        "StaticValueRequired", "TFloat32", "ThrCopy", "TiledCopy", "Uint16", "Uint32", "Uint64", "Uint8", "Pointer",
        "Tensor", "clear_caches", "memoization", "nvgpu", "runtime", "viz", "print_layout", "print_tensor",
        "is_layout", "is_swizzle", "is_tensor", "is_composed_layout", "is_scaled_basis", "dtypes",
        "dtype",  # the element type of a name (tests/jit/test_dsl_program_pieces.py)
    }
    # the compiler's names (decorators, kernel builtins, device copies) are exercised by tests/jit and tests/gpu
    skipped |= {"Compiled", "DeviceArraySpec", "arch", "async_copy", "autovec_copy", "basic_copy", "compile",
                "compiler", "copy", "if_", "jit",
                "kernel", "make_fragment", "predicate", "range", "tma_copy", "struct", "Constexpr", "c2d_im2col"}
    # the numeric base class and the submodules of the DSL's layout (utils, pipeline: tests/jit, tests/cute)
    skipped |= {"Numeric", "pipeline", "utils"}
    # the type aliases of annotations (no values to fuzz)
    skipped |= {"Coord", "IntTuple", "Shape", "Stride", "Tile", "Tiler", "XTuple"}
    # the MMA atoms and their device gemm (tests/cute/test_mma_*.py, tests/jit, tests/gpu)
    skipped |= {"MmaAtom", "MmaOp", "TiledMma", "ThrMma", "gemm", "make_mma_atom", "make_tiled_mma",
                "make_tiled_copy_A", "make_tiled_copy_B", "make_tiled_copy_C", "make_tiled_copy_C_atom",
                "make_tiled_copy_S", "make_tiled_copy_D"}
    missing = {n for n in cute.__all__ if n not in fuzzed and n not in skipped}
    assert not missing, f"public names without a fuzz entry: {sorted(missing)}"
