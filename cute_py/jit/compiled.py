"""``Compiled``: the kernels of one specialisation of a jit function, loaded lazily and launched.

Calling a :class:`Compiled` reads the device addresses of its array arguments (a fast path
for torch tensors checks dtype, shape, strides and alignment against the specialisation),
encodes the TMA descriptors for them on the host (cached by address), fills each kernel's
parameter block (skipped when the addresses and scalars are those of the previous call)
and launches every recorded kernel.
"""

from . import cache as _cache
from .args import array_spec
from .errors import ArgumentError
from .values import RuntimeScalar

__all__ = ["Compiled", "SpecMismatch"]


class SpecMismatch(ArgumentError):
    """An argument does not have the dtype, shape, strides or alignment a kernel was compiled for."""


class Compiled:
    """Compiled kernels of one specialisation of a jit function: ``.mlir``, ``.ptx``, ``.cubin``, ``__call__``.

    Calling it with arguments of the same specialisation launches every recorded kernel on
    ``stream`` (default: the legacy default stream); trailing static arguments may be left out
    (they are compiled in), run-time ones (arrays, ``Int32``...) are read at each call.
    """

    def __init__(self, jf, launches, smem, sources, cubin, ptx, mlir_text, key):
        self.jit_function, self.launches, self.smem, self.sources = jf, launches, dict(smem), sources
        self.cubin, self._ptx, self._mlir, self.key = cubin, ptx, mlir_text, key
        self._funcs = None
        self._blocks = None
        self._desc_cache = {}
        self._last = None  # the pointers and scalars the parameter blocks hold
        self._torch_specs = {}  # argument index -> (torch dtype, shape, strides, alignment) seen to match

    @property
    def ptx(self):
        if self._ptx is None:
            self._ptx = (_cache.read_ptx(self.key) if self.key else None)
            if self._ptx is None:
                self._mlir, self._ptx, _, _ = _rebuild(self.launches)
        return self._ptx

    @property
    def mlir(self):
        if self._mlir is None:
            self._mlir, self._ptx, _, _ = _rebuild(self.launches)
        return self._mlir

    @property
    def kernel_names(self):
        return [ln.name for ln in self.launches]

    def _load(self):
        from . import launch as _launch

        _, self._funcs = _launch.load_module(self.cubin, self.smem)
        self._blocks = [_launch.ParamBlock([k for k, _ in ln.params]) for ln in self.launches]

    def _descriptor(self, desc, address):
        k = (id(desc), address)
        b = self._desc_cache.get(k)
        if b is None:
            if len(self._desc_cache) > 256:
                self._desc_cache.clear()
            b = self._desc_cache[k] = desc.encode(address)
        return b

    def __call__(self, *args, stream=0):
        from . import launch as _launch

        n = len(self.sources)
        if len(args) > n or any(kind != "static" for kind, _ in self.sources[len(args):]):
            raise ArgumentError(f"{self.jit_function.fn.__name__} was compiled for {n} arguments (the trailing "
                                f"static ones may be left out), got {len(args)}")
        ptrs = {}
        for i, ((kind, spec), a) in enumerate(zip(self.sources, args)):
            if kind == "tensor":
                ptrs[i] = self._pointer(i, spec, a)
        if self._funcs is None:
            self._load()
        key = (tuple(ptrs.values()), tuple(a.value if isinstance(a, RuntimeScalar) else a
                                           for (kind, _), a in zip(self.sources, args) if kind == "scalar"))
        if key != self._last:
            self._fill(ptrs, args)
            self._last = key
        for ln, block in zip(self.launches, self._blocks):
            _launch.launch(self._funcs[ln.name], ln.grid, ln.block, ln.cluster, self.smem[ln.name], stream, block)

    def _pointer(self, i, spec, a):
        """The device address of tensor argument ``i``, after checking it has the compiled dtype/shape/strides."""
        fast = self._torch_specs.get(i)
        if fast is not None and type(a).__module__.startswith("torch"):
            dtype, shape, strides, align = fast
            if a.dtype is dtype and a.shape == shape and a.stride() == strides and a.is_cuda:
                ptr = a.data_ptr()
                if ptr % align == 0:
                    return ptr
        got, ptr = array_spec(a)
        if got[:3] != spec[:3] or ptr % spec[3]:
            raise SpecMismatch(f"argument {i}: compiled for {spec} (dtype, shape, strides, alignment), got "
                                f"{got}; compile again for it (calling the jit function does)")
        if type(a).__module__.startswith("torch"):
            self._torch_specs[i] = (a.dtype, a.shape, a.stride(), spec[3])
        return ptr

    def _fill(self, ptrs, args):
        for ln, block in zip(self.launches, self._blocks):
            for j, (kind, src) in enumerate(ln.params):
                if kind == "ptr":
                    block.set(j, ptrs[src[0]] + src[1])
                elif kind == "desc":
                    desc, (idx, off) = src
                    block.set(j, self._descriptor(desc, ptrs[idx] + off))
                else:
                    idx = getattr(src, "index", None)
                    v = args[idx] if idx is not None else src
                    block.set(j, v.value if isinstance(v, RuntimeScalar) else v)

    def __repr__(self):
        return f"Compiled({self.jit_function.fn.__name__}: {', '.join(f'{n} smem={s}' for n, s in self.smem.items())})"


def _rebuild(launches):
    from .kernel import _build

    return _build(launches)
