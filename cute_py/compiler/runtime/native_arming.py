"""What a generated launch path (``launch_paths``) arms the native launcher (``native``) with, and how the
launcher is attached in front of it.

The launcher's C code is the same for every compiled object; what it launches is data: the plan (per launch:
function, grid, block, shared memory, parameter array) and, for calls at new addresses, a refill: the parameter
slots that hold a tensor's address (pointer parameters, and the address field of TMA descriptors whose
encodings were seen to hold the address verbatim), each with its tensor and offset.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from typing import Any

from . import native

__all__ = ["launcher_for", "native_plan", "refill", "attach"]


def launcher_for(c: Any, positions: Sequence[int], env: dict[str, Any]) -> Any | None:
    """A native launcher for ``c`` (its tensors at ``positions``) where one can be made and the plan fits it,
    also put in ``env`` as ``native``; else ``None``."""
    if len(c._plan) > native.MAX_LAUNCHES:
        return None
    launcher = native.make_launcher(tuple(positions), len(c.sources), c._lock)
    if launcher is not None:
        env["native"] = launcher
    return launcher


def native_plan(plan: tuple) -> tuple:
    """A ``Compiled._plan`` as the native launcher takes it: per launch (function address, grid x3, block x3,
    shared memory bytes, parameter array address)."""
    return tuple((int(f), gx, gy, gz, bx, by, bz, smem, params) for f, gx, gy, gz, bx, by, bz, smem, params, _ in plan)


def refill(c: Any, positions: Sequence[int], aligns: Sequence[int], resets: tuple[str, ...],
           addresses: Sequence[int], bound: Callable[[Any], Any]) -> tuple | None:
    """The native launcher's refill for ``c`` (see ``native/arm.c``): ``(c, resets, alignments, writes)``, one
    write per pointer parameter and per TMA descriptor (its address field), or ``None`` where new addresses change
    more than that: a parameter made from a tensor not at ``positions``, or a descriptor whose encoding is not
    the address in its first 8 bytes and the rest independent of it (``_patchable``). ``aligns``: the compiled
    alignment of each tensor; ``addresses``: those the parameters are filled for now; ``bound(desc)``: the
    descriptor as encoded (bound to the extents, for a run-time-shaped one)."""
    import ctypes
    import math

    slot_of = {i: k for k, i in enumerate(positions)}
    aligns, writes = list(aligns), []
    for ln, block in zip(c.launches, c._blocks):
        for j, (kind, src) in enumerate(ln.params):
            if kind == "ptr":
                i, off = src
            elif kind == "desc":
                desc, (i, off) = src
            else:
                continue
            if i not in slot_of or type(off) is not int or off < 0:
                return None
            k = slot_of[i]
            if kind == "desc":
                if not _patchable(bound(desc), bytes(block.slots[j]), addresses[k] + off):
                    return None
                aligns[k] = math.lcm(aligns[k], 16)  # a descriptor's address: 16 bytes
            writes.append((ctypes.addressof(block.slots[j]), k, off))
    if len(writes) > native.MAX_WRITES:
        return None
    return c, resets, tuple(aligns), tuple(writes)


_PROBES = (0x0000_1234_5678_9A00, 0x0000_7EDC_BA98_7600, 0x0000_0000_0010_0000)
_PATCHABLE: dict = {}  # descriptor (without its address) -> whether its encodings differ only in the address field


def _patchable(desc, current, address):
    """Whether ``current``, the 128 bytes the driver encoded for ``desc`` at ``address``, holds that address in its
    first 8 bytes (little-endian) and whether the driver's encodings of ``desc`` at other addresses (the probes,
    once per kind of descriptor and process) are ``current`` with only those 8 bytes changed: the driver's format
    is not documented, so a refill patches it only where that was seen."""
    import dataclasses

    if current[:8] != address.to_bytes(8, "little"):
        return False
    try:
        key = repr(dataclasses.replace(desc, global_address=None))
    except Exception:  # not a dataclass of ours: probed each time
        key = None
    verdict = _PATCHABLE.get(key)
    if verdict is None:
        try:
            verdict = all(desc.encode(p) == p.to_bytes(8, "little") + current[8:] for p in _PROBES)
        except Exception:  # a descriptor the probes cannot encode: re-encoded by the Python path
            verdict = False
        if key is not None:
            _PATCHABLE[key] = verdict
    return verdict


def attach(c: Any, call: Callable[..., Any], launcher: Any) -> None:
    """Put ``launcher`` in front of the generated ``call`` of ``c``: every call it does not launch goes to
    ``call`` bound to ``c``, and a launch it fails is reported as the Python path reports one."""
    launcher.fallback = types.MethodType(call, c)

    def on_error(code, j):
        from . import launch as _launch

        f, gx, gy, gz, bx, by, bz, smem, *_ = c._plan[j]
        c._launch_error(_launch.driver().CUresult(code), (gx, gy, gz), (bx, by, bz), (1, 1, 1), smem)

    launcher.on_error = on_error
