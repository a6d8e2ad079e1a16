"""The emission of the synchronisation unit's copy: ``st.async`` of a register value into a peer CTA's shared
memory, completing its bytes on that CTA's mbarrier (``CopyDsmemStoreOp``), as an op of the ``cute_nvgpu`` dialect."""

from __future__ import annotations

import mlir_dialects as md

from ...nvgpu.sync import CopyDsmemStoreOp
from ..lang.memory import pointer_value
from ..lang.smem import check_mbarrier_pointer
from ..lang.traced_int import as_value

__all__ = ["ENTRIES"]


def _dsmem_store(b, op, dst, value, mbar, cta_id):
    """``st.async`` of ``value`` (an MLIR value of 32, 64 or 128 bits) to ``dst`` (this CTA's address of the
    element) in CTA ``cta_id``, completing its bytes on that CTA's ``mbar``."""
    check_mbarrier_pointer(mbar, "copy: mbar_ptr", peer=True)
    d, bar = pointer_value(dst, "the peer's shared-memory tile", peer=True), pointer_value(mbar, "mbar_ptr", peer=True)
    rank = as_value(cta_id, 32)
    with b.at_end():
        md.dsmem_store(d, value, bar, rank)


# op class -> (its entry, the dialect ops the entry builds)
ENTRIES = {
    CopyDsmemStoreOp: (_dsmem_store, ("dsmem_store",)),
}
