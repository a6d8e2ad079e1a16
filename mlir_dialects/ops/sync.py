"""Fences, cluster barriers, warp election, stores to a peer CTA's shared memory, programmatic dependent launch,
and the grid-wide barrier.

Which builder gives which inline PTX statement: the table of ``mlir_dialects.ops``.
"""

from typing import Any, Optional

from .._backend import ext, ir, llvm, nvvm
from ..dialect import CuteOp, Flag, bool_attr, str_attr
from ..types import AddressSpace, constant_int_of
from .common import const_int, finish, inline_ptx

__all__ = [
    "FenceProxyAsyncOp",
    "ClusterArriveOp",
    "ClusterWaitOp",
    "ElectSyncOp",
    "DsmemStoreOp",
    "FenceProxyOp",
    "GriddepcontrolOp",
    "GridSyncOp",
    "PROXY_ASYNC_SPACES",
    "PROXY_KINDS",
    "GRIDDEPCONTROL_KINDS",
]

PROXY_ASYNC_SPACES = ("shared::cta", "shared::cluster", "global")
PROXY_KINDS = ("alias", "async")  # fence.proxy.<kind> for every state space
GRIDDEPCONTROL_KINDS = ("wait", "launch_dependents")
I1, I32 = ir.IntegerType[1], ir.IntegerType[32]


class FenceProxyAsyncOp(CuteOp, name="fence_proxy_async"):
    """Order this thread's generic-proxy accesses of a state space before later async-proxy (TMA) accesses.

    PTX: fence.proxy.async.{shared::cta,shared::cluster,global};
    """

    space: ir.StringAttr

    def verify_rules(self):
        space = self.str_attr("space")
        if space not in PROXY_ASYNC_SPACES:
            self.fail("fence-proxy-async-space", f"state space must be one of {PROXY_ASYNC_SPACES}, got {space!r}")

    @classmethod
    def builder(cls, space="shared::cta"):
        """Build ``cute_nvgpu.fence_proxy_async``."""
        return cls.build(str_attr(space))

    def lower(self, rewriter):
        space = self.str_attr("space")
        with rewriter.ip:
            if space == "global":
                nvvm.FenceProxyOp(nvvm.ProxyKind.async_global)
            else:
                shared = nvvm.SharedSpace.shared_cta if space == "shared::cta" else nvvm.SharedSpace.shared_cluster
                nvvm.FenceProxyOp(nvvm.ProxyKind.async_shared, space=shared)
        finish(self, rewriter)


class ClusterArriveOp(CuteOp, name="cluster_arrive"):
    """Arrive on the cluster barrier (``relaxed``: without release semantics; ``aligned``: warp-uniform).

    PTX: barrier.cluster.arrive{.relaxed}{.aligned};
    """

    relaxed: Flag
    aligned: Flag

    def verify_rules(self):
        self.check_flags("relaxed", "aligned")

    @classmethod
    def builder(cls, *, relaxed=False, aligned=True):
        """Build ``cute_nvgpu.cluster_arrive``."""
        return cls.build(bool_attr(relaxed), bool_attr(aligned))

    def lower(self, rewriter):
        aligned = self.bool_attr("aligned") or None
        with rewriter.ip:
            if self.bool_attr("relaxed"):
                nvvm.ClusterArriveRelaxedOp(aligned=aligned)
            else:
                nvvm.ClusterArriveOp(aligned=aligned)
        finish(self, rewriter)


class ClusterWaitOp(CuteOp, name="cluster_wait"):
    """Wait until every thread of the cluster has arrived on the cluster barrier.

    PTX: barrier.cluster.wait{.aligned};
    """

    aligned: Flag

    def verify_rules(self):
        self.check_flags("aligned")

    @classmethod
    def builder(cls, *, aligned=True):
        """Build ``cute_nvgpu.cluster_wait``."""
        return cls.build(bool_attr(aligned))

    def lower(self, rewriter):
        with rewriter.ip:
            nvvm.ClusterWaitOp(aligned=self.bool_attr("aligned") or None)
        finish(self, rewriter)


class ElectSyncOp(CuteOp, name="elect_sync"):
    """Elect one leader lane among the lanes of ``membermask`` (all 32 by default); i1 true in the leader.

    PTX: elect.sync _|p, membermask;
    """

    membermask: Optional[ext.Operand[I32]] = None
    is_leader: ext.Result[I1] = ext.infer_result()

    def verify_rules(self):
        if self.membermask is not None and constant_int_of(self.membermask) == 0:
            self.fail("lane-mask-empty", "the member mask names no lane (0): a mask needs at least one lane")

    @classmethod
    def builder(cls, membermask=None):
        """Build ``cute_nvgpu.elect_sync``; the op's ``is_leader`` is an i1."""
        return cls.build(membermask=membermask)

    def lower(self, rewriter):
        with rewriter.ip:
            leader = nvvm.ElectSyncOp(membermask=self.membermask, results=[ir.IntegerType.get_signless(1)]).results[0]
        finish(self, rewriter, leader)


