"""CPU (numpy) execution of one warpgroup MMA (``wgmma.mma_async``) on shared-memory operands: 16-bit floats, or
the 8-bit floats E4M3 and E5M2 (decoded by the OCP FP8 formats).

The operands are read from a shared-memory byte array through their 64-bit descriptors, decoded with the
canonical GMMA layouts of CuTe C++'s ``mma_sm90_desc.hpp`` (in elements, ``T`` per 16-byte unit, ``W`` units per
swizzle row: 1, 2, 4, 8 for interleave, 32B, 64B, 128B; ``L``/``S`` the descriptor's leading / stride byte
offsets in elements):

- K-major, interleave: ``((8,m),(T,2)):((T,S),(1,L))``; swizzled: ``((8,m),(T,2)):((W*T,S),(1,T))``;
- MN-major, interleave: ``((T,m),(8,2)):((1,S),(T,L))``; swizzled: ``((T*W,m),(8,2)):((1,L),(W*T,S))``;

each byte address then swizzled by ``Swizzle<b,4,3>`` (``b`` = 0..3) on the absolute shared-memory address, as
the hardware does. The accumulator is distributed over the 128 threads with the PTX ISA's fragment rule
(thread ``t``, register ``i``: row ``16*(t//32) + (t%32)//4 + 8*((i//2)%2)``, column ``2*(t%4) + i%2 +
8*(i//4)``), written here independently of the op's CuTe layouts; the tests check that both agree.
"""

from __future__ import annotations

import functools

import numpy as np

from ..errors import CuteValueError

__all__ = ["decode_desc", "wgmma_operand", "wgmma", "c_fragment_coord", "ENTRIES"]

_UNITS = {0: 1, 1: 8, 2: 4, 3: 2}       # layout type -> 16-byte units per swizzle row
_SWIZZLE_BITS = {0: 0, 1: 3, 2: 2, 3: 1}


def decode_desc(desc: int) -> dict:
    """The fields of a 64-bit WGMMA descriptor, in bytes (start: its low 18 bits)."""
    return {"start": (desc & 0x3FFF) << 4, "lbo": ((desc >> 16) & 0x3FFF) << 4, "sbo": ((desc >> 32) & 0x3FFF) << 4,
            "base": (desc >> 49) & 7, "layout_type": (desc >> 62) & 3}


def _swizzle(addr, bits):
    return addr ^ (((addr >> 7) & ((1 << bits) - 1)) << 4)


_F8 = {"Float8E4M3FN": (4, 3, 7), "Float8E5M2": (5, 2, 15)}     # exponent bits, mantissa bits, bias


@functools.lru_cache(maxsize=None)
def _f8_table(dtype):
    """The float32 value of each of the 256 bit patterns of an 8-bit float (the OCP FP8 formats: E4M3 has no
    infinity and one NaN per sign, S.1111.111; E5M2 is IEEE-like, with infinities and NaNs at exponent 31)."""
    e_bits, m_bits, bias = _F8[dtype]
    out = np.empty(256, dtype=np.float32)
    for raw in range(256):
        sign = -1.0 if raw >> 7 else 1.0
        e, m = (raw >> m_bits) & ((1 << e_bits) - 1), raw & ((1 << m_bits) - 1)
        top = (1 << e_bits) - 1
        if dtype == "Float8E4M3FN" and e == top and m == (1 << m_bits) - 1:
            value = float("nan")
        elif dtype == "Float8E5M2" and e == top:
            value = sign * float("inf") if m == 0 else float("nan")
        elif e == 0:
            value = sign * 2.0 ** (1 - bias) * m / (1 << m_bits)
        else:
            value = sign * 2.0 ** (e - bias) * (1 + m / (1 << m_bits))
        out[raw] = value
    out.flags.writeable = False          # (one table per type, shared by every call)
    return out


