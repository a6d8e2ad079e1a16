"""``MmaF16BF16Op`` and ``MmaF8Op``: the Hopper warpgroup MMA (``wgmma.mma_async``) on 16-bit floats and on
8-bit floats (E4M3, E5M2), as ops that an MMA framework (atoms, tiled MMAs, ``gemm``) can drive.

**The ops' interface** (everything a tiled MMA needs; static, host-side):

- ``shape_mnk``: ``(64, N, 16)``, or ``(64, N, 32)`` for 8-bit floats (always K-major); ``thr_id``:
  ``Layout(128)`` (one warpgroup, ``num_threads == 128``);
- ``tv_layout_A`` / ``tv_layout_B`` / ``tv_layout_C``: ``(thread, value) -> index`` into the column-major
  ``(M, K)``, ``(N, K)`` and ``(M, N)`` tiles, CuTe C++'s GMMA traits (``mma_traits_sm90_gmma.hpp``):

  - C: ``((4,8,4),(2,2,N/8)):((128,1,16),(64,8,512))`` -- thread ``t`` holds rows ``16*(t//32) + (t%32)//4``
    and ``+8``, columns ``2*(t%4) + {0,1} + 8*j``; value ``v`` is accumulator register ``v`` (f32), or half of
    register ``v//2`` (f16, low half first);
  - A and B from shared memory: the whole tile for every thread, ``(128,(M,K)):(0,(1,M))`` (each thread names
    the tile; the hardware reads it through a descriptor);
  - A from registers: ``((4,8,4),(2,2,2)):((128,1,16),(64,8,512))`` (8 values, 4 registers of two halves),
    for 8-bit floats ``((4,8,4),(4,2,2)):((256,1,16),(64,8,1024))`` (16 values, 4 registers of four bytes);
- ``a_dtype``, ``b_dtype``, ``acc_dtype``, ``a_src``, ``a_major_mode``, ``b_major_mode``, ``transpose_a`` /
  ``transpose_b`` (WGMMA's ``imm-trans`` bits: 1 for an MN-major operand), ``ptx_name`` (the instruction);
- ``num_acc_registers``: 32-bit accumulator registers per thread (``N/2`` for f32, ``N/4`` for f16);
- kernel side, :meth:`MmaF16BF16Op.mma` issues one ``wgmma.mma_async``: ``acc`` (a register fragment of
  ``acc_dtype`` with ``size(tv_layout_C[1])`` elements in value order, updated in place), ``a`` (a descriptor:
  an int or a traced 64-bit integer from :func:`~cute_py.nvgpu.warpgroup.make_gmma_desc`; or, for
  ``OperandSource.RMEM``, a register fragment of 8 (16 for 8-bit floats) ``a_dtype`` values in
  ``tv_layout_A``'s value order),
  ``b`` (a descriptor), ``accumulate`` (``scale-d``: a bool or a traced Boolean). The MMA is asynchronous:
  ``fence()`` before it, ``commit_group()`` after, ``wait_group(n)`` before reading ``acc``.
"""

from __future__ import annotations

from typing import Any

from ... import device
from ...core.layout import Layout
from ...mma import MmaOp
from ...errors import CuteTypeError, CuteValueError, DeviceOnlyError
from ...tensor.dtypes import BFloat16, Float8E4M3FN, Float8E5M2, Float16, Float32, dtype_of
from ..sync import WgmmaMmaAsyncOp
from .operands import Field, OperandMajorMode, OperandSource

__all__ = ["MmaF16BF16Op", "MmaF8Op", "MMA_OP_CLASSES", "WgmmaShapeError", "WARPGROUP_THREADS", "c_tv_layout",
           "ab_smem_tv_layout", "a_rmem_tv_layout"]

WARPGROUP_THREADS = 128


class WgmmaShapeError(CuteValueError):
    """A warpgroup MMA's shape, types or operand modes break a rule of ``wgmma.mma_async``."""