_DSMEM_TYPES = {("i", 32): ("b32", "r"), ("i", 64): ("b64", "l"), ("f", 32): ("b32", "f"), ("f", 64): ("b64", "d")}


_DSMEM_VECTORS = {(2, ("i", 32)), (4, ("i", 32)), (2, ("i", 64)), (2, ("f", 32)), (4, ("f", 32)), (2, ("f", 64))}


def _scalar_kind(t):
    if isinstance(t, ir.IntegerType):
        return ("i", t.width)
    if isinstance(t, ir.F32Type):
        return ("f", 32)
    if isinstance(t, ir.F64Type):
        return ("f", 64)
    return None


def _value_kind(t):
    """``(lanes, (kind, bits))`` of a value st.async can store (lanes 1 for a scalar), else None."""
    if isinstance(t, ir.VectorType):
        v = ir.VectorType(t)
        kind = (v.shape[0], _scalar_kind(v.element_type)) if v.rank == 1 else None
        return kind if kind in _DSMEM_VECTORS else None
    kind = _scalar_kind(t)
    return (1, kind) if kind in _DSMEM_TYPES else None


class DsmemStoreOp(CuteOp, name="dsmem_store"):
    """Store a 32/64-bit value, or a vector of 2 or 4 32-bit or 2 64-bit values (up to 16 bytes), into CTA
    ``cta_id``'s shared memory and complete its bytes on that CTA's mbarrier.

    PTX: mapa.shared::cluster.u32 ...; st.async.shared::cluster.mbarrier::complete_tx::bytes{.v2,.v4}.<b32|b64> [remote], value, [remote_mbar];
    """

    PTX_ISA = 81
    addr: ext.Operand[llvm.PointerType]
    value: ext.Operand[Any]
    mbar: ext.Operand[llvm.PointerType]
    cta_id: ext.Operand[I32]

    def verify_rules(self):
        self.expect_space("addr", self.addr, AddressSpace.SHARED)
        self.expect_space("mbar", self.mbar, AddressSpace.SHARED)
        if _value_kind(self.value.type) is None:
            self.fail("dsmem-value-type", f"st.async stores i32, i64, f32 or f64, or a vector of 2 or 4 32-bit or "
                                          f"2 64-bit values, got {self.value.type}")

    @classmethod
    def builder(cls, addr, value, mbar, cta_id):
        """Build ``cute_nvgpu.dsmem_store`` (addresses are this CTA's; ``cta_id`` picks the peer)."""
        return cls.build(addr, value, mbar, cta_id)

    def lower(self, rewriter):
        lanes, kind = _value_kind(self.value.type)
        bits, cons = _DSMEM_TYPES[kind]
        i32 = ir.IntegerType.get_signless(32)
        with rewriter.ip:
            addr = llvm.PtrToIntOp(i32, self.addr).result
            mbar = llvm.PtrToIntOp(i32, self.mbar).result
            if lanes == 1:
                values = [self.value]
            else:
                values = [llvm.ExtractElementOp(self.value, const_int(k)).result for k in range(lanes)]
            # operands: $0 the address, $1..$n the values, then the mbarrier and the CTA id
            n = len(values)
            vals = "$1" if n == 1 else "{" + ", ".join(f"${k + 1}" for k in range(n)) + "}"
            vec = "" if n == 1 else f".v{n}"
            ptx = ("{\n\t.reg .b32 %ra, %rb;\n\t"
                   f"mapa.shared::cluster.u32 %ra, $0, ${n + 2};\n\t"
                   f"mapa.shared::cluster.u32 %rb, ${n + 1}, ${n + 2};\n\t"
                   f"st.async.shared::cluster.mbarrier::complete_tx::bytes{vec}.{bits} [%ra], {vals}, [%rb];\n\t}}")
            constraints = ",".join(["r"] + [cons] * n + ["r", "r", "~{memory}"])
            inline_ptx(ptx, constraints, [addr, *values, mbar, self.cta_id])
        finish(self, rewriter)


class FenceProxyOp(CuteOp, name="fence_proxy"):
    """Order this thread's generic-proxy accesses with its accesses through proxy ``kind``: ``alias`` (accesses
    through aliased virtual addresses) or ``async`` (async-proxy accesses of every state space; one state space
    is ``fence_proxy_async``).

    PTX: fence.proxy.alias; | fence.proxy.async;
    """

    kind: ir.StringAttr

    def verify_rules(self):
        self.check_choice("fence-proxy-kind", "the proxy kind", self.str_attr("kind"), PROXY_KINDS)

    @classmethod
    def builder(cls, kind):
        """Build ``cute_nvgpu.fence_proxy``."""
        return cls.build(str_attr(kind))

    def lower(self, rewriter):
        with rewriter.ip:
            inline_ptx(f"fence.proxy.{self.str_attr('kind')};", "~{memory}", [])
        finish(self, rewriter)


