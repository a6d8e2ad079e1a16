"""The launches a jit function makes for some arguments, from its host trace alone: the grid, block and cluster
rules of the example kernels are host code, so their tests need not build the kernels (each build of an attention
kernel takes seconds; its PTX is checked by the tests that build it)."""

import contextlib

import cute_py as cute
from cute_py.compiler.host import kernel as _kernel

__all__ = ["launches_of"]


class _Traced(Exception):
    def __init__(self, launches):
        super().__init__("traced")
        self.launches = launches


def _stop(launches, *args, **kwargs):
    raise _Traced(list(launches))


@contextlib.contextmanager
def _no_build():
    real = _kernel.build
    _kernel.build = _stop
    try:
        yield
    finally:
        _kernel.build = real


def launches_of(fn, *args, **kwargs):
    """The launches (``.grid``, ``.block``, ``.cluster``...) of ``cute.compile(fn, *args, **kwargs)``, from its host
    trace (or from a compile of the same code this process or the disk cache already holds)."""
    with _no_build():
        try:
            return list(cute.compile(fn, *args, **kwargs).launches)
        except _Traced as t:
            return t.launches
