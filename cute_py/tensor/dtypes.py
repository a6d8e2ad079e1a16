"""Element types with bit widths, named as in the CuTe DSL (``Float16``, ``BFloat16``, ``Int8``...).

Each type knows its width in bits, whether it is a float, signed int, unsigned
int or boolean, the numpy dtype that holds it exactly (``None`` when numpy has
none, e.g. ``BFloat16`` and the fp8 types), and the numpy dtype of the same
width to store its bits (``storage``).  numpy is imported only when asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import device
from ..core.normalise import as_index
from ..errors import ArgumentError, CuteTypeError, StaticValueRequired

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "DType",
    "Boolean",
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "Uint8",
    "Uint16",
    "Uint32",
    "Uint64",
    "Float16",
    "BFloat16",
    "TFloat32",
    "Float32",
    "Float64",
    "Float8E4M3FN",
    "Float8E5M2",
    "ALL_DTYPES",
    "dtype",
    "dtype_of",
    "Scalar",
]


class DType:
    """An element type: ``name``, ``width`` (bits), ``kind`` ("float", "int", "uint", "bool")."""

    __slots__ = ("name", "width", "kind", "_numpy", "_storage")

    def __init__(self, name: str, width: int, kind: str, numpy_name: str | None, storage_name: str) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "width", width)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "_numpy", numpy_name)
        object.__setattr__(self, "_storage", storage_name)

    def __setattr__(self, name, value):
        raise AttributeError("DType is immutable")

    def __reduce__(self):
        return (dtype_of, (self.name,))

    @property
    def bytes(self) -> int | float:
        """Width in bytes (a fraction for sub-byte types)."""
        return self.width / 8 if self.width % 8 else self.width // 8

    @property
    def short_name(self) -> str:
        """The MLIR spelling of the type (``f32``, ``bf16``, ``i8``, ``ui16``, ``i1``, ``f8E4M3FN``)."""
        return _SHORT[self.name]

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_integer(self) -> bool:
        return self.kind in ("int", "uint")

    def is_same_kind(self, other: DType | str | Any) -> bool:
        """True when both types are floating-point, or both are not (integers, signed or not, and ``Boolean``,
        an integer type in the CuTe DSL), as the DSL's ``Numeric.is_same_kind``: ``Float16.is_same_kind(Float32)``
        and ``Int8.is_same_kind(Uint32)`` hold, ``Float32.is_same_kind(Int32)`` does not."""
        return self.is_float == dtype_of(other).is_float

    @property
    def signed(self) -> bool:
        return self.kind in ("int", "float")

    @property
    def zero(self) -> int | float | bool:
        """The zero of the type as a Python number (``0.0``, ``0``, ``False``), as the DSL's ``Float32.zero``."""
        return 0.0 if self.is_float else (False if self.kind == "bool" else 0)

    @property
    def inf(self) -> float:
        """``float("inf")`` for a floating-point type (the DSL's ``Float32.inf``); ``AttributeError`` for others."""
        if not self.is_float:
            raise AttributeError(f"{self.name} is no floating-point type: it has no inf")
        return float("inf")

    @property
    def nan(self) -> float:
        """``float("nan")`` for a floating-point type; ``AttributeError`` for others."""
        if not self.is_float:
            raise AttributeError(f"{self.name} is no floating-point type: it has no nan")
        return float("nan")

    @property
    def numpy_dtype(self) -> np.dtype | None:
        """The numpy dtype holding this type exactly, or ``None`` when numpy has none."""
        if self._numpy is None:
            return None
        import numpy as np

        return np.dtype(self._numpy)

    @property
    def storage_dtype(self) -> np.dtype:
        """A numpy dtype of the same width, to hold the raw bits."""
        import numpy as np

        return np.dtype(self._storage)

    def __repr__(self):
        return f"cute_py.{self.name}"

    __str__ = __repr__

    def __call__(self, value: Any) -> Scalar | Any:
        """A value of this type, as the CuTe DSL's ``Int32(x)``.

        On the host: a :class:`Scalar` (``value`` checked to be a Python int in range, a float, or a bool,
        by kind); passed to a kernel or jit function it is a run-time parameter.  In a kernel being traced:
        the device context converts it (a traced integer to ``Int32``/``Int64``; a Python value as on the host).
        """
        context = device.active()
        if context is not None:
            return context.scalar(self, value)
        return Scalar(self, value)


