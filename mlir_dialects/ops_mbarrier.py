"""mbarriers: initialise, arrive (locally, with a transaction count, or on a peer CTA), and wait on a phase."""

from ._backend import ext, ir, llvm, nvvm
from .dialect import CuteOp
from .lowering import const_int, finish, inline_ptx, lowers
from .types import AddressSpace, constant_int_of

__all__ = [
    "MbarrierInitOp",
    "MbarrierArriveOp",
    "MbarrierArriveClusterOp",
    "MbarrierArriveExpectTxOp",
    "MbarrierExpectTxOp",
    "MbarrierTryWaitParityOp",
    "MbarrierWaitParityOp",
    "FenceMbarrierInitOp",
    "mbarrier_init",
    "mbarrier_arrive",
    "mbarrier_arrive_cluster",
    "mbarrier_arrive_expect_tx",
    "mbarrier_expect_tx",
    "mbarrier_try_wait_parity",
    "mbarrier_wait_parity",
    "fence_mbarrier_init",
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


class MbarrierArriveOp(_MbarrierOp, name="mbarrier_arrive"):
    """Arrive on an mbarrier of this CTA; returns the 64-bit state of the phase arrived on.

    PTX: mbarrier.arrive.shared::cta.b64 state, [mbar];
    """

    mbar: ext.Operand[llvm.PointerType]
    state: ext.Result[I64] = ext.infer_result()

    def verify_rules(self):
        self.check_mbar()


class MbarrierArriveClusterOp(_MbarrierOp, name="mbarrier_arrive_cluster"):
    """Arrive on the mbarrier at the same shared address in CTA ``cta_id`` of the cluster (remote arrive).

    PTX: mapa.shared::cluster.u32 r, mbar, cta_id; mbarrier.arrive.release.cluster.shared::cluster.b64 _, [r];
    """

    mbar: ext.Operand[llvm.PointerType]
    cta_id: ext.Operand[I32]

    def verify_rules(self):
        self.check_mbar()


class MbarrierArriveExpectTxOp(_MbarrierOp, name="mbarrier_arrive_expect_tx"):
    """Arrive on an mbarrier and raise its expected transaction count by ``tx_count`` bytes.

    PTX: mbarrier.arrive.expect_tx.shared::cta.b64 _, [mbar], tx_count;
    """

    mbar: ext.Operand[llvm.PointerType]
    tx_count: ext.Operand[I32]

    def verify_rules(self):
        self.check_mbar()
        self.check_range("mbarrier-tx-range", "the transaction count", self.tx_count, 0, MBARRIER_MAX_TX)


class MbarrierExpectTxOp(_MbarrierOp, name="mbarrier_expect_tx"):
    """Raise an mbarrier's expected transaction count by ``tx_count`` bytes, without arriving.

    PTX: mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [mbar], tx_count;
    """

    mbar: ext.Operand[llvm.PointerType]
    tx_count: ext.Operand[I32]

    def verify_rules(self):
        self.check_mbar()
        self.check_range("mbarrier-tx-range", "the transaction count", self.tx_count, 0, MBARRIER_MAX_TX)


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


class MbarrierWaitParityOp(_MbarrierOp, name="mbarrier_wait_parity"):
    """Wait until the phase of parity ``phase`` has completed: a try_wait loop.

    PTX: LAB_WAIT: mbarrier.try_wait.parity.shared::cta.b64 p, [mbar], phase, ticks; @p bra DONE; bra LAB_WAIT;
    """

    mbar: ext.Operand[llvm.PointerType]
    phase: ext.Operand[I32]

    def verify_rules(self):
        self.check_mbar()
        self.check_range("mbarrier-parity", "the phase parity", self.phase, 0, 1)


class FenceMbarrierInitOp(CuteOp, name="fence_mbarrier_init"):
    """Make prior mbarrier.init visible to the other CTAs of the cluster.

    PTX: fence.mbarrier_init.release.cluster;
    """


# -- builders ------------------------------------------------------------------------------


def mbarrier_init(mbar, count):
    """Build ``cute_nvgpu.mbarrier_init``."""
    return MbarrierInitOp.build(mbar, count)


def mbarrier_arrive(mbar):
    """Build ``cute_nvgpu.mbarrier_arrive``; the op's ``state`` is the i64 phase state."""
    return MbarrierArriveOp.build(mbar)


def mbarrier_arrive_cluster(mbar, cta_id):
    """Build ``cute_nvgpu.mbarrier_arrive_cluster``."""
    return MbarrierArriveClusterOp.build(mbar, cta_id)


def mbarrier_arrive_expect_tx(mbar, tx_count):
    """Build ``cute_nvgpu.mbarrier_arrive_expect_tx``."""
    return MbarrierArriveExpectTxOp.build(mbar, tx_count)


def mbarrier_expect_tx(mbar, tx_count):
    """Build ``cute_nvgpu.mbarrier_expect_tx``."""
    return MbarrierExpectTxOp.build(mbar, tx_count)


def mbarrier_try_wait_parity(mbar, phase):
    """Build ``cute_nvgpu.mbarrier_try_wait_parity``; the op's ``done`` is an i1."""
    return MbarrierTryWaitParityOp.build(mbar, phase)


def mbarrier_wait_parity(mbar, phase):
    """Build ``cute_nvgpu.mbarrier_wait_parity``."""
    return MbarrierWaitParityOp.build(mbar, phase)


def fence_mbarrier_init():
    """Build ``cute_nvgpu.fence_mbarrier_init``."""
    return FenceMbarrierInitOp.build()


# -- lowering ------------------------------------------------------------------------------


def _u32(ptr):
    return llvm.PtrToIntOp(ir.IntegerType.get_signless(32), ptr).result


@lowers(MbarrierInitOp)
def lower_mbarrier_init(op, rewriter):
    with rewriter.ip:
        nvvm.MBarrierInitOp(op.mbar, op.count)
    finish(op, rewriter)


@lowers(MbarrierArriveOp)
def lower_mbarrier_arrive(op, rewriter):
    with rewriter.ip:
        state = nvvm.MBarrierArriveOp(op.mbar, results=[ir.IntegerType.get_signless(64)]).result
    finish(op, rewriter, state)


@lowers(MbarrierArriveClusterOp)
def lower_mbarrier_arrive_cluster(op, rewriter):
    with rewriter.ip:
        ptx = ("{\n\t.reg .b32 %rb;\n\tmapa.shared::cluster.u32 %rb, $0, $1;\n\t"
               "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%rb];\n\t}")
        inline_ptx(ptx, "r,r,~{memory}", [_u32(op.mbar), op.cta_id])
    finish(op, rewriter)


@lowers(MbarrierArriveExpectTxOp)
def lower_mbarrier_arrive_expect_tx(op, rewriter):
    with rewriter.ip:
        nvvm.MBarrierArriveExpectTxOp(op.mbar, op.tx_count)
    finish(op, rewriter)


@lowers(MbarrierExpectTxOp)
def lower_mbarrier_expect_tx(op, rewriter):
    with rewriter.ip:
        nvvm.MBarrierExpectTxOp(op.mbar, op.tx_count)
    finish(op, rewriter)


@lowers(MbarrierTryWaitParityOp)
def lower_mbarrier_try_wait_parity(op, rewriter):
    with rewriter.ip:
        ptx = ("{\n\t.reg .pred %p;\n\tmbarrier.try_wait.parity.shared::cta.b64 %p, [$1], $2;\n\t"
               "selp.u32 $0, 1, 0, %p;\n\t}")
        i32 = ir.IntegerType.get_signless(32)
        word = inline_ptx(ptx, "=r,r,r,~{memory}", [_u32(op.mbar), op.phase], i32).result
        done = llvm.ICmpOp(llvm.ICmpPredicate.ne, word, const_int(0)).result
    finish(op, rewriter, done)


@lowers(MbarrierWaitParityOp)
def lower_mbarrier_wait_parity(op, rewriter):
    with rewriter.ip:
        nvvm.MBarrierTryWaitParityOp(op.mbar, op.phase, const_int(WAIT_TICKS))
    finish(op, rewriter)


@lowers(FenceMbarrierInitOp)
def lower_fence_mbarrier_init(op, rewriter):
    with rewriter.ip:
        nvvm.FenceMbarrierInitOp()
    finish(op, rewriter)
