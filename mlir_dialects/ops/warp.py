"""Warps and warp groups: warp and named barriers, shuffles, votes, matches and reductions, the active mask,
register reallocation, and special registers.

Lane masks are i32 values with bit ``i`` for lane ``i``; the ``*.sync`` instructions must be
executed by every lane their mask names.

Which builder gives which inline PTX statement: the table of ``mlir_dialects.ops``.
"""

from typing import Any, Optional

from .._backend import ext, ir, llvm, nvvm
from ..dialect import CuteOp, Flag, bool_attr, i32_attr, str_attr
from ..errors import OperandTypeError
from ..types import constant_int_of
from .common import finish, inline_ptx

__all__ = [
    "BarWarpSyncOp",
    "BarrierSyncOp",
    "BarrierArriveOp",
    "ShflSyncOp",
    "VoteSyncOp",
    "ActiveMaskOp",
    "SetMaxNregOp",
    "ReadSregOp",
    "WARP_SIZE",
    "NAMED_BARRIERS",
    "SHFL_KINDS",
    "VOTE_KINDS",
    "SETMAXNREG_ACTIONS",
    "SREGS",
    "MatchSyncOp",
    "ReduxSyncOp",
    "ReadSregVolatileOp",
    "MATCH_KINDS",
    "REDUX_TYPES",
    "VOLATILE_SREGS",
]

WARP_SIZE = 32
NAMED_BARRIERS = 16  # bar.sync / bar.arrive ids 0..15
MAX_BLOCK_THREADS = 1024
SHFL_KINDS = ("idx", "up", "down", "bfly")
SHFL_C_BITS = 0x1F1F  # c: segment mask in bits 8..12, clamp lane in bits 0..4
VOTE_KINDS = ("any", "all", "uni", "ballot")
SETMAXNREG_ACTIONS = {"inc": "increase", "dec": "decrease"}
SETMAXNREG_MIN, SETMAXNREG_MAX = 24, 256
SREGS = tuple(f"{r}.{d}" for r in ("tid", "ntid", "ctaid", "nctaid", "clusterid", "nclusterid", "cluster_ctaid",
                                   "cluster_nctaid") for d in "xyz") + (
    "laneid", "warpid", "nwarpid", "smid", "nsmid", "cluster_ctarank", "cluster_nctarank",
    "lanemask_eq", "lanemask_le", "lanemask_lt", "lanemask_ge", "lanemask_gt")
MATCH_KINDS = ("any", "all")
REDUX_TYPES = {"add": ("u32", "s32"), "min": ("u32", "s32"), "max": ("u32", "s32"), "and": ("b32",), "or": ("b32",),
               "xor": ("b32",)}
# the special registers read_sreg_volatile adds to SREGS, and their widths
VOLATILE_SREGS = {"dynamic_smem_size": 32, "total_smem_size": 32, "clock": 32, "clock64": 64, "globaltimer": 64,
                  "globaltimer_lo": 32, "globaltimer_hi": 32, "gridid": 64, "WARP_SZ": 32}
I1, I32 = ir.IntegerType[1], ir.IntegerType[32]


class _WarpOp(CuteOp):
    """Rules shared by the ops of this module."""

    def check_mask(self):
        self.expect_int("mask", self.mask, 32)
        if constant_int_of(self.mask) == 0:
            self.fail("lane-mask-empty", "the lane mask names no lane (0): a mask needs at least one lane")


# -- barriers -------------------------------------------------------------------------------


class BarWarpSyncOp(_WarpOp, name="bar_warp_sync"):
    """Wait until every lane of ``mask`` has reached this barrier, and order their memory accesses.

    PTX: bar.warp.sync membermask;
    """

    mask: ext.Operand[I32]

    def verify_rules(self):
        self.check_mask()

    @classmethod
    def builder(cls, mask):
        """Build ``cute_nvgpu.bar_warp_sync`` (``mask``: an i32 lane mask)."""
        return cls.build(mask)

    def lower(self, rewriter):
        with rewriter.ip:
            nvvm.bar_warp_sync(self.mask)
        finish(self, rewriter)


