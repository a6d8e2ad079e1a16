"""One C-level check of the torch tensors of a call, for the generated launch paths of ``compiled``.

A generated call checks each torch tensor argument against the one its fast path was made for: its Python type,
dtype, shape, strides and that it is on a CUDA device. Done attribute by attribute in Python these reads are most
of a launch's host time (about 150 ns a tensor). torch's own guard object (``torch._C._dynamo.guards.
TensorGuards``, what its compiler uses to re-check tensors) does all of them for every tensor in one call.

That object is not a documented API, so :func:`tensor_guard` uses it only where it exists and, tried on the
call's own tensors and on views of them that differ in one property each, behaves as the checks it replaces: it
accepts the tensors and rejects every probe. Otherwise it returns ``None`` and the generated code checks in
Python. The guard is stricter than the Python checks (it also compares the device index, the autograd state and
the dimension count of run-time-shaped tensors, and it refuses one tensor passed at two positions), so a call it
rejects is checked again in Python before it goes to the general path: it may only make a call slower, never
accept one the Python checks would refuse.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["tensor_guard"]


def tensor_guard(tensors: Sequence[Any], dynamic: Sequence[bool]) -> Callable[..., bool] | None:
    """``check(*tensors) -> bool``, true only for torch tensors of the exact Python types, dtypes, devices, autograd
    states and dimension counts of ``tensors`` with, where ``dynamic[k]`` is false, their extents and strides; or
    ``None`` where torch offers no such check or it fails its probes (see the module's docstring). The probes run
    once per process for each kind of tensor list (types, dtypes, device types, dimension counts, ``dynamic``):
    what they establish is how torch's guard treats that kind, not these tensors' values."""
    torch = sys.modules.get("torch")  # torch tensors mean torch is loaded: nothing is imported here
    try:
        TensorGuards = torch._C._dynamo.guards.TensorGuards
    except Exception:  # no torch, or an older or newer one without it: the Python checks
        return None
    try:  # anything but torch tensors (or a guard of another signature) raises here: the Python checks
        sizes = [[None] * t.dim() if d else list(t.shape) for t, d in zip(tensors, dynamic)]
        strides = [[None] * t.dim() if d else list(t.stride()) for t, d in zip(tensors, dynamic)]
        check = TensorGuards(*tensors, dynamic_dims_sizes=sizes, dynamic_dims_strides=strides).check
        if check(*tensors) is not True:
            return None
        kind = (TensorGuards,) + tuple((type(t), t.dtype, t.device.type, t.dim(), bool(d))
                                       for t, d in zip(tensors, dynamic))
        if kind not in _PROBED:
            for k, (t, d) in enumerate(zip(tensors, dynamic)):
                for probe in _probes(torch, t, d):
                    if check(*tensors[:k], probe, *tensors[k + 1:]) is not False:
                        return None
            _PROBED.add(kind)
    except Exception:  # a signature or behaviour this module does not know: the Python checks
        return None
    return check


_PROBED: set = set()  # (guard class, kinds of tensors) whose guards passed every probe in this process


def _probes(torch, t, dynamic):
    """Tensors that differ from ``t`` in one property the guard must check: the dtype (a reinterpreting view of
    another dtype of the same size), the device type (a CPU tensor, or a meta one for a CPU ``t``), the dimension
    count and, for a static ``t``, an extent and a stride (views of the same memory: nothing is allocated on the
    device). ``torch``: the torch module."""
    other = {1: torch.int8 if t.dtype != torch.int8 else torch.uint8,
             2: torch.int16 if t.dtype != torch.int16 else torch.float16,
             4: torch.int32 if t.dtype != torch.int32 else torch.float32,
             8: torch.int64 if t.dtype != torch.int64 else torch.float64}.get(t.element_size())
    if other is not None:
        yield t.view(other)
    # another device type (pages untouched: nothing is written)
    yield torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype, device="meta" if t.is_cpu else "cpu")
    yield t.unsqueeze(0)
    if not dynamic and t.dim():
        if t.shape[0]:
            yield t.as_strided((t.shape[0] - 1,) + tuple(t.shape[1:]), t.stride())
        k = next((k for k, s in enumerate(t.stride()) if s), None)
        if k is not None:  # a smaller stride stays inside the memory
            yield t.as_strided(tuple(t.shape), t.stride()[:k] + (0,) + t.stride()[k + 1:])