def c_tv_layout(n: int) -> Layout:
    """The accumulator layout of a ``64 x n`` WGMMA: ``(thread, value) -> m + 64 * n``."""
    return Layout(((4, 8, 4), (2, 2, n // 8)), ((128, 1, 16), (64, 8, 512)))


def ab_smem_tv_layout(mn: int, k: int) -> Layout:
    """A shared-memory operand's layout: every one of the 128 threads names the whole ``mn x k`` tile."""
    return Layout((WARPGROUP_THREADS, (mn, k)), (0, (1, mn)))


def a_rmem_tv_layout(bits: int = 16) -> Layout:
    """An A operand in registers, ``(thread, value) -> m + 64 * k``: 64x16 of 16-bit values, 8 per thread
    (value ``i`` in column ``2 (t % 4) + i % 2 + 8 (i / 4)``), or 64x32 of 8-bit values, 16 per thread (column
    ``4 (t % 4) + i % 4 + 16 (i / 8)``); row ``16 (t / 32) + (t % 32) / 4 + 8 ((i / per) % 2)``, ``per`` the
    values of a 32-bit register."""
    if bits == 8:
        return Layout(((4, 8, 4), (4, 2, 2)), ((256, 1, 16), (64, 8, 1024)))
    return Layout(((4, 8, 4), (2, 2, 2)), ((128, 1, 16), (64, 8, 512)))


_PTX_TYPE = {"Float16": "f16", "BFloat16": "bf16", "Float32": "f32", "Float8E4M3FN": "e4m3", "Float8E5M2": "e5m2"}


def _dtype(value, what, name):
    try:
        return dtype_of(value)
    except Exception:
        raise CuteTypeError(f"{name}: {what} must be a dtype, got {value!r}") from None


class _WarpgroupMmaOp(MmaOp):
    """What every ``wgmma.mma_async`` op shares (see the module): the subclasses check their types and shape."""

    __slots__ = ("a_dtype", "b_dtype", "acc_dtype", "shape_mnk", "a_src", "a_major_mode", "b_major_mode")

    def _check_modes(self, name, a_src, a_major_mode, b_major_mode):
        if not isinstance(a_src, OperandSource):
            raise CuteTypeError(f"{name}: a_src must be an OperandSource, got {a_src!r}")
        for mode_name, mode in (("a_major_mode", a_major_mode), ("b_major_mode", b_major_mode)):
            if not isinstance(mode, OperandMajorMode):
                raise CuteTypeError(f"{name}: {mode_name} must be an OperandMajorMode, got {mode!r}")
        if a_src is OperandSource.RMEM and a_major_mode is not OperandMajorMode.K:
            raise WgmmaShapeError(f"{name}: A read from registers (OperandSource.RMEM) is K-major, got "
                                  f"a_major_mode {a_major_mode}")

    @staticmethod
    def _check_shape(name, instruction_shape, k_extent):
        shape = tuple(instruction_shape) if isinstance(instruction_shape, (tuple, list)) else None
        if shape is None or len(shape) not in (2, 3) or any(type(s) is not int for s in shape):
            raise WgmmaShapeError(f"{name}: instruction_shape must be a flat (M, N) or (M, N, K) tuple of "
                                  f"ints, got {instruction_shape!r}")
        m, n = shape[0], shape[1]
        k = shape[2] if len(shape) == 3 else k_extent
        if m != 64:
            raise WgmmaShapeError(f"{name}: the M extent of a warpgroup MMA is 64, got {m}")
        if not (8 <= n <= 256 and n % 8 == 0):
            raise WgmmaShapeError(f"{name}: the N extent must be a multiple of 8 in 8..256, got {n}")
        if k != k_extent:
            kind = "a 16-bit" if k_extent == 16 else "an 8-bit"
            raise WgmmaShapeError(f"{name}: the K extent of {kind} warpgroup MMA is {k_extent}, got {k}")
        return m, n, k

    def _configure(self, name, a, b, acc, instruction_shape, k_extent, a_src, a_major_mode, b_major_mode,
                   k_major_only=False):
        """Check the shape (K ``k_extent``) and the operand modes (both K-major with ``k_major_only``), then set
        the op's fields."""
        shape = self._check_shape(name, instruction_shape, k_extent)
        self._check_modes(name, a_src, a_major_mode, b_major_mode)
        if k_major_only:
            for role, mode in (("a_major_mode", a_major_mode), ("b_major_mode", b_major_mode)):
                if mode is not OperandMajorMode.K:
                    raise WgmmaShapeError(f"{name}: 8-bit operands are K-major (no transpose), got {role} {mode}")
        for field, value in (("a_dtype", a), ("b_dtype", b), ("acc_dtype", acc), ("shape_mnk", shape),
                             ("a_src", a_src), ("a_major_mode", a_major_mode), ("b_major_mode", b_major_mode)):
            object.__setattr__(self, field, value)

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable (tried to set {name!r})")

    def __eq__(self, other: object) -> bool:
        fields = _WarpgroupMmaOp.__slots__
        return type(other) is type(self) and all(getattr(self, s) == getattr(other, s) for s in fields)

    def __hash__(self) -> int:
        return hash((type(self).__name__, *(getattr(self, s) for s in _WarpgroupMmaOp.__slots__)))

    # -- the static facts -------------------------------------------------------------------------------
    @property
    def num_threads(self) -> int:
        return WARPGROUP_THREADS

    @property
    def thr_id(self) -> Layout:
        return Layout(WARPGROUP_THREADS)

    @property
    def tv_layout_A(self) -> Layout:
        m, _, k = self.shape_mnk
        if self.a_src is OperandSource.RMEM:
            return a_rmem_tv_layout(self.a_dtype.width)
        return ab_smem_tv_layout(m, k)

    @property
    def tv_layout_B(self) -> Layout:
        _, n, k = self.shape_mnk
        return ab_smem_tv_layout(n, k)

    @property
    def tv_layout_C(self) -> Layout:
        return c_tv_layout(self.shape_mnk[1])

    # -- the MmaOp interface (cute_py.mma: make_mma_atom, make_tiled_mma, partitions, gemm) --------------
    def layout_a_tv(self) -> Layout:
        return self.tv_layout_A

    def layout_b_tv(self) -> Layout:
        return self.tv_layout_B

    def layout_c_tv(self) -> Layout:
        return self.tv_layout_C

    def make_fragment_A(self, partition: Any) -> Any:
        """A from shared memory: the descriptor tensor ``(1, MMA_M, MMA_K, ...)`` of the partition
        (:mod:`.fragment`); from registers: a register fragment like the partition."""
        if self.a_src is OperandSource.RMEM:
            from ...tensor.tensor import make_fragment_like

            return make_fragment_like(getattr(partition, "layout", partition), self.a_dtype)
        from .fragment import make_descriptor_fragment

        return make_descriptor_fragment(partition, self.a_major_mode, self.a_dtype, "A")

    def make_fragment_B(self, partition: Any) -> Any:
        """The descriptor tensor ``(1, MMA_N, MMA_K, ...)`` of a shared-memory partition of B."""
        from .fragment import make_descriptor_fragment

        return make_descriptor_fragment(partition, self.b_major_mode, self.b_dtype, "B")

    def field_defaults(self) -> dict:
        """``Field.ACCUMULATE``: true (D = A*B + D), as CuTe C++'s GMMA atoms start (``ScaleOut::One``)."""
        return {Field.ACCUMULATE: True}

    def gemm_fields(self, fields: dict, k: int) -> dict:
        """``accumulate`` of the instructions of K block ``k`` of one ``gemm``: the field for the first block,
        true for the others (they add to what the first wrote)."""
        return {"accumulate": fields[Field.ACCUMULATE] if k == 0 else True}

    def check_gemm(self, d: Any, a: Any, b: Any, c: Any) -> None:
        """A and B (A from shared memory) are descriptor tensors (``make_fragment_A/B``), not data."""
        for role, t, smem in (("A", a, self.a_src is OperandSource.SMEM), ("B", b, True)):
            if smem and not getattr(t, "__cute_mma_descriptors__", False):
                raise WgmmaShapeError(f"gemm with {self!r}: {role} is read from shared memory through descriptors; "
                                      f"pass tiled_mma.make_fragment_{role}(thr_mma.partition_{role}(s{role})), "
                                      f"got {t!r}")
        if self.a_src is OperandSource.RMEM and getattr(a, "__cute_mma_descriptors__", False):
            raise WgmmaShapeError(f"gemm with {self!r}: A is read from registers (OperandSource.RMEM), got "
                                  f"descriptors {a!r}")

    @property
    def transpose_a(self) -> int:
        return int(self.a_major_mode is OperandMajorMode.MN)

    @property
    def transpose_b(self) -> int:
        return int(self.b_major_mode is OperandMajorMode.MN)

    @property
    def num_acc_registers(self) -> int:
        n = self.shape_mnk[1]
        return n // 2 if self.acc_dtype is Float32 else n // 4

    @property
    def ptx_name(self) -> str:
        m, n, k = self.shape_mnk
        a, b, acc = (_PTX_TYPE[t.name] for t in (self.a_dtype, self.b_dtype, self.acc_dtype))
        return f"wgmma.mma_async.sync.aligned.m{m}n{n}k{k}.{acc}.{a}.{b}"

    @property
    def type_ab(self) -> str:
        """The operand types as the dialect's ``wgmma_mma_async`` names them: one PTX type for both, or
        ``"<a>.<b>"`` for two different 8-bit floats."""
        a, b = _PTX_TYPE[self.a_dtype.name], _PTX_TYPE[self.b_dtype.name]
        return a if a == b else f"{a}.{b}"

    @property
    def a_register_values(self) -> int:
        """Values of A a thread holds when A is read from registers: four 32-bit registers of them."""
        return 128 // self.a_dtype.width

    # -- kernel side --------------------------------------------------------------------------------------
    def mma(self, acc: Any, a: Any, b: Any, accumulate: Any = True) -> None:
        """Issue one ``wgmma.mma_async`` in the kernel being traced (see the module for the operands); outside
        a kernel, ``DeviceOnlyError``."""
        tracer = device.active()
        if tracer is None:
            raise DeviceOnlyError(f"{type(self).__name__}.mma is a device operation: call it inside a kernel "
                                  f"(@cute_py.kernel)")
        return tracer.emit(WgmmaMmaAsyncOp(self), acc=acc, a_operand=a, b_operand=b, accumulate=accumulate)


class MmaF16BF16Op(_WarpgroupMmaOp):
    """``wgmma.mma_async.sync.aligned.m64nNk16.<acc>.<ab>.<ab>``: D(64xN) = A(64x16) * B(16xN) (+ D) by 128
    threads; ``ab_dtype`` Float16 or BFloat16, ``acc_dtype`` Float32 (or Float16 with Float16 inputs);
    ``instruction_shape`` ``(64, N, 16)`` (or ``(64, N)``) with N a multiple of 8 in 8..256. A from registers
    (``OperandSource.RMEM``) is K-major. See the module for the interface."""

    __slots__ = ()

    def __init__(self, ab_dtype: Any, acc_dtype: Any, instruction_shape: tuple[int, ...],
                 a_src: OperandSource = OperandSource.SMEM, a_major_mode: OperandMajorMode = OperandMajorMode.K,
                 b_major_mode: OperandMajorMode = OperandMajorMode.K) -> None:
        name = "MmaF16BF16Op"
        ab, acc = _dtype(ab_dtype, "ab_dtype", name), _dtype(acc_dtype, "acc_dtype", name)
        if ab not in (Float16, BFloat16):
            raise WgmmaShapeError(f"{name}: ab_dtype must be Float16 or BFloat16, got {ab.name}")
        if acc not in (Float32, Float16):
            raise WgmmaShapeError(f"{name}: acc_dtype must be Float32 or Float16, got {acc.name}")
        if ab is BFloat16 and acc is not Float32:
            raise WgmmaShapeError(f"{name}: BFloat16 inputs accumulate in Float32, got acc_dtype {acc.name}")
        self._configure(name, ab, ab, acc, instruction_shape, 16, a_src, a_major_mode, b_major_mode)

    def __repr__(self):
        m, n, k = self.shape_mnk
        return (f"MmaF16BF16Op({self.a_dtype.name}, {self.acc_dtype.name}, ({m}, {n}, {k}), {self.a_src}, "
                f"{self.a_major_mode}, {self.b_major_mode})")


class MmaF8Op(_WarpgroupMmaOp):
    """``wgmma.mma_async.sync.aligned.m64nNk32.<acc>.<a>.<b>``: D(64xN) = A(64x32) * B(32xN) (+ D) by 128
    threads on 8-bit floats; ``a_dtype`` and ``b_dtype`` each Float8E4M3FN or Float8E5M2 (they may differ),
    ``acc_dtype`` Float32 or Float16; ``instruction_shape`` ``(64, N, 32)`` (or ``(64, N)``), N a multiple of 8
    in 8..256. Both operands are K-major (the instruction has no transpose for 8-bit types); A from registers
    is four 32-bit registers of 16 values. See the module for the interface."""

    __slots__ = ()

    def __init__(self, a_dtype: Any, b_dtype: Any, acc_dtype: Any, instruction_shape: tuple[int, ...],
                 a_src: OperandSource = OperandSource.SMEM, a_major_mode: OperandMajorMode = OperandMajorMode.K,
                 b_major_mode: OperandMajorMode = OperandMajorMode.K) -> None:
        name = "MmaF8Op"
        a, b = _dtype(a_dtype, "a_dtype", name), _dtype(b_dtype, "b_dtype", name)
        acc = _dtype(acc_dtype, "acc_dtype", name)
        for role, t in (("a_dtype", a), ("b_dtype", b)):
            if t not in (Float8E4M3FN, Float8E5M2):
                raise WgmmaShapeError(f"{name}: {role} must be Float8E4M3FN or Float8E5M2, got {t.name}")
        if acc not in (Float32, Float16):
            raise WgmmaShapeError(f"{name}: acc_dtype must be Float32 or Float16, got {acc.name}")
        self._configure(name, a, b, acc, instruction_shape, 32, a_src, a_major_mode, b_major_mode, k_major_only=True)

    def __repr__(self):
        m, n, k = self.shape_mnk
        return (f"MmaF8Op({self.a_dtype.name}, {self.b_dtype.name}, {self.acc_dtype.name}, ({m}, {n}, {k}), "
                f"{self.a_src}, {self.a_major_mode}, {self.b_major_mode})")


MMA_OP_CLASSES = (MmaF16BF16Op, MmaF8Op)