class TrapOp(CuteOp, name="trap"):
    """Abort the kernel: every thread of the grid stops, the launch fails (an illegal-instruction error at the
    next synchronisation with the device) and the CUDA context with it, as a device-side assertion does.

    PTX: trap;
    """

    def lower(self, rewriter):
        with rewriter.ip:
            inline_ptx("trap;", "~{memory}", [])
        finish(self, rewriter)


class GriddepcontrolOp(CuteOp, name="griddepcontrol"):
    """Programmatic dependent launch: ``wait`` until the grids this one depends on have completed and their memory
    is visible (at once without such a dependency), or let the grids that depend on this one start launching
    (``launch_dependents``, a scheduling hint).

    PTX: griddepcontrol.wait; | griddepcontrol.launch_dependents;
    """

    kind: ir.StringAttr

    def verify_rules(self):
        self.check_choice("griddepcontrol-kind", "the action", self.str_attr("kind"), GRIDDEPCONTROL_KINDS)

    @classmethod
    def builder(cls, kind):
        """Build ``cute_nvgpu.griddepcontrol``."""
        return cls.build(str_attr(kind))

    def lower(self, rewriter):
        with rewriter.ip:
            inline_ptx(f"griddepcontrol.{self.str_attr('kind')};", "~{memory}", [])
        finish(self, rewriter)


# Thread (0, 0, 0) of each block adds to the barrier word at byte 4 of the cooperative launch's workspace
# (%envreg2 low, %envreg1 high): 1, or 2^31 - (blocks - 1) in block (0, 0, 0), so that the word's top bit flips
# once every block has arrived; it waits for the flip from the value its own atomic saw.
_GRID_SYNC = """{
\t.reg .pred %cute_gs_p;
\t.reg .u32 %cute_gs_a<8>;
\t.reg .b64 %cute_gs_w;
\tbarrier.sync 0;
\tmov.u32 %cute_gs_a0, %tid.x;
\tmov.u32 %cute_gs_a1, %tid.y;
\tmov.u32 %cute_gs_a2, %tid.z;
\tor.b32 %cute_gs_a0, %cute_gs_a0, %cute_gs_a1;
\tor.b32 %cute_gs_a0, %cute_gs_a0, %cute_gs_a2;
\tsetp.ne.u32 %cute_gs_p, %cute_gs_a0, 0;
\t@%cute_gs_p bra CUTE_GRID_SYNC_DONE;
\tmov.u32 %cute_gs_a0, %ctaid.x;
\tmov.u32 %cute_gs_a1, %ctaid.y;
\tmov.u32 %cute_gs_a2, %ctaid.z;
\tor.b32 %cute_gs_a0, %cute_gs_a0, %cute_gs_a1;
\tor.b32 %cute_gs_a0, %cute_gs_a0, %cute_gs_a2;
\tsetp.eq.u32 %cute_gs_p, %cute_gs_a0, 0;
\tmov.u32 %cute_gs_a3, %nctaid.x;
\tmov.u32 %cute_gs_a4, %nctaid.y;
\tmul.lo.u32 %cute_gs_a3, %cute_gs_a3, %cute_gs_a4;
\tmov.u32 %cute_gs_a4, %nctaid.z;
\tmul.lo.u32 %cute_gs_a3, %cute_gs_a3, %cute_gs_a4;
\tsub.u32 %cute_gs_a3, -2147483647, %cute_gs_a3;
\tselp.u32 %cute_gs_a3, %cute_gs_a3, 1, %cute_gs_p;
\tmov.b64 %cute_gs_w, {%envreg2, %envreg1};
\tadd.u64 %cute_gs_w, %cute_gs_w, 4;
\tfence.acq_rel.gpu;
\tatom.add.release.gpu.global.u32 %cute_gs_a5, [%cute_gs_w], %cute_gs_a3;
CUTE_GRID_SYNC_SPIN:
\tld.acquire.gpu.global.u32 %cute_gs_a6, [%cute_gs_w];
\txor.b32 %cute_gs_a7, %cute_gs_a5, %cute_gs_a6;
\tsetp.lt.s32 %cute_gs_p, %cute_gs_a7, 0;
\t@!%cute_gs_p bra CUTE_GRID_SYNC_SPIN;
\tfence.acq_rel.gpu;
CUTE_GRID_SYNC_DONE:
\tbarrier.sync 0;
}"""


class GridSyncOp(CuteOp, name="grid_sync"):
    """Wait until every thread of the grid has reached this barrier; memory accesses before it (of any block) are
    visible to every thread after it. Only a cooperative launch (every block resident at once, no clusters)
    provides the barrier's workspace; every thread of every block must reach it. The word keeps its low bits, so
    a kernel may hold the barrier any number of times (its labels are local to its braces).

    PTX: barrier.sync 0; ... atom.add.release.gpu.global.u32 ..., [%envreg workspace + 4], ...; ld.acquire.gpu spin; barrier.sync 0;
    """

    def lower(self, rewriter):
        with rewriter.ip:
            inline_ptx(_GRID_SYNC, "~{memory}", [])
        finish(self, rewriter)
