"""mbarriers: initialise, arrive (locally, with a transaction count, or on a peer CTA), and wait on a phase.

Which builder gives which inline PTX statement: the table of ``mlir_dialects.ops``.
"""

from typing import Optional

from .._backend import ext, ir, llvm, nvvm
from ..dialect import CuteOp, str_attr
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
    "MbarrierScopedOp",
    "MbarrierTestWaitParityOp",
    "MbarrierTryWaitParityIfOp",
    "MBARRIER_SCOPED_KINDS",
    "MBARRIER_MAX_COUNT",
    "MBARRIER_MAX_TX",
]

MBARRIER_MAX_COUNT = (1 << 20) - 1  # arrival counts are 20-bit
MBARRIER_MAX_TX = (1 << 20) - 1  # transaction counts too
I1, I32, I64 = ir.IntegerType[1], ir.IntegerType[32], ir.IntegerType[64]
WAIT_TICKS = 0x989680  # suspend-time hint of the waiting loop, in ns (10 ms)
MAX_CLUSTER_CTAS = 16
# kind -> (PTX on an mbarrier at [%s], whose value is %s; the least value)
MBARRIER_SCOPED_KINDS = {
    "arrive": ("mbarrier.arrive.release.{sc}.{space}.b64 {state}, [{m}], {v};", 1),
    "arrive_expect_tx": ("mbarrier.arrive.expect_tx.release.{sc}.{space}.b64 _, [{m}], {v};", 0),
    "expect_tx": ("mbarrier.expect_tx.relaxed.{sc}.{space}.b64 [{m}], {v};", 0),
}


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


class MbarrierScopedOp(_MbarrierOp, name="mbarrier_scoped"):
    """Arrive ``value`` times (``arrive``), raise the expected transaction count by ``value`` bytes and arrive once
    (``arrive_expect_tx``), or raise it without arriving (``expect_tx``), on the mbarrier at ``mbar`` or, with
    ``peer``, on the one at the same offset in that CTA of the cluster; arrivals are ``.release``, ``expect_tx``
    ``.relaxed``, at ``scope`` (``cta`` or ``cluster``).

    PTX: {mapa.shared::cluster.u32 r, mbar, peer;} mbarrier.{arrive.release,arrive.expect_tx.release,expect_tx.relaxed}.<scope>.shared::{cta,cluster}.b64 {_,} [mbar|r], value;
    """

    kind: ir.StringAttr
    scope: ir.StringAttr
    mbar: ext.Operand[llvm.PointerType]
    value: ext.Operand[I32]
    peer: Optional[ext.Operand[I32]] = None

    def verify_rules(self):
        kind = self.check_choice("mbarrier-scoped-kind", "the operation", self.str_attr("kind"),
                                 tuple(MBARRIER_SCOPED_KINDS))
        self.check_choice("mbarrier-scope", "the scope", self.str_attr("scope"), ("cta", "cluster"))
        self.check_mbar()
        least = MBARRIER_SCOPED_KINDS[kind][1]
        rule, role = ("mbarrier-count-range", "the arrival count") if least else ("mbarrier-tx-range", "the bytes")
        self.check_range(rule, role, self.value, least, MBARRIER_MAX_COUNT)
        if self.peer is not None:
            self.check_range("mbarrier-peer-rank", "the peer CTA's rank", self.peer, 0, MAX_CLUSTER_CTAS - 1)

    @classmethod
    def builder(cls, kind, mbar, value, *, scope="cta", peer=None):
        """Build ``cute_nvgpu.mbarrier_scoped`` (``kind``: arrive, arrive_expect_tx or expect_tx)."""
        return cls.build(str_attr(kind), str_attr(scope), mbar, value, peer=peer)

    def lower(self, rewriter):
        kind, sc = self.str_attr("kind"), self.str_attr("scope")
        form = MBARRIER_SCOPED_KINDS[kind][0]
        with rewriter.ip:
            mbar = u32_of(self.mbar)
            if self.peer is None:
                instr = form.format(sc=sc, space="shared::cta", state="%st", m="$0", v="$1")
                ptx = "{\n\t.reg .b64 %st;\n\t" + instr + "\n\t}" if kind == "arrive" else instr
                inline_ptx(ptx, "r,r,~{memory}", [mbar, self.value])
            else:
                instr = form.format(sc=sc, space="shared::cluster", state="_", m="%rb", v="$2")
                ptx = "{\n\t.reg .b32 %rb;\n\tmapa.shared::cluster.u32 %rb, $0, $1;\n\t" + instr + "\n\t}"
                inline_ptx(ptx, "r,r,r,~{memory}", [mbar, self.peer, self.value])
        finish(self, rewriter)


