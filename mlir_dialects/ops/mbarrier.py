"""mbarriers: initialise, arrive (locally, with a transaction count, or on a peer CTA), and wait on a phase."""

from .._backend import ext, ir, llvm, nvvm
from ..dialect import CuteOp
from ..types import AddressSpace, constant_int_of
from .common import const_int, finish, inline_ptx, u32_of

__all__ = [
    "MbarrierInitOp",
    "MbarrierArriveOp",
    "MbarrierArriveClusterOp",
    "MbarrierArriveExpectTxOp",
    "MbarrierExpectTxOp",
    "MbarrierTryWaitParityOp",
    "MbarrierWaitParityOp",
    "FenceMbarrierInitOp",
    "MBARRIER_MAX_COUNT",
    "MBARRIER_MAX_TX",
]

MBARRIER_MAX_COUNT = (1 << 20) - 1  # arrival counts are 20-bit
MBARRIER_MAX_TX = (1 << 20) - 1  # transaction counts too
I1, I32, I64 = ir.IntegerType[1], ir.IntegerType[32], ir.IntegerType[64]
WAIT_TICKS = 0x989680  # suspend-time hint of the waiting loop, in ns (10 ms)


class _MbarrierOp(CuteOp):
    def check_mbar(self):
        self.expect_space("mbar", self.mbar, AddressSpace.SHARED)

    def check_range(self, rule, role, value, lo, hi):
        n = constant_int_of(value)
        if n is not None and not lo <= n <= hi:
            self.fail(rule, f"{role} must lie in [{lo}, {hi}], got {n}")


class MbarrierInitOp(_MbarrierOp, name="mbarrier_init"):
    """Initialise an mbarrier for ``count`` arrivals per phase.

    PTX: mbarrier.init.shared::cta.b64 [mbar], count;
    """

    mbar: ext.Operand[llvm.PointerType]
    count: ext.Operand[I32]

    def verify_rules(self):
        self.check_mbar()
        self.check_range("mbarrier-count-range", "the arrival count", self.count, 1, MBARRIER_MAX_COUNT)

    def lower(self, rewriter):
        with rewriter.ip:
            nvvm.MBarrierInitOp(self.mbar, self.count)
        finish(self, rewriter)


class MbarrierArriveOp(_MbarrierOp, name="mbarrier_arrive"):
    """Arrive on an mbarrier of this CTA; returns the 64-bit state of the phase arrived on.

    PTX: mbarrier.arrive.shared::cta.b64 state, [mbar];
    """

    mbar: ext.Operand[llvm.PointerType]
    state: ext.Result[I64] = ext.infer_result()

    def verify_rules(self):
        self.check_mbar()

    @classmethod
    def builder(cls, mbar):
        """Build ``cute_nvgpu.mbarrier_arrive``; the op's ``state`` is the i64 phase state."""
        return cls.build(mbar)

    def lower(self, rewriter):
        with rewriter.ip:
            state = nvvm.MBarrierArriveOp(self.mbar, results=[ir.IntegerType.get_signless(64)]).result
        finish(self, rewriter, state)


class MbarrierArriveClusterOp(_MbarrierOp, name="mbarrier_arrive_cluster"):
    """Arrive on the mbarrier at the same shared address in CTA ``cta_id`` of the cluster (remote arrive).

    PTX: mapa.shared::cluster.u32 r, mbar, cta_id; mbarrier.arrive.release.cluster.shared::cluster.b64 _, [r];
    """

    mbar: ext.Operand[llvm.PointerType]
    cta_id: ext.Operand[I32]

    def verify_rules(self):
        self.check_mbar()

    def lower(self, rewriter):
        with rewriter.ip:
            ptx = ("{\n\t.reg .b32 %rb;\n\tmapa.shared::cluster.u32 %rb, $0, $1;\n\t"
                   "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%rb];\n\t}")
            inline_ptx(ptx, "r,r,~{memory}", [u32_of(self.mbar), self.cta_id])
        finish(self, rewriter)


