"""``ptx_mma_sm70``: Volta's tensor-core instruction under TileLang's name, ``mma.sync.aligned.m8n8k4`` with f16
inputs and f16 or f32 accumulators (still executed by sm_90).

Each quad-pair of the warp (lanes ``4q..4q+3`` and ``4q+16..4q+19``) computes its own ``8x8x4`` product; TVM and
TileLang call the warp's four of them ``m16n16k4``, and both spellings are taken. The fragments are the PTX ISA's
for ``mma.m8n8k4`` with ``.f16`` inputs: per thread 4 f16 of A (two registers), 4 f16 of B, and 8 accumulators
(8 f32 registers, or 4 registers of two f16).
"""

from __future__ import annotations

from typing import Any

from ...core.int_tuple import product
from ...errors import TraceError
from ...tensor.dtypes import Float16, Float32
from ...tensor.tensor import Tensor
from ...tensor.engines import ArrayEngine
from ..lang.memory import pack, unpack
from ..lang.values import TracedFloat, wrap
from ..emit import warp

__all__ = ["ptx_mma_sm70"]

_SHAPES = ("m16n16k4", "m8n8k4")
_LAYOUTS = ("row", "col")
_DTYPES = {"fp16": Float16, "float16": Float16, "fp32": Float32, "float32": Float32}


def _dtype(value, name, what, allowed):
    key = getattr(value, "name", value)
    key = {"Float16": "fp16", "Float32": "fp32"}.get(key, key)
    if key not in allowed:
        raise TraceError(f"{name}: {what} must be one of {', '.join(allowed)}, got {value!r}")
    return _DTYPES[key]


def _fragment(t, index, count, dtype, name, what):
    if not isinstance(t, Tensor) or not isinstance(t.engine, ArrayEngine):
        raise TraceError(f"{name}: {what} must be a register fragment (make_fragment), got {t!r}")
    if t.element_type is not dtype:
        raise TraceError(f"{name}: {what} holds {t.element_type.name} elements, the instruction takes {dtype.name}")
    if type(index) is not int or index < 0 or index + count > product(t.layout.shape):
        raise TraceError(f"{name}: {what} elements {index}..{index + count - 1} (a static index) lie outside the "
                         f"fragment's {product(t.layout.shape)} elements")
    return [t[index + j] for j in range(count)]


def ptx_mma_sm70(shape: str, A_layout: str, B_layout: str, A_dtype: Any, B_dtype: Any,  # noqa: N803 - its names
                 C_dtype: Any, multiplicand_a: Tensor, a_index: int, multiplicand_b: Tensor, b_index: int,
                 accumulator: Tensor, c_index: int) -> None:
    """``mma.sync.aligned.m8n8k4.<A_layout>.<B_layout>.<C>.f16.f16.<C>``: the accumulator elements
    ``c_index..c_index+7`` become ``A * B + C`` with A the 4 f16 elements of ``multiplicand_a`` from
    ``a_index``, B the 4 of ``multiplicand_b`` from ``b_index`` (register fragments, static indices), in the
    PTX ISA's fragment order. ``shape`` ``"m16n16k4"`` (TVM's name of the warp's four quad-pair products) or
    ``"m8n8k4"``; layouts ``"row"``/``"col"``; A and B ``"fp16"``; C ``"fp16"`` or ``"fp32"``."""
    name = "ptx_mma_sm70"
    if shape not in _SHAPES:
        raise TraceError(f"{name}: shape must be one of {', '.join(_SHAPES)}, got {shape!r}")
    for what, lay in (("A_layout", A_layout), ("B_layout", B_layout)):
        if lay not in _LAYOUTS:
            raise TraceError(f"{name}: {what} must be 'row' or 'col', got {lay!r}")
    _dtype(A_dtype, name, "A_dtype", ("fp16", "float16"))
    _dtype(B_dtype, name, "B_dtype", ("fp16", "float16"))
    c_type = _dtype(C_dtype, name, "C_dtype", ("fp16", "fp32", "float16", "float32"))
    a = _fragment(multiplicand_a, a_index, 4, Float16, name, "multiplicand_a")
    bv = _fragment(multiplicand_b, b_index, 4, Float16, name, "multiplicand_b")
    c = _fragment(accumulator, c_index, 8, c_type, name, "accumulator")
    a_regs = [pack(a[2 * j:2 * j + 2], Float16, 32) for j in range(2)]
    b_regs = [pack(bv[2 * j:2 * j + 2], Float16, 32) for j in range(2)]
    if c_type is Float32:
        c_regs = [x.ir if isinstance(x, TracedFloat) else _const_f32(x, name) for x in c]
    else:
        c_regs = [pack(c[2 * j:2 * j + 2], Float16, 32) for j in range(4)]
    results = warp.mma_m8n8k4(A_layout, B_layout, c_type is Float32, a_regs, b_regs, c_regs)
    values = [wrap(r, Float32) for r in results] if c_type is Float32 else \
        [v for r in results for v in unpack(r, Float16, 2)]
    for j, v in enumerate(values):
        accumulator[c_index + j] = v


def _const_f32(x, name):
    from ..lang import numeric

    if type(x) not in (int, float):
        raise TraceError(f"{name}: Float32 accumulators hold Float32 values, got {x!r}")
    return numeric.constant(float(x), Float32)
