"""CPU (numpy) execution of every copy atom and of the tensor-core instructions, with the hardware's semantics,
one module per hardware unit:

- :mod:`.cpasync`: ``cp.async`` (:func:`cp_async`; bytes past ``src_size`` are zero-filled) and a whole
  cp.async tiled copy (:func:`run_cp_async_copy`);
- :mod:`.tma`: TMA loads (multicast, im2col), stores and reductions at TMA coordinates through a descriptor,
  and a whole TMA tiled copy (:func:`run_tma_copy`);
- :mod:`.sync`: the mbarrier (:class:`MBarrier`) and ``st.async`` into a peer CTA (:func:`dsmem_store`);
- :mod:`.warp`: ``mma.sync``, ``ldmatrix``, ``stmatrix`` and a whole tiled warp MMA;
- :mod:`.warpgroup`: one ``wgmma.mma_async`` on shared-memory operands read through their descriptors;
- :mod:`.universal`: the universal copy (a plain load and store);
- :mod:`.common`: what they share (memory as bytes, the tiles of a tiled copy).

Each unit declares ``ENTRIES = {copy op class: the function that executes one instruction}``; ``REFERENCE``
below is their union (an op class in two units is an error), keyed as the kernel compiler's emission table
and the dialect's lowering rules are. Nothing registers itself when it is imported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import cpasync, sync, tma, universal, warp, warpgroup
from .cpasync import cp_async, run_cp_async_copy
from .sync import MBarrier, dsmem_store
from .tma import (box_gmem_bytes, im2col_box_elements, run_tma_copy, tma_instructions, tma_load, tma_load_im2col,
                  tma_reduce, tma_store)
from .universal import universal_copy
from .warp import ldmatrix, mma_a_coord, mma_b_coord, mma_c_coord, mma_sync, run_tiled_mma, stmatrix
from .warpgroup import c_fragment_coord, decode_desc, wgmma, wgmma_operand

__all__ = [
    "UNITS",
    "REFERENCE",
    "MBarrier",
    "cp_async",
    "tma_load",
    "tma_load_im2col",
    "im2col_box_elements",
    "tma_store",
    "tma_reduce",
    "box_gmem_bytes",
    "tma_instructions",
    "dsmem_store",
    "run_tma_copy",
    "run_cp_async_copy",
    "universal_copy",
    # the warp and warpgroup units
    "mma_a_coord",
    "mma_b_coord",
    "mma_c_coord",
    "mma_sync",
    "ldmatrix",
    "stmatrix",
    "run_tiled_mma",
    "decode_desc",
    "wgmma_operand",
    "wgmma",
    "c_fragment_coord",
]

UNITS = (cpasync, tma, sync, warp, warpgroup, universal)


def _union() -> dict[type, Callable[..., Any]]:
    table: dict[type, Callable[..., Any]] = {}
    for unit in UNITS:
        for op_class, fn in unit.ENTRIES.items():
            if op_class in table:
                raise RuntimeError(f"{op_class.__name__} has a CPU reference in two units")
            table[op_class] = fn
    return table


# one instruction of each copy op: the function that executes it (the kernel compiler's emission table and the
# dialect's lowering rules are the other two tables keyed the same way)
REFERENCE = _union()