class _NamedBarrierOp(_WarpOp):
    def check_barrier(self, count):
        self.expect_int("id", self.barrier_id, 32)
        n = constant_int_of(self.barrier_id)
        if n is not None and not 0 <= n < NAMED_BARRIERS:
            self.fail("barrier-id-range", f"the barrier id must lie in [0, {NAMED_BARRIERS}) (the hardware has "
                                          f"{NAMED_BARRIERS} named barriers per CTA), got {n}")
        if count is None:
            return
        self.expect_int("count", count, 32)
        n = constant_int_of(count)
        if n is not None and (n <= 0 or n % WARP_SIZE or n > MAX_BLOCK_THREADS):
            self.fail("barrier-count", f"the thread count must be a positive multiple of the warp size ({WARP_SIZE}) "
                                       f"of at most {MAX_BLOCK_THREADS}, got {n}")


class BarrierSyncOp(_NamedBarrierOp, name="barrier_sync"):
    """Wait on named barrier ``barrier_id`` (0..15) until ``count`` threads (whole warps; default: all) arrived.

    PTX: bar.sync id{, count};
    """

    barrier_id: ext.Operand[I32]
    count: Optional[ext.Operand[I32]] = None

    def verify_rules(self):
        self.check_barrier(self.count)

    @classmethod
    def builder(cls, barrier_id, count=None):
        """Build ``cute_nvgpu.barrier_sync`` (i32 ``barrier_id``; optional i32 thread ``count``)."""
        return cls.build(barrier_id, count=count)

    def lower(self, rewriter):
        with rewriter.ip:
            nvvm.BarrierOp(barrierId=self.barrier_id, numberOfThreads=self.count)
        finish(self, rewriter)


class BarrierArriveOp(_NamedBarrierOp, name="barrier_arrive"):
    """Arrive on named barrier ``barrier_id`` (0..15) that waits for ``count`` threads, without waiting;
    ``aligned``: every thread of the warp executes the same instruction (else the lanes may diverge).

    PTX: bar.arrive id, count; | barrier.cta.arrive id, count;
    """

    barrier_id: ext.Operand[I32]
    count: ext.Operand[I32]
    aligned: Flag

    def verify_rules(self):
        self.check_barrier(self.count)
        self.check_flags("aligned")

    @classmethod
    def builder(cls, barrier_id, count, *, aligned=True):
        """Build ``cute_nvgpu.barrier_arrive`` (i32 ``barrier_id`` and thread ``count``)."""
        return cls.build(barrier_id, count, bool_attr(aligned))

    def lower(self, rewriter):
        with rewriter.ip:
            if self.bool_attr("aligned"):
                nvvm.BarrierArriveOp(self.count, barrierId=self.barrier_id)
            else:
                inline_ptx("barrier.cta.arrive $0, $1;", "r,r,~{memory}", [self.barrier_id, self.count])
        finish(self, rewriter)


# -- shuffles, votes, the active mask -----------------------------------------------------------


def _is_b32(t):
    return isinstance(t, ir.F32Type) or (isinstance(t, ir.IntegerType) and t.width == 32)


