"""Keys of configuration values: what a compile depends on besides its arguments' specialisation.

:func:`config_key` is the key of the static values of a compile: the instance bound to a ``@jit`` or
``@kernel`` method (``self``), static arguments of jit functions and kernels. It is a text equal for equal
values in any process, so that a class-based kernel is found in the disk cache again, and different for
values that could make different code. A value is keyed **by value**, recursively:

- ``None``, bools, numbers, strings and bytes by their ``repr`` (long texts by digest); tuples, lists, dicts,
  sets (sorted), named tuples by their items; enum members by class, name and value;
- functions (lambdas too) by name, code (instructions, names and constants: ``deps.code_digest``), closure
  and defaults; bound methods by function and instance; ``functools.partial`` by its parts; modules and
  builtins by name;
- classes of the user's code by name, bases and namespace (class attributes, annotations, the code of their
  methods); classes of the library, of the Python installation and of installed packages by name;
- instances of classes of the user's code (plain objects, dataclasses, ``__slots__`` classes) by their class
  and the values of all their attributes; ``types.SimpleNamespace`` likewise;
- values of cute_py itself (layouts, element types, copy ops...) and numpy arrays by ``deps.value_key``;
  a few immutable values of the standard library (``Fraction``, ``Decimal``, ``range``, ``slice``, paths)
  and numpy / torch element types by their ``repr``.

Anything else (an open file, a lock, a socket, a logger, a device array, an object of an installed package
the rules above do not know, a value nested deeper than 16 levels or holding more than 20000 values) has no
key: :class:`deps.Unkeyable` is raised, its message naming the attribute path (``self.log.stream``) and the
type. The caller then compiles without any cache (see :mod:`..specs.methods`). A cycle of references
keys as a back-reference to the level it returns to.
"""

from __future__ import annotations

import dataclasses
import decimal
import enum
import fractions
import functools
import os
import pathlib
import sys
import sysconfig
import types

from ...errors import is_library_file
from . import deps as _deps
from .deps import Unkeyable

__all__ = ["config_key", "is_user_type", "Unkeyable"]

_PLAIN = (type(None), bool, int, float, complex, str, bytes)
_MAX_DEPTH = 16
_MAX_VALUES = 20000
_MAX_ITEMS = 4096
_DESCRIPTOR_TYPES = ("member_descriptor", "getset_descriptor", "_tuplegetter", "wrapper_descriptor",
                     "method_descriptor")
_REPR_TYPES = (fractions.Fraction, decimal.Decimal, range, slice, type(Ellipsis), type(NotImplemented),
               pathlib.PurePath)
# entries of a class's namespace that Python, ``dataclasses`` and ``abc`` make (the values they derive from are
# keyed: the fields' values are the instance's, the methods are in the namespace)
_SKIPPED_CLASS_NAMES = {"__module__", "__qualname__", "__dict__", "__weakref__", "__doc__", "__slots__",
                        "__firstlineno__", "__static_attributes__", "__orig_bases__", "__parameters__",
                        "__dataclass_fields__", "__dataclass_params__", "_abc_impl"}


def _installed_roots():
    paths = sysconfig.get_paths()
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, paths.get("stdlib"), paths.get("purelib"),
             paths.get("platlib"), paths.get("platstdlib")}
    return tuple(os.path.abspath(r) + os.sep for r in roots if r)


_INSTALLED_ROOTS = _installed_roots()
_ORIGIN = {}  # module name -> "user" | "library" | "installed"


def _origin(module_name):
    """Where the module ``module_name`` comes from: the user's code, cute_py (or mlir_dialects), or the Python
    installation and its packages (builtin and extension modules too)."""
    found = _ORIGIN.get(module_name)
    if found is not None:
        return found
    if module_name == "__main__":
        return "user"
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None)
    if module_name.split(".")[0] in ("cute_py", "mlir_dialects") or (path and is_library_file(path)):
        found = "library"
    elif not path or os.path.abspath(path).startswith(_INSTALLED_ROOTS):
        found = "installed" if module is not None else "user"
    else:
        found = "user"
    if module is not None:
        _ORIGIN[module_name] = found
    return found


def is_user_type(t: type) -> bool:
    """Whether the class ``t`` is defined in the user's code (not in cute_py, the Python installation or an
    installed package)."""
    return _origin(getattr(t, "__module__", None) or "builtins") == "user"


def _name(x):
    return f"{getattr(x, '__module__', None)}.{getattr(x, '__qualname__', getattr(x, '__name__', '?'))}"