def _to_float(raw, dtype):
    if dtype == "Float16":
        return raw.view(np.float16).astype(np.float32)
    if dtype == "BFloat16":
        return (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    if dtype in _F8:
        return _f8_table(dtype)[raw.astype(np.uint8)]
    raise CuteValueError(f"a WGMMA operand is Float16, BFloat16, Float8E4M3FN or Float8E5M2, got {dtype}")


def _bytes(dtype):
    return 1 if dtype in _F8 else 2


def wgmma_operand(smem: np.ndarray, desc: int, k_major: bool, mn: int, dtype: str, k: int | None = None) -> np.ndarray:
    """The ``(mn, k)`` operand the descriptor ``desc`` names in the byte array ``smem``, as float32 (``k``: one
    instruction's, 16 for 16-bit elements and 32 for 8-bit ones)."""
    f = decode_desc(desc)
    if f["base"]:
        raise CuteValueError("the reference reads descriptors with base offset 0 (tiles at their swizzle's origin)")
    eb, lt = _bytes(dtype), f["layout_type"]
    k = 32 // eb if k is None else k
    t, w, bits = 16 // eb, _UNITS[lt], _SWIZZLE_BITS[lt]
    lo, so = f["lbo"] // eb, f["sbo"] // eb
    r = np.arange(mn)[:, None]
    c = np.arange(k)[None, :]
    if k_major:
        off = (r % 8) * (t if lt == 0 else w * t) + (r // 8) * so + c % t + (c // t) * (lo if lt == 0 else t)
    elif lt == 0:
        off = r % t + (r // t) * so + (c % 8) * t + (c // 8) * lo
    else:
        off = r % (t * w) + (r // (t * w)) * lo + (c % 8) * w * t + (c // 8) * so
    addr = _swizzle(f["start"] + off * eb, bits)
    if int(addr.max()) + eb > smem.size:
        raise CuteValueError(f"the descriptor reads byte {int(addr.max())}, past the {smem.size}-byte shared memory")
    if eb == 1:
        return _to_float(smem[addr], dtype)
    raw = (smem[addr].astype(np.uint16) | (smem[addr + 1].astype(np.uint16) << 8))
    return _to_float(raw, dtype)


def c_fragment_coord(thread: int, i: int) -> tuple[int, int]:
    """(row, column) of accumulator register ``i`` of ``thread`` in a ``64 x N`` WGMMA (PTX ISA)."""
    return 16 * (thread // 32) + (thread % 32) // 4 + 8 * ((i // 2) % 2), 2 * (thread % 4) + i % 2 + 8 * (i // 4)


def wgmma(smem: np.ndarray, desc_a: int, desc_b: int, acc: np.ndarray | None, n: int, dtype: str,
          a_k_major: bool = True, b_k_major: bool = True, b_dtype: str | None = None) -> np.ndarray:
    """``D = A * B^T (+ acc)`` of ``wgmma.mma_async.m64n{n}k{16|32}.f32`` on shared memory (A of ``dtype``, B of
    ``b_dtype``, by default the same; K 32 for 8-bit floats, which are K-major): ``acc`` (or zeros) and the result
    are per-thread fragments ``(128, n // 2)`` of float32 in register order."""
    b_dtype = dtype if b_dtype is None else b_dtype
    if (_bytes(dtype) == 1) != (_bytes(b_dtype) == 1) or (_bytes(dtype) == 2 and b_dtype != dtype):
        raise CuteValueError(f"a WGMMA multiplies one 16-bit type, or two 8-bit floats, got {dtype} and {b_dtype}")
    if _bytes(dtype) == 1 and not (a_k_major and b_k_major):
        raise CuteValueError("8-bit WGMMA operands are K-major")
    a = wgmma_operand(smem, desc_a, a_k_major, 64, dtype)
    b = wgmma_operand(smem, desc_b, b_k_major, n, b_dtype)
    d = a.astype(np.float64) @ b.astype(np.float64).T
    out = np.zeros((128, n // 2), dtype=np.float32) if acc is None else np.array(acc, dtype=np.float32)
    if out.shape != (128, n // 2):
        raise CuteValueError(f"the accumulator fragments are (128, {n // 2}), got {out.shape}")
    for thread in range(128):
        for i in range(n // 2):
            row, col = c_fragment_coord(thread, i)
            out[thread, i] = np.float32(out[thread, i] + d[row, col])
    return out


# the unit has no copy op (``REFERENCE`` holds copies; :func:`wgmma` executes the MMA)
ENTRIES: dict = {}
