"""``cute_py.arch``: the kernel builtins (thread/block indices, elect, barriers, mbarriers, fences, TMA groups,
shared memory). They are defined in :mod:`cute_py.jit.arch`; importing this module loads the JIT."""

from .jit import arch as _impl

__all__ = list(_impl.__all__)
globals().update({name: getattr(_impl, name) for name in __all__})