class Scalar:
    """A host value of a numeric :class:`DType` (``cute.Int32(6)``, ``cute.Float32(0.5)``).

    Passed to a kernel or jit function it is a run-time parameter of that type (the compiled code serves
    every value); ``.value`` is the Python value, ``.dtype`` the type and ``.kind`` its name.
    """

    __slots__ = ("dtype", "value")

    def __init__(self, dtype: DType | str | Any, value: Any) -> None:
        dtype = dtype_of(dtype)
        if isinstance(value, Scalar):
            value = value.value
        if dtype.kind == "bool":  # as the DSL: a Python number converts by its truth (Boolean(1) is True)
            if type(value) is not bool:
                if isinstance(value, (str, bytes)) or (getattr(type(value), "__index__", None) is None and
                                                      getattr(type(value), "__float__", None) is None):
                    raise ArgumentError(f"{dtype.name} takes a Python bool, int or float, got {value!r}")
                value = bool(value)
        elif dtype.is_float:  # a Python or numpy float or int
            if isinstance(value, (bool, str, bytes)) or getattr(type(value), "__float__", None) is None:
                raise ArgumentError(f"{dtype.name} takes a Python float, got {value!r}")
            value = float(value)
        else:  # a Python int or an integer-like (numpy integers), as the algebra takes them
            try:
                value = as_index(value, dtype.name)
            except (CuteTypeError, StaticValueRequired):
                raise ArgumentError(f"{dtype.name} takes a Python int, got {value!r}") from None
            lo, hi = (-(1 << (dtype.width - 1)), (1 << (dtype.width - 1)) - 1) if dtype.signed else \
                (0, (1 << dtype.width) - 1)
            if not lo <= value <= hi:
                raise ArgumentError(f"{value} does not fit in {dtype.name} ([{lo}, {hi}])")
        self.dtype, self.value = dtype, value

    @property
    def kind(self) -> str:
        """The name of the type (``"Int32"``...)."""
        return self.dtype.name

    def __index__(self) -> int:
        """An integer constant (``cute.Int32(-1)``) stands where an int does (a coordinate, an extent); a float or
        Boolean one does not (``TypeError``)."""
        if self.dtype.is_float or self.dtype.kind == "bool":
            raise TypeError(f"{self!r} is not an integer")
        return self.value

    def __repr__(self):
        return f"{self.dtype.name}({self.value!r})"


def _t(name, width, kind, numpy_name, storage):
    return DType(name, width, kind, numpy_name, storage)


Boolean = _t("Boolean", 8, "bool", "bool", "uint8")
Int8 = _t("Int8", 8, "int", "int8", "uint8")
Int16 = _t("Int16", 16, "int", "int16", "uint16")
Int32 = _t("Int32", 32, "int", "int32", "uint32")
Int64 = _t("Int64", 64, "int", "int64", "uint64")
Uint8 = _t("Uint8", 8, "uint", "uint8", "uint8")
Uint16 = _t("Uint16", 16, "uint", "uint16", "uint16")
Uint32 = _t("Uint32", 32, "uint", "uint32", "uint32")
Uint64 = _t("Uint64", 64, "uint", "uint64", "uint64")
Float16 = _t("Float16", 16, "float", "float16", "uint16")
BFloat16 = _t("BFloat16", 16, "float", None, "uint16")
TFloat32 = _t("TFloat32", 32, "float", "float32", "uint32")
Float32 = _t("Float32", 32, "float", "float32", "uint32")
Float64 = _t("Float64", 64, "float", "float64", "uint64")
Float8E4M3FN = _t("Float8E4M3FN", 8, "float", None, "uint8")
Float8E5M2 = _t("Float8E5M2", 8, "float", None, "uint8")

ALL_DTYPES = (
    Boolean, Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64,
    Float16, BFloat16, TFloat32, Float32, Float64, Float8E4M3FN, Float8E5M2,
)
_BY_NAME = {t.name: t for t in ALL_DTYPES}
_SHORT = {"Boolean": "i1", "Int8": "i8", "Int16": "i16", "Int32": "i32", "Int64": "i64", "Uint8": "ui8",
          "Uint16": "ui16", "Uint32": "ui32", "Uint64": "ui64", "Float16": "f16", "BFloat16": "bf16", "TFloat32": "tf32",
          "Float32": "f32", "Float64": "f64", "Float8E4M3FN": "f8E4M3FN", "Float8E5M2": "f8E5M2"}


def dtype(name: str) -> DType:
    """The element type named ``name`` exactly as the type is (``"Float16"``, ``"BFloat16"``, ``"Float8E4M3FN"``):
    the DSL's ``cutlass.dtype``, made for ``argparse``'s ``type=``. ``CuteTypeError`` (a ``TypeError``) for any
    other value, torch and numpy spellings included (:func:`dtype_of` reads those)."""
    if isinstance(name, str) and name in _BY_NAME:
        return _BY_NAME[name]
    from ..errors import CuteTypeError

    raise CuteTypeError(f"can't interpret {name!r} as an element type; the names are {', '.join(_BY_NAME)}")


def dtype_of(x: DType | str | Any) -> DType:
    """The :class:`DType` for a DType, its name, or a numpy/torch dtype name (``"float16"``, ``"bfloat16"``)."""
    from ..errors import CuteTypeError

    if isinstance(x, DType):
        return x
    if isinstance(x, str) and x in _BY_NAME:
        return _BY_NAME[x]
    try:
        name = str(getattr(x, "name", x)).replace("torch.", "")
    except Exception:  # an object whose name or str fails is no element type
        name = None
    aliases = {
        "bool": Boolean, "int8": Int8, "int16": Int16, "int32": Int32, "int64": Int64,
        "uint8": Uint8, "uint16": Uint16, "uint32": Uint32, "uint64": Uint64,
        "float16": Float16, "half": Float16, "bfloat16": BFloat16, "float32": Float32, "float": Float32,
        "float64": Float64, "double": Float64, "float8_e4m3fn": Float8E4M3FN, "float8_e5m2": Float8E5M2,
    }
    if name in aliases:
        return aliases[name]
    try:
        shown = repr(x)[:80]
    except Exception:
        shown = f"<{type(x).__name__}>"
    raise CuteTypeError(f"unknown element type {shown}")