class ShflSyncOp(_WarpOp, name="shfl_sync"):
    """Read the 32-bit ``value`` of another lane: lane ``lane`` (idx), ``lane_id -/+ lane`` (up/down) or
    ``lane_id ^ lane`` (bfly), within the segments and clamp that ``clamp`` (PTX's ``c``) packs; the optional
    i1 ``in_range`` tells whether the source lane was in range.

    PTX: shfl.sync.{idx,up,down,bfly}.b32 d{|p}, a, b, c, membermask;
    """

    kind: ir.StringAttr
    value: ext.Operand[Any]
    lane: ext.Operand[I32]
    clamp: ext.Operand[I32]
    mask: ext.Operand[I32]
    res: ext.Result[Any]
    in_range: Optional[ext.Result[I1]] = None

    def verify_rules(self):
        self.check_choice("shfl-kind", "the shuffle mode", self.str_attr("kind"), SHFL_KINDS)
        if not _is_b32(self.value.type):
            self.fail("shfl-value-type", f"shfl.sync moves 32-bit values (i32 or f32), got {self.value.type}",
                      OperandTypeError)
        if self.res.type != self.value.type:
            self.fail("shfl-result-type", f"the result has the value's type {self.value.type}, got {self.res.type}")
        self.expect_int("lane", self.lane, 32)
        n = constant_int_of(self.lane)
        if n is not None and not 0 <= n < WARP_SIZE:
            self.fail("shfl-lane-range", f"the source lane (or offset) must lie in [0, {WARP_SIZE}), got {n}")
        self.expect_int("clamp", self.clamp, 32)
        c = constant_int_of(self.clamp)
        if c is not None and c & ~SHFL_C_BITS:
            self.fail("shfl-clamp", f"c packs the segment mask (bits 8..12) and the clamp lane (bits 0..4), "
                                    f"got {c:#x}")
        self.check_mask()

    @classmethod
    def builder(cls, kind, value, lane, clamp, mask, *, with_pred=False):
        """Build ``cute_nvgpu.shfl_sync``; its ``res`` has ``value``'s type, ``in_range`` (with ``with_pred``) is an i1."""
        pred = ir.IntegerType.get_signless(1) if with_pred else None
        return cls.build(str_attr(kind), value, lane, clamp, mask, value.type, in_range=pred)

    def lower(self, rewriter):
        kind = getattr(nvvm.ShflKind, self.str_attr("kind"))
        vtype = self.value.type
        with rewriter.ip:
            if self.in_range is None:
                res = nvvm.ShflOp(self.mask, self.value, self.lane, self.clamp, kind, results=[vtype]).result
                finish(self, rewriter, res)
                return
            i1 = ir.IntegerType.get_signless(1)
            pair = ir.Type.parse(f"!llvm.struct<({vtype}, i1)>")
            both = nvvm.ShflOp(self.mask, self.value, self.lane, self.clamp, kind, return_value_and_is_valid=True,
                               results=[pair]).result
            res = llvm.ExtractValueOp(vtype, both, [0]).result
            valid = llvm.ExtractValueOp(i1, both, [1]).result
        finish(self, rewriter, res, valid)


class VoteSyncOp(_WarpOp, name="vote_sync"):
    """Vote on ``pred`` across the lanes of ``mask``: any / all / uni give an i1, ballot an i32 of the lanes' bits.

    PTX: vote.sync.{any,all,uni}.pred d, p, membermask | vote.sync.ballot.b32 d, p, membermask;
    """

    kind: ir.StringAttr
    pred: ext.Operand[I1]
    mask: ext.Operand[I32]
    res: ext.Result[Any]

    def verify_rules(self):
        kind = self.str_attr("kind")
        self.check_choice("vote-kind", "the vote mode", kind, VOTE_KINDS)
        self.expect_int("pred", self.pred, 1)
        self.check_mask()
        want = 32 if kind == "ballot" else 1
        t = self.res.type
        if not (isinstance(t, ir.IntegerType) and t.width == want):
            self.fail("vote-result-type", f"vote.sync.{kind} gives an i{want}, got {t}")

    @classmethod
    def builder(cls, kind, pred, mask):
        """Build ``cute_nvgpu.vote_sync``; its ``res`` is an i32 for ``ballot``, an i1 otherwise."""
        rtype = ir.IntegerType.get_signless(32 if kind == "ballot" else 1)
        return cls.build(str_attr(kind), pred, mask, rtype)

    def lower(self, rewriter):
        kind = getattr(nvvm.VoteSyncKind, self.str_attr("kind"))
        with rewriter.ip:
            res = nvvm.VoteSyncOp(self.mask, self.pred, kind, results=[self.res.type]).result
        finish(self, rewriter, res)