def _flag(word):
    """The i1 ``word != 0`` of an i32 from ``selp``."""
    return llvm.ICmpOp(llvm.ICmpPredicate.ne, word, const_int(0)).result


class MbarrierTestWaitParityOp(_MbarrierOp, name="mbarrier_test_wait_parity"):
    """Test once, without waiting, whether the phase of parity ``phase`` has completed.

    PTX: mbarrier.test_wait.parity.shared::cta.b64 p, [mbar], phase;
    """

    mbar: ext.Operand[llvm.PointerType]
    phase: ext.Operand[I32]
    done: ext.Result[I1] = ext.infer_result()

    def verify_rules(self):
        self.check_mbar()
        self.check_range("mbarrier-parity", "the phase parity", self.phase, 0, 1)

    @classmethod
    def builder(cls, mbar, phase):
        """Build ``cute_nvgpu.mbarrier_test_wait_parity``; the op's ``done`` is an i1."""
        return cls.build(mbar, phase)

    def lower(self, rewriter):
        with rewriter.ip:
            ptx = ("{\n\t.reg .pred %p;\n\tmbarrier.test_wait.parity.shared::cta.b64 %p, [$1], $2;\n\t"
                   "selp.u32 $0, 1, 0, %p;\n\t}")
            word = inline_ptx(ptx, "=r,r,r,~{memory}", [u32_of(self.mbar), self.phase],
                              ir.IntegerType.get_signless(32)).result
            done = _flag(word)
        finish(self, rewriter, done)


class MbarrierTryWaitParityIfOp(_MbarrierOp, name="mbarrier_try_wait_parity_if"):
    """Where ``cond`` holds, ``mbarrier_try_wait_parity`` (whether the phase of parity ``phase`` has completed,
    after a bounded wait); where it does not, true without waiting.

    PTX: setp.ne.b32 c, cond, 0; setp.eq.b32 p, 0, 0; @c mbarrier.try_wait.parity.shared::cta.b64 p, [mbar], phase;
    """

    cond: ext.Operand[I1]
    mbar: ext.Operand[llvm.PointerType]
    phase: ext.Operand[I32]
    done: ext.Result[I1] = ext.infer_result()

    def verify_rules(self):
        self.check_mbar()
        self.check_range("mbarrier-parity", "the phase parity", self.phase, 0, 1)

    @classmethod
    def builder(cls, cond, mbar, phase):
        """Build ``cute_nvgpu.mbarrier_try_wait_parity_if``; the op's ``done`` is an i1."""
        return cls.build(cond, mbar, phase)

    def lower(self, rewriter):
        i32 = ir.IntegerType.get_signless(32)
        with rewriter.ip:
            cond = llvm.ZExtOp(i32, self.cond).result
            ptx = ("{\n\t.reg .pred %c, %p;\n\tsetp.ne.b32 %c, $1, 0;\n\tsetp.eq.b32 %p, 0, 0;\n\t"
                   "@%c mbarrier.try_wait.parity.shared::cta.b64 %p, [$2], $3;\n\tselp.u32 $0, 1, 0, %p;\n\t}")
            word = inline_ptx(ptx, "=r,r,r,r,~{memory}", [cond, u32_of(self.mbar), self.phase], i32).result
            done = _flag(word)
        finish(self, rewriter, done)
