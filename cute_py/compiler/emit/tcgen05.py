"""The emission of Blackwell's tensor-core unit (tcgen05, sm_100a): the mbarrier arrival that tracks a thread's
tcgen05 operations (``cute_nvgpu.tcgen05_commit``)."""

from __future__ import annotations

from typing import Any

import mlir_dialects as md

from ..lang.builder import current

__all__ = ["ENTRIES", "commit_arrive"]


def commit_arrive(mbar: Any) -> None:
    """``tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [mbar]`` (``mbar`` the ``i32``
    shared-memory address of the mbarrier): one arrival once this thread's earlier tcgen05 operations complete."""
    with current().at_end():
        md.tcgen05_commit(mbar)


# op class -> (its entry, the dialect ops the entry builds): no tcgen05 op class is emitted yet
ENTRIES: dict[type, tuple[Any, tuple[str, ...]]] = {}