class MbarrierArriveExpectTxOp(_MbarrierOp, name="mbarrier_arrive_expect_tx"):
    """Arrive on an mbarrier and raise its expected transaction count by ``tx_count`` bytes.

    PTX: mbarrier.arrive.expect_tx.shared::cta.b64 _, [mbar], tx_count;
    """

    mbar: ext.Operand[llvm.PointerType]
    tx_count: ext.Operand[I32]

    def verify_rules(self):
        self.check_mbar()
        self.check_range("mbarrier-tx-range", "the transaction count", self.tx_count, 0, MBARRIER_MAX_TX)

    def lower(self, rewriter):
        with rewriter.ip:
            nvvm.MBarrierArriveExpectTxOp(self.mbar, self.tx_count)
        finish(self, rewriter)


class MbarrierExpectTxOp(_MbarrierOp, name="mbarrier_expect_tx"):
    """Raise an mbarrier's expected transaction count by ``tx_count`` bytes, without arriving.

    PTX: mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [mbar], tx_count;
    """

    mbar: ext.Operand[llvm.PointerType]
    tx_count: ext.Operand[I32]

    def verify_rules(self):
        self.check_mbar()
        self.check_range("mbarrier-tx-range", "the transaction count", self.tx_count, 0, MBARRIER_MAX_TX)

    def lower(self, rewriter):
        with rewriter.ip:
            nvvm.MBarrierExpectTxOp(self.mbar, self.tx_count)
        finish(self, rewriter)


class MbarrierTryWaitParityOp(_MbarrierOp, name="mbarrier_try_wait_parity"):
    """Test once (with a bounded hardware wait) whether the phase of parity ``phase`` has completed.

    PTX: mbarrier.try_wait.parity.shared::cta.b64 p, [mbar], phase;
    """

    mbar: ext.Operand[llvm.PointerType]
    phase: ext.Operand[I32]
    done: ext.Result[I1] = ext.infer_result()

    def verify_rules(self):
        self.check_mbar()
        self.check_range("mbarrier-parity", "the phase parity", self.phase, 0, 1)

    @classmethod
    def builder(cls, mbar, phase):
        """Build ``cute_nvgpu.mbarrier_try_wait_parity``; the op's ``done`` is an i1."""
        return cls.build(mbar, phase)

    def lower(self, rewriter):
        with rewriter.ip:
            ptx = ("{\n\t.reg .pred %p;\n\tmbarrier.try_wait.parity.shared::cta.b64 %p, [$1], $2;\n\t"
                   "selp.u32 $0, 1, 0, %p;\n\t}")
            i32 = ir.IntegerType.get_signless(32)
            word = inline_ptx(ptx, "=r,r,r,~{memory}", [u32_of(self.mbar), self.phase], i32).result
            done = llvm.ICmpOp(llvm.ICmpPredicate.ne, word, const_int(0)).result
        finish(self, rewriter, done)


class MbarrierWaitParityOp(_MbarrierOp, name="mbarrier_wait_parity"):
    """Wait until the phase of parity ``phase`` has completed: a try_wait loop.

    PTX: LAB_WAIT: mbarrier.try_wait.parity.shared::cta.b64 p, [mbar], phase, ticks; @p bra DONE; bra LAB_WAIT;
    """

    mbar: ext.Operand[llvm.PointerType]
    phase: ext.Operand[I32]

    def verify_rules(self):
        self.check_mbar()
        self.check_range("mbarrier-parity", "the phase parity", self.phase, 0, 1)

    def lower(self, rewriter):
        with rewriter.ip:
            nvvm.MBarrierTryWaitParityOp(self.mbar, self.phase, const_int(WAIT_TICKS))
        finish(self, rewriter)


class FenceMbarrierInitOp(CuteOp, name="fence_mbarrier_init"):
    """Make prior mbarrier.init visible to the other CTAs of the cluster.

    PTX: fence.mbarrier_init.release.cluster;
    """

    def lower(self, rewriter):
        with rewriter.ip:
            nvvm.FenceMbarrierInitOp()
        finish(self, rewriter)