class ActiveMaskOp(_WarpOp, name="activemask"):
    """The i32 mask of the lanes of the warp executing this instruction now.

    PTX: activemask.b32 d;
    """

    mask: ext.Result[I32] = ext.infer_result()

    @classmethod
    def builder(cls):
        """Build ``cute_nvgpu.activemask``; the op's ``mask`` is an i32."""
        return cls.build()

    def lower(self, rewriter):
        with rewriter.ip:
            mask = inline_ptx("activemask.b32 $0;", "=r", [], ir.IntegerType.get_signless(32)).result
        finish(self, rewriter, mask)


class MatchSyncOp(_WarpOp, name="match_sync"):
    """The i32 lane mask of the lanes of ``mask`` whose 32- or 64-bit ``value`` equals this lane's (``any``), or
    ``mask`` itself when every lane of it holds the same ``value`` and 0 otherwise (``all``).

    PTX: match.any.sync.b32|b64 d, a, membermask; | match.all.sync.b32|b64 d|p, a, membermask;
    """

    kind: ir.StringAttr
    value: ext.Operand[Any]
    mask: ext.Operand[I32]
    res: ext.Result[I32] = ext.infer_result()

    def verify_rules(self):
        self.check_choice("match-kind", "the match mode", self.str_attr("kind"), MATCH_KINDS)
        self.expect_int("value", self.value, 32, 64)
        self.check_mask()

    @classmethod
    def builder(cls, kind, value, mask):
        """Build ``cute_nvgpu.match_sync``; the op's ``res`` is the i32 lane mask."""
        return cls.build(str_attr(kind), value, mask)

    def lower(self, rewriter):
        bits = self.value.type.width
        if self.str_attr("kind") == "any":
            ptx = f"match.any.sync.b{bits} $0, $1, $2;"
        else:
            ptx = f"{{\n\t.reg .pred %p;\n\tmatch.all.sync.b{bits} $0|%p, $1, $2;\n\t}}"
        with rewriter.ip:
            res = inline_ptx(ptx, f"=r,{'l' if bits == 64 else 'r'},r", [self.value, self.mask],
                             ir.IntegerType.get_signless(32)).result
        finish(self, rewriter, res)


class ReduxSyncOp(_WarpOp, name="redux_sync"):
    """The i32 ``value`` reduced over the lanes of ``mask`` (the same result in each): ``add`` (``.u32``/``.s32``),
    ``min``/``max`` (``.u32`` unsigned, ``.s32`` signed), ``and``/``or``/``xor`` (``.b32``).

    PTX: redux.sync.{add,min,max}.{u32,s32} d, a, membermask; | redux.sync.{and,or,xor}.b32 d, a, membermask;
    """

    op: ir.StringAttr
    type: ir.StringAttr
    value: ext.Operand[I32]
    mask: ext.Operand[I32]
    res: ext.Result[I32] = ext.infer_result()

    def verify_rules(self):
        op = self.check_choice("redux-op", "the reduction", self.str_attr("op"), tuple(REDUX_TYPES))
        self.check_choice("redux-type", f"the type of redux.sync.{op}", self.str_attr("type"), REDUX_TYPES[op])
        self.check_mask()

    @classmethod
    def builder(cls, op, type, value, mask):
        """Build ``cute_nvgpu.redux_sync``; the op's ``res`` is an i32."""
        return cls.build(str_attr(op), str_attr(type), value, mask)

    def lower(self, rewriter):
        with rewriter.ip:
            res = inline_ptx(f"redux.sync.{self.str_attr('op')}.{self.str_attr('type')} $0, $1, $2;", "=r,r,r",
                             [self.value, self.mask], ir.IntegerType.get_signless(32)).result
        finish(self, rewriter, res)


# -- registers --------------------------------------------------------------------------------


