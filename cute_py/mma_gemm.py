"""``cute_py.gemm``: ``D = A * B + C`` on one thread's MMA fragments, one instruction of the atom per
``(m, n, k)`` (see :mod:`cute_py.mma` for the op interface each instruction goes through)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import device
from .core.notation import fmt
from .core.products import product
from .errors import CuteTypeError, CuteValueError, DeviceOnlyError
from .mma import MmaAtom, TiledMma
from .mma_thread import ThrMma

if TYPE_CHECKING:
    from .tensor.tensor import Tensor

__all__ = ["gemm"]


def _shape_of(t):
    s = t.layout.shape
    return s if type(s) is tuple else (s,)


def gemm(atom: MmaAtom | TiledMma | ThrMma, d: Tensor, a: Tensor, b: Tensor, c: Tensor) -> None:
    """``D = A * B + C`` on one thread's fragments, in a kernel: ``a`` ``(V, M[, K])``, ``b`` ``(V, N[, K])``,
    ``c`` and ``d`` ``(V, M, N)`` (or all rank 1: one instruction).  One instruction per ``(m, n, k)``; the K
    blocks accumulate in order, the first from ``c``, the others from ``d``.  ``d`` may be ``c``."""
    from .tensor.tensor import Tensor

    if isinstance(atom, ThrMma):
        atom = atom.tiled_mma
    if isinstance(atom, TiledMma):
        atom = atom.atom
    if not isinstance(atom, MmaAtom):
        raise CuteTypeError(f"gemm needs an MMA atom, a tiled MMA or a thread slice of one, got {atom!r}")
    for role, t in (("d", d), ("a", a), ("b", b), ("c", c)):
        if not isinstance(t, Tensor) and not (role in "ab" and getattr(t, "__cute_mma_descriptors__", False)):
            raise CuteTypeError(f"gemm: {role} must be a tensor (a fragment), got {t!r}")
    sd, sa, sb, sc = _shape_of(d), _shape_of(a), _shape_of(b), _shape_of(c)
    if len(sd) != len(sc) or any(product(x) != product(y) for x, y in zip(sd, sc)):
        raise CuteValueError(f"gemm: D {d.layout} and C {c.layout} must have the same shape")
    if len(sd) == 1 and len(sa) == 1 and len(sb) == 1:
        sd, sa, sb = sd + (1, 1), sa + (1, 1), sb + (1, 1)
    elif len(sd) == 3 and len(sa) in (2, 3) and len(sb) in (2, 3) and len(sa) == len(sb):
        sa, sb = (sa + (1,)) if len(sa) == 2 else sa, (sb + (1,)) if len(sb) == 2 else sb
    else:
        raise CuteValueError(f"gemm takes D, C of rank 3 (V, M, N) and A, B of rank 2 or 3 ((V, M[, K]), (V, N[, K])), "
                             f"or all of rank 1; got D {d.layout}, A {a.layout}, B {b.layout}")
    mm, nn, kk = product(sd[1]), product(sd[2]), product(sa[2])
    if product(sa[1]) != mm or product(sb[1]) != nn or product(sb[2]) != kk:
        raise CuteValueError(f"gemm: the modes disagree: D {fmt(sd)} (V, M, N), A {fmt(sa)} (V, M, K), "
                             f"B {fmt(sb)} (V, N, K) need A's M = D's M, B's N = D's N and A's K = B's K")
    op = atom.op
    fields = atom.checked_fields()
    check = getattr(op, "check_gemm", None)
    if check is not None:
        check(d, a, b, c)
    tracer = device.active()
    if tracer is None:
        raise DeviceOnlyError("gemm is a device operation: call it inside a kernel (@cute_py.kernel); "
                              "cute_py.reference.mma_atom runs one instruction over all its threads on the CPU")

    def mode_v(t, rank, *idx):
        if rank == 1:
            return t
        return t[(None,) + idx]

    rd, ra = len(_shape_of(d)), len(_shape_of(a))
    fields_of = getattr(op, "gemm_fields", None)
    for k in range(kk):
        extra = fields_of(dict(fields), k) if fields_of is not None else {}
        for m in range(mm):
            for n in range(nn):
                src = c if k == 0 else d
                ai = (m,) if ra == 2 else (m, k)
                bi = (n,) if ra == 2 else (n, k)
                tracer.emit(op, D=mode_v(d, rd, m, n), A=mode_v(a, ra, *ai), B=mode_v(b, ra, *bi),
                            C=mode_v(src, rd, m, n), **extra)