def config_key(value: object, what: str = "value") -> str:
    """The process-independent key of ``value`` (see the module documentation); ``Unkeyable`` naming the path
    below ``what`` (e.g. ``"self"``) of the first part that has none."""
    return _Keyer().key(value, what, 0)


class _Keyer:
    __slots__ = ("budget", "active")

    def __init__(self):
        self.budget = _MAX_VALUES
        self.active = {}  # id -> depth of the containers and objects being keyed (cycles)

    def key(self, v, path, depth):
        self.budget -= 1
        t = type(v)
        if t in _PLAIN:
            return _deps.value_key(v)
        if depth > _MAX_DEPTH or self.budget < 0:
            raise Unkeyable(f"{path} ({_name(t)}) is nested deeper than {_MAX_DEPTH} levels or the value holds "
                            f"more than {_MAX_VALUES} values")
        seen = self.active.get(id(v))
        if seen is not None:
            return f"<cycle:{seen}>"
        self.active[id(v)] = depth
        try:
            return self.dispatch(v, t, path, depth + 1)
        finally:
            del self.active[id(v)]

    def items(self, values, path, depth):
        return ",".join(self.key(x, f"{path}[{i}]", depth) for i, x in enumerate(values))

    def mapping(self, m, path, depth):
        parts = sorted(f"{self.key(a, f'{path} key', depth)}:{self.key(b, f'{path}[{a!r}]', depth)}"
                       for a, b in m.items())
        return ",".join(parts)

    def dispatch(self, v, t, path, d):
        k = self.key
        if isinstance(v, enum.Enum):
            return f"enum:{_name(t)}.{v.name}={k(v.value, f'{path}.value', d)}"
        if isinstance(v, (tuple, list, dict, set, frozenset)):
            return self.container(v, t, path, d)
        if isinstance(v, type):
            return self.cls(v, path, d)
        if isinstance(v, types.FunctionType):
            return self.function(v, path, d)
        if isinstance(v, (staticmethod, classmethod)):
            return f"{t.__name__}:{k(v.__func__, path, d)}"
        if isinstance(v, property):
            return "property:" + ",".join(k(f, f"{path}.{n}", d) for n, f in
                                          (("fget", v.fget), ("fset", v.fset), ("fdel", v.fdel)))
        if isinstance(v, functools.cached_property):
            return f"cached_property:{k(v.func, f'{path}.func', d)}"
        if isinstance(v, functools.partial):
            return f"partial:{k(v.func, f'{path}.func', d)}:{k(v.args, f'{path}.args', d)}:" \
                   f"{k(v.keywords, f'{path}.keywords', d)}"
        if isinstance(v, (types.BuiltinFunctionType, types.BuiltinMethodType, types.ModuleType)):
            return _deps.value_key(v, strict=True)
        if hasattr(v, "__func__") and hasattr(v, "__self__"):  # bound methods (of jit / kernel methods too)
            return f"method:{k(v.__func__, f'{path}.__func__', d)}@{k(v.__self__, f'{path}.__self__', d)}"
        origin = _origin(getattr(t, "__module__", None) or "builtins")
        if origin == "library":
            fn = getattr(v, "fn", None)
            if isinstance(fn, types.FunctionType):  # a @kernel / @jit function: its code and name prefix
                return f"{_name(t)}:{self.function(fn, f'{path}.fn', d)}:{getattr(v, 'name_prefix', '')!r}"
            return _deps.value_key(v, strict=True)
        if origin == "user" or isinstance(v, types.SimpleNamespace):
            return self.instance(v, t, path, d)
        return self.installed(v, t, path)

    def container(self, v, t, path, d):
        if len(v) > _MAX_ITEMS:
            raise Unkeyable(f"{path} is a {t.__name__} of {len(v)} items (more than {_MAX_ITEMS})")
        if isinstance(v, dict):
            body = self.mapping(v, path, d)
            if isinstance(v, dict) and type(v).__name__ == "OrderedDict":  # order matters to it
                body = self.items(list(v.items()), path, d)
            factory = getattr(v, "default_factory", None)
            if factory is not None:
                body += f";default={self.key(factory, f'{path}.default_factory', d)}"
        elif isinstance(v, (set, frozenset)):
            body = ",".join(sorted(self.key(x, f"{path} item", d) for x in v))
        else:
            body = self.items(v, path, d)
        if t in (tuple, list, dict, set, frozenset):
            return f"{t.__name__}({body})"
        extra = self.fields(v, path, d) if is_user_type(t) else ""
        return f"{self.key(t, f'type({path})', d)}({body}){extra}"

    def cls(self, c, path, d):
        """A class: by name; a class of the user's code also by bases and namespace."""
        if not is_user_type(c) or isinstance(c, enum.EnumMeta):  # an enum class: its members key by value
            return f"class:{_name(c)}"
        bases = ",".join(self.key(b, f"{path} base", d) for b in c.__bases__ if b is not object)
        ns = []
        for name, value in sorted(vars(c).items()):
            if name in _SKIPPED_CLASS_NAMES or type(value).__name__ in _DESCRIPTOR_TYPES:
                continue
            ns.append(f"{name}={self.key(value, f'{_name(c)}.{name}', d)}")
        return f"class:{_name(c)}({bases}){{{';'.join(ns)}}}"

    def function(self, fn, path, d):
        cells = []
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell
                cells.append("<empty>")
                continue
            cells.append(self.key(contents, f"{path} (closure variable {name})", d))
        # a stream default (``stream=CUstream(...)``) is a run-time value of the calls that leave it out: no code
        defs = tuple("<a stream>" if _is_stream(x) else x for x in fn.__defaults__ or ())
        defaults = self.key(defs, f"{path} (defaults)", d) if defs else ""
        kwdefaults = self.key(fn.__kwdefaults__, f"{path} (defaults)", d) if fn.__kwdefaults__ else ""
        return f"fn:{_name(fn)}:{_deps.code_digest(fn.__code__)}:[{','.join(cells)}]:{defaults}:{kwdefaults}"

    def fields(self, v, path, d):
        """The attributes of an object: its ``__dict__`` and every ``__slots__`` entry of its classes."""
        out = []
        attrs = getattr(v, "__dict__", None)
        if isinstance(attrs, dict):
            out += [f"{a}={self.key(b, f'{path}.{a}', d)}" for a, b in sorted(attrs.items(), key=lambda p: str(p[0]))]
        for c in type(v).__mro__:
            slots = vars(c).get("__slots__", ())
            for s in (slots,) if isinstance(slots, str) else slots:
                if s in ("__dict__", "__weakref__"):
                    continue
                try:
                    x = object.__getattribute__(v, s)
                except AttributeError:  # an empty slot
                    out.append(f"{s}=<unset>")
                    continue
                out.append(f"{s}={self.key(x, f'{path}.{s}', d)}")
        return "{" + ";".join(out) + "}"

    def instance(self, v, t, path, d):
        base = ""
        for b in (int, float, complex, str, bytes):  # a subclass of a builtin value: that value too
            if isinstance(v, b):
                base = f"<{b.__name__}:{b.__repr__(v)}>"
        if dataclasses.is_dataclass(v) or isinstance(v, types.SimpleNamespace) or is_user_type(t):
            return f"obj:{self.key(t, f'type({path})', d)}{base}{self.fields(v, path, d)}"
        return self.installed(v, t, path)  # pragma: no cover - user and namespace types are handled above

    def installed(self, v, t, path):
        """A value of the standard library or of an installed package: known immutable values by ``repr``."""
        module = getattr(t, "__module__", "") or ""
        top = module.split(".")[0]
        if isinstance(v, _REPR_TYPES) or (top == "torch" and t.__name__ == "dtype") or module == "typing" or \
                isinstance(v, (types.GenericAlias, types.UnionType)) or \
                (top == "numpy" and (t.__name__ == "dtype" or module == "numpy.dtypes")):
            return f"{_name(t)}:{v!r}"
        if top == "numpy" and hasattr(v, "dtype") and hasattr(v, "tobytes"):  # arrays and scalars
            return _deps.value_key(v, strict=True)
        if top in ("torch", "cupy", "jax", "jaxlib") or hasattr(v, "__cuda_array_interface__") or \
                hasattr(v, "__dlpack__"):
            raise Unkeyable(f"{path} is a {_name(t)} (device memory or a framework object: its contents are "
                            f"run-time data; pass arrays as arguments)")
        raise Unkeyable(f"{path} is a {_name(t)}: an object with no key by value (an open file, a lock, a "
                        f"stream, a logger...) cannot be part of a compile's key")


def _is_stream(x: object) -> bool:
    """A CUDA stream object (a driver ``CUstream``, a torch or cupy stream, ``__cuda_stream__``)."""
    t = type(x)
    module = getattr(t, "__module__", "") or ""
    return (t.__name__ == "CUstream" and module.startswith("cuda")) or hasattr(x, "__cuda_stream__") or \
        (module.startswith(("torch", "cupy")) and "Stream" in t.__name__)
