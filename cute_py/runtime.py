"""``cute_py.runtime``: tensors for the host side, as the CuTe DSL's ``cute.runtime``.

:func:`make_fake_tensor` describes a global-memory tensor without storage (to build atoms and compile
kernels with no GPU and no data); :class:`HostInt` is an extent or stride known on the host but a
run-time value of the kernel.  They are defined in :mod:`cute_py.tensor.fake`.
"""

from .tensor.fake import HostInt, host_layout, make_fake_tensor, value_of

__all__ = ["make_fake_tensor", "HostInt", "host_layout", "value_of"]