class SetMaxNregOp(_WarpOp, name="setmaxnreg"):
    """Raise (``inc``) or lower (``dec``) the per-thread register budget of the warp group to ``count``
    (a multiple of 8 in 24..256); every warp of the warp group executes the same instruction (sm_90a).

    PTX: setmaxnreg.{inc,dec}.sync.aligned.u32 count;
    """

    action: ir.StringAttr
    count: ir.IntegerAttr

    def verify_rules(self):
        action = self.str_attr("action")
        if action not in SETMAXNREG_ACTIONS:
            self.fail("setmaxnreg-action", f"action must be 'inc' or 'dec', got {action!r}")
        n = self.int_attr("count")
        if not SETMAXNREG_MIN <= n <= SETMAXNREG_MAX or n % 8:
            self.fail("setmaxnreg-count", f"the register count must be a multiple of 8 in "
                                          f"{SETMAXNREG_MIN}..{SETMAXNREG_MAX}, got {n}")

    @classmethod
    def builder(cls, action, count):
        """Build ``cute_nvgpu.setmaxnreg`` (``action``: ``"inc"`` or ``"dec"``)."""
        return cls.build(str_attr(action), i32_attr(count))

    def lower(self, rewriter):
        action = getattr(nvvm.SetMaxRegisterAction, SETMAXNREG_ACTIONS[self.str_attr("action")])
        with rewriter.ip:
            nvvm.SetMaxRegisterOp(self.int_attr("count"), action)
        finish(self, rewriter)


class ReadSregOp(_WarpOp, name="read_sreg"):
    """Read a 32-bit special register (``tid.x``, ``laneid``, ``cluster_ctarank``...; see ``SREGS``).

    PTX: mov.u32 d, %sreg;
    """

    sreg: ir.StringAttr
    value: ext.Result[I32] = ext.infer_result()

    def verify_rules(self):
        name = self.str_attr("sreg")
        if name not in SREGS:
            self.fail("sreg-name", f"no 32-bit special register %{name} (known: {', '.join(SREGS)})")

    @classmethod
    def builder(cls, name):
        """Build ``cute_nvgpu.read_sreg`` of special register ``name`` (without ``%``); the op's ``value`` is an i32."""
        return cls.build(str_attr(name))

    def lower(self, rewriter):
        read = getattr(nvvm, "read_ptx_sreg_" + self.str_attr("sreg").replace(".", "_"))
        with rewriter.ip:
            value = read(results=[ir.IntegerType.get_signless(32)])
        finish(self, rewriter, value)


class ReadSregVolatileOp(_WarpOp, name="read_sreg_volatile"):
    """Read a special register (``dynamic_smem_size``, ``clock64``, ``globaltimer``...; see
    ``VOLATILE_SREGS``, and every one of ``SREGS``) or the ``WARP_SZ`` constant in a volatile statement: each read
    stays where it is and is never merged with another (clocks and timers change between reads).

    PTX: mov.u32 d, %sreg; | mov.u64 d, %sreg; | mov.u32 d, WARP_SZ;
    """

    sreg: ir.StringAttr
    value: ext.Result[Any]

    def verify_rules(self):
        name = self.str_attr("sreg")
        bits = _sreg_bits(name)
        if bits is None:
            self.fail("sreg-name", f"no special register %{name} (known: {', '.join(VOLATILE_SREGS)} and "
                                   f"those of read_sreg)")
        if self.value.type != ir.IntegerType.get_signless(bits):
            self.fail("sreg-result-type", f"%{name} is an i{bits}, got {self.value.type}")

    @classmethod
    def builder(cls, name):
        """Build ``cute_nvgpu.read_sreg_volatile`` of ``name`` (without ``%``); the op's ``value`` is an i32 or an
        i64 (``VOLATILE_SREGS``)."""
        return cls.build(str_attr(name), ir.IntegerType.get_signless(_sreg_bits(name) or 32))

    def lower(self, rewriter):
        name = self.str_attr("sreg")
        bits = _sreg_bits(name)
        source = name if name == "WARP_SZ" else f"%{name}"
        with rewriter.ip:
            value = inline_ptx(f"mov.u{bits} $0, {source};", "=l" if bits == 64 else "=r", [],
                               ir.IntegerType.get_signless(bits)).result
        finish(self, rewriter, value)


def _sreg_bits(name):
    return VOLATILE_SREGS.get(name, 32 if name in SREGS else None)
