"""Memory accesses one thread makes: atomics and reductions, scalar loads and stores with memory-ordering and cache
qualifiers, vector loads and stores of 32-bit words in global memory, and L2 cache policies.

The scalar ops address global memory (``!llvm.ptr<1>``: ``.global``), this CTA's shared memory
(``!llvm.ptr<3>``: ``.shared::cta``), or, with a ``peer`` CTA rank, the shared memory of that CTA of the cluster
at the same offset (``.shared::cluster``, through ``mapa``). ``sem`` and ``scope`` are PTX's memory-ordering
qualifiers (``""`` for none: an atomic is then ``.relaxed.gpu``, a load or store weak). Values are registers:
16-bit integers and the 8-bit ones widened to 16 bits are i16, 16-bit floats f16/bf16, and the packed
``f16x2``/``bf16x2`` pairs an i32.

Which builder gives which inline PTX statement: the table of ``mlir_dialects.ops``.
"""

from typing import Any, Optional, Sequence

from .._backend import ext, ir, llvm
from ..dialect import CuteOp, i32_attr, str_attr
from ..errors import OperandTypeError
from ..types import AddressSpace, constant_int_of
from .common import finish, inline_ptx, reg_letter, u32_of

__all__ = [
    "AtomOp",
    "AtomFloatMinMaxOp",
    "RedOp",
    "LdScalarOp",
    "StScalarOp",
    "LdGlobalOp",
    "StGlobalOp",
    "CreatePolicyOp",
    "ATOM_TYPES",
    "RED_TYPES",
    "LDST_TYPES",
    "MEMORY_SCOPES",
    "L1_EVICTIONS",
    "L2_PREFETCHES",
    "GLOBAL_ACCESS_BITS",
    "LD_GLOBAL_CACHE",
    "ST_GLOBAL_CACHE",
    "L2_POLICIES",
]

MAX_CLUSTER_CTAS = 16
MEMORY_SCOPES = ("cta", "cluster", "gpu", "sys")
_INT32, _INT64 = ("u32", "s32"), ("u64", "s64")
# op -> the PTX types it takes
ATOM_TYPES = {"and": ("b32", "b64"), "or": ("b32", "b64"), "xor": ("b32", "b64"), "exch": ("b32", "b64"),
              "cas": ("b16", "b32", "b64"), "add": ("u32", "s32", "u64", "f16", "bf16", "f32", "f64"),
              "min": _INT32 + _INT64, "max": _INT32 + _INT64}
RED_TYPES = {"and": ("b32", "b64"), "or": ("b32", "b64"), "xor": ("b32", "b64"), "min": _INT32 + _INT64,
             "max": _INT32 + _INT64, "add": ("u32", "s32", "u64", "f16", "bf16", "f32", "f64", "f16x2", "bf16x2")}
LDST_TYPES = ("b16", "u8", "s8", "u16", "s16", "u32", "s32", "u64", "s64", "f32", "f64")
# PTX type -> the MLIR types of its register
_REGISTERS = {"b16": ("i16", "f16", "bf16"), "b32": ("i32", "f32"), "b64": ("i64", "f64"), "u8": ("i16",),
              "s8": ("i16",), "u16": ("i16",), "s16": ("i16",), "u32": ("i32",), "s32": ("i32",), "u64": ("i64",),
              "s64": ("i64",), "f16": ("f16",), "bf16": ("bf16",), "f32": ("f32",), "f64": ("f64",),
              "f16x2": ("i32",), "bf16x2": ("i32",)}
LD_COPS, ST_COPS = ("ca", "cg", "cs", "lu", "cv"), ("wb", "cg", "cs", "wt")
L1_EVICTIONS = ("L1::evict_normal", "L1::evict_first", "L1::evict_last", "L1::no_allocate", "L1::evict_unchanged")
L2_PREFETCHES = ("L2::64B", "L2::128B", "L2::256B")
GLOBAL_ACCESS_BITS = (32, 64, 128, 256)
LD_GLOBAL_CACHE = ("ca", "cg", "cs", "lu", "cv", "nc")  # "" (no modifier) is also accepted
ST_GLOBAL_CACHE = ("wb", "cg", "cs", "wt")
L2_POLICIES = ("evict_first", "evict_last", "evict_normal", "evict_unchanged")
MINMAX_SIGNS = ("any", "negative", "non_negative")
I32, I64 = ir.IntegerType[32], ir.IntegerType[64]


class _MemoryOp(CuteOp):
    """Rules and lowering shared by the scalar accesses: the address (and peer), the ordering qualifiers."""

    def check_address(self):
        space = self.expect_space("addr", self.addr, AddressSpace.GLOBAL, AddressSpace.SHARED)
        if self.peer is None:
            return space
        if space != AddressSpace.SHARED:
            self.fail("peer-address-space", "a peer CTA's shared memory is named by this CTA's shared address "
                                            "(!llvm.ptr<3>) and the peer's rank; a global address takes no rank")
        n = constant_int_of(self.peer)
        if n is not None and not 0 <= n < MAX_CLUSTER_CTAS:
            self.fail("peer-rank", f"the peer CTA's rank must lie in [0, {MAX_CLUSTER_CTAS}), got {n}")
        return space

    def check_order(self, sems, *, paired):
        """``sem`` among ``sems`` (or none), ``scope`` a PTX scope (or none); ``paired``: both or neither."""
        sem = self.check_choice("memory-sem", "the memory-ordering semantics", self.str_attr("sem"), ("",) + sems)
        scope = self.check_choice("memory-scope", "the scope", self.str_attr("scope"), ("",) + MEMORY_SCOPES)
        if paired and bool(sem) != bool(scope):
            self.fail("memory-sem-scope", f"sem and scope go together (.{sem or '<sem>'}.{scope or '<scope>'}): "
                                          f"give both or neither, got sem={sem!r}, scope={scope!r}")

    def check_register(self, rule, role, value, ptx_type):
        if str(value.type) not in _REGISTERS[ptx_type]:
            self.fail(rule, f"{role} of a .{ptx_type} access is {' or '.join(_REGISTERS[ptx_type])}, got "
                            f"{value.type}", OperandTypeError)

    def qualifiers(self):
        sem, scope = self.str_attr("sem"), self.str_attr("scope")
        return (f".{sem}" if sem else "") + (f".{scope}" if scope else "")

    def emit(self, body, values, result_type=None):
        """``body`` (``{space}``, ``{addr}``, ``{v0}``... placeholders) on the op's address as ``llvm.inline_asm``:
        the result first, then the address operands, then ``values``; a peer's address is ``mapa``'s."""
        if self.addr.type.address_space == AddressSpace.GLOBAL:
            space, ops, cons, prologue, addr = "global", [self.addr], ["l"], "", "[{a0}]"
        elif self.peer is None:
            space, ops, cons, prologue, addr = "shared::cta", [u32_of(self.addr)], ["r"], "", "[{a0}]"
        else:
            space, ops, cons = "shared::cluster", [u32_of(self.addr), self.peer], ["r", "r"]
            prologue, addr = ".reg .b32 %ra;\n\tmapa.shared::cluster.u32 %ra, {a0}, {a1};", "[%ra]"
        first = 0 if result_type is None else 1
        names = {f"a{i}": f"${first + i}" for i in range(len(ops))}
        names.update({f"v{i}": f"${first + len(ops) + i}" for i in range(len(values))})
        text = body.format(space=space, addr=addr.format(**names), **names)
        if prologue:
            text = f"{{\n\t{prologue.format(**names)}\n\t{text}\n\t}}"
        out = [] if result_type is None else [f"={reg_letter(result_type)}"]
        constraints = out + cons + [reg_letter(v.type) for v in values] + ["~{memory}"]
        return inline_ptx(text, ",".join(constraints), ops + list(values), result_type)


class AtomOp(_MemoryOp, name="atom"):
    """Atomically combine ``values`` into the element at ``addr`` (``cas``: ``[compare, new]``) and return its old
    value; ``f16``/``bf16`` additions are ``.noftz``.

    PTX: atom{.sem}{.scope}.<space>.<op>.<type> d, [addr], v; | atom{.sem}{.scope}.<space>.cas.<type> d, [addr], c, v;
    """

    op: ir.StringAttr
    type: ir.StringAttr
    sem: ir.StringAttr
    scope: ir.StringAttr
    addr: ext.Operand[llvm.PointerType]
    values: Sequence[ext.Operand[Any]]
    res: ext.Result[Any]
    peer: Optional[ext.Operand[I32]] = None

    def verify_rules(self):
        op = self.check_choice("atom-op", "the atomic operation", self.str_attr("op"), tuple(ATOM_TYPES))
        ty = self.check_choice("atom-type", f"the type of atom.{op}", self.str_attr("type"), ATOM_TYPES[op])
        self.check_order(("relaxed", "acquire", "release", "acq_rel"), paired=False)
        self.check_address()
        want = 2 if op == "cas" else 1
        if len(self.values) != want:
            self.fail("atom-operands", f"atom.{op} takes {want} value(s), got {len(self.values)}")
        for v in self.values:
            self.check_register("atom-value-type", "a value", v, ty)
        if self.res.type != self.values[0].type:
            self.fail("atom-result-type", f"the old value has the values' type {self.values[0].type}, got "
                                          f"{self.res.type}")

    @classmethod
    def builder(cls, op, type, addr, values, *, sem=None, scope=None, peer=None):
        """Build ``cute_nvgpu.atom``; its ``res`` (the old value) has the values' type."""
        values = list(values)
        return cls.build(str_attr(op), str_attr(type), str_attr(sem or ""), str_attr(scope or ""), addr, values,
                         values[0].type if values else ir.IntegerType.get_signless(32), peer=peer)

    def lower(self, rewriter):
        op, ty = self.str_attr("op"), self.str_attr("type")
        ty = f"noftz.{ty}" if op == "add" and ty in ("f16", "bf16") else ty
        tail = ", {v0}, {v1};" if op == "cas" else ", {v0};"
        with rewriter.ip:
            res = self.emit(f"atom{self.qualifiers()}.{{space}}.{op}.{ty} $0, {{addr}}{tail}", list(self.values),
                            self.res.type).result
        finish(self, rewriter, res)


class AtomFloatMinMaxOp(_MemoryOp, name="atom_float_minmax"):
    """Atomically make the f32 at ``addr`` the larger (``max``) or smaller (``min``) of itself and ``value`` by
    integer atomics on the bits, and return its old value: a value whose sign bit is clear (``non_negative``) is a
    signed integer max/min of the bits, one whose sign bit is set (``negative``) an unsigned min/max; ``any`` tests
    the sign at run time. ``-0.0 < +0.0``; a NaN with the sign bit clear is larger than everything.

    PTX: setp.lt.s32 %neg, v, 0; @%neg atom.<space>.{min.u32|max.u32} d, [addr], v; @!%neg atom.<space>.{max.s32|min.s32} d, [addr], v;
    """

    kind: ir.StringAttr
    sign: ir.StringAttr
    sem: ir.StringAttr
    scope: ir.StringAttr
    addr: ext.Operand[llvm.PointerType]
    value: ext.Operand[Any]
    res: ext.Result[Any]
    peer: Optional[ext.Operand[I32]] = None

    def verify_rules(self):
        self.check_choice("minmax-kind", "the kind", self.str_attr("kind"), ("max", "min"))
        self.check_choice("minmax-sign", "the sign of the value", self.str_attr("sign"), MINMAX_SIGNS)
        self.check_order(("relaxed", "acquire", "release", "acq_rel"), paired=False)
        self.check_address()
        for role, v in (("value", self.value.type), ("result", self.res.type)):
            if not isinstance(v, ir.F32Type):
                self.fail(f"minmax-{role}-type", f"the {role} is an f32, got {v}", OperandTypeError)

    @classmethod
    def builder(cls, kind, addr, value, *, sign="any", sem=None, scope=None, peer=None):
        """Build ``cute_nvgpu.atom_float_minmax`` of the f32 ``value``; its ``res`` is the old f32."""
        return cls.build(str_attr(kind), str_attr(sign), str_attr(sem or ""), str_attr(scope or ""), addr, value,
                         ir.F32Type.get(), peer=peer)

    def lower(self, rewriter):
        neg, pos = ("min.u32", "max.s32") if self.str_attr("kind") == "max" else ("max.u32", "min.s32")
        atom, sign = "atom" + self.qualifiers() + ".{space}.", self.str_attr("sign")
        if sign == "any":  # the sign at run time: a negative value's bits (as an i32) are below 0
            body = ("{{\n\t.reg .pred %neg;\n\tsetp.lt.s32 %neg, {v0}, 0;\n\t@%neg " + atom + neg
                    + " $0, {addr}, {v0};\n\t@!%neg " + atom + pos + " $0, {addr}, {v0};\n\t}}")
        else:
            body = atom + (neg if sign == "negative" else pos) + " $0, {addr}, {v0};"
        i32 = ir.IntegerType.get_signless(32)
        with rewriter.ip:
            bits = llvm.BitcastOp(i32, self.value).result
            old = self.emit(body, [bits], i32).result
            res = llvm.BitcastOp(ir.F32Type.get(), old).result
        finish(self, rewriter, res)


class RedOp(_MemoryOp, name="red"):
    """Combine ``value`` into the element at ``addr`` without returning the old value; ``f16``/``bf16`` additions
    (and the packed ``f16x2``/``bf16x2`` ones, whose ``value`` is the i32 of the two halves) are ``.noftz``.

    PTX: red{.sem}{.scope}.<space>.<op>.<type> [addr], v;
    """

    op: ir.StringAttr
    type: ir.StringAttr
    sem: ir.StringAttr
    scope: ir.StringAttr
    addr: ext.Operand[llvm.PointerType]
    value: ext.Operand[Any]
    peer: Optional[ext.Operand[I32]] = None

    def verify_rules(self):
        op = self.check_choice("red-op", "the reduction", self.str_attr("op"), tuple(RED_TYPES))
        ty = self.check_choice("red-type", f"the type of red.{op}", self.str_attr("type"), RED_TYPES[op])
        self.check_order(("relaxed", "release"), paired=False)
        self.check_address()
        self.check_register("red-value-type", "the value", self.value, ty)

    @classmethod
    def builder(cls, op, type, addr, value, *, sem=None, scope=None, peer=None):
        """Build ``cute_nvgpu.red``."""
        return cls.build(str_attr(op), str_attr(type), str_attr(sem or ""), str_attr(scope or ""), addr, value,
                         peer=peer)

    def lower(self, rewriter):
        op, ty = self.str_attr("op"), self.str_attr("type")
        ty = f"noftz.{ty}" if op == "add" and ty.startswith(("f16", "bf16")) else ty
        with rewriter.ip:
            self.emit(f"red{self.qualifiers()}.{{space}}.{op}.{ty} {{addr}}, {{v0}};", [self.value])
        finish(self, rewriter)


class _ScalarAccessOp(_MemoryOp):
    def check_access(self, sems, cops, rule):
        ty = self.check_choice(f"{rule}-type", "the access type", self.str_attr("type"), LDST_TYPES)
        self.check_order(sems, paired=True)
        space = self.check_address()
        cop = self.check_choice(f"{rule}-cop", "the cache operator", self.str_attr("cop"), ("",) + cops)
        evict = self.check_choice(f"{rule}-eviction", "the L1 eviction priority", self.str_attr("eviction"),
                                  ("",) + L1_EVICTIONS)
        hints = [evict] + ([self.str_attr("prefetch")] if "prefetch" in self.attributes else [])
        if cop and self.str_attr("sem"):
            self.fail(f"{rule}-cop-weak", f"a cache operator (.{cop}) goes with weak accesses only, not with "
                                          f".{self.str_attr('sem')}")
        if cop and evict:
            self.fail(f"{rule}-cop-eviction", "give a cache operator or an L1 eviction priority, not both")
        if any(hints) and space != AddressSpace.GLOBAL:
            self.fail(f"{rule}-hint-space", "L1 eviction priorities and L2 prefetch sizes apply to global memory only")
        return ty

    def cache_qualifiers(self):
        parts = [self.str_attr(n) for n in ("cop", "eviction", "prefetch") if n in self.attributes]
        return "".join(f".{p}" for p in parts if p)


class LdScalarOp(_ScalarAccessOp, name="ld_scalar"):
    """Load the element of PTX type ``type`` at ``addr`` (a weak load, or ``sem`` ``relaxed``/``acquire`` with a
    ``scope``), with an optional cache operator, L1 eviction priority and L2 prefetch size.

    PTX: ld{.sem.scope}.<space>{.cop}{.L1::evict_*}{.L2::64B|128B|256B}.<type> d, [addr];
    """

    type: ir.StringAttr
    sem: ir.StringAttr
    scope: ir.StringAttr
    cop: ir.StringAttr
    eviction: ir.StringAttr
    prefetch: ir.StringAttr
    addr: ext.Operand[llvm.PointerType]
    res: ext.Result[Any]
    peer: Optional[ext.Operand[I32]] = None

    def verify_rules(self):
        ty = self.check_access(("relaxed", "acquire"), LD_COPS, "ld")
        self.check_choice("ld-prefetch", "the L2 prefetch size", self.str_attr("prefetch"), ("",) + L2_PREFETCHES)
        self.check_register("ld-result-type", "the result", self.res, ty)

    @classmethod
    def builder(cls, type, addr, result_type, *, sem=None, scope=None, cop=None, eviction=None, prefetch=None,
                peer=None):
        """Build ``cute_nvgpu.ld_scalar``; its ``res`` is of ``result_type`` (the register of ``type``)."""
        return cls.build(str_attr(type), str_attr(sem or ""), str_attr(scope or ""), str_attr(cop or ""),
                         str_attr(eviction or ""), str_attr(prefetch or ""), addr, result_type, peer=peer)

    def lower(self, rewriter):
        with rewriter.ip:
            res = self.emit(f"ld{self.qualifiers()}.{{space}}{self.cache_qualifiers()}.{self.str_attr('type')} $0, "
                            f"{{addr}};", [], self.res.type).result
        finish(self, rewriter, res)


class StScalarOp(_ScalarAccessOp, name="st_scalar"):
    """Store ``value`` as an element of PTX type ``type`` at ``addr`` (a weak store, or ``sem``
    ``relaxed``/``release`` with a ``scope``), with an optional cache operator or L1 eviction priority.

    PTX: st{.sem.scope}.<space>{.cop}{.L1::evict_*}.<type> [addr], v;
    """

    type: ir.StringAttr
    sem: ir.StringAttr
    scope: ir.StringAttr
    cop: ir.StringAttr
    eviction: ir.StringAttr
    addr: ext.Operand[llvm.PointerType]
    value: ext.Operand[Any]
    peer: Optional[ext.Operand[I32]] = None

    def verify_rules(self):
        ty = self.check_access(("relaxed", "release"), ST_COPS, "st")
        self.check_register("st-value-type", "the value", self.value, ty)

    @classmethod
    def builder(cls, type, addr, value, *, sem=None, scope=None, cop=None, eviction=None, peer=None):
        """Build ``cute_nvgpu.st_scalar``."""
        return cls.build(str_attr(type), str_attr(sem or ""), str_attr(scope or ""), str_attr(cop or ""),
                         str_attr(eviction or ""), addr, value, peer=peer)

    def lower(self, rewriter):
        with rewriter.ip:
            self.emit(f"st{self.qualifiers()}.{{space}}{self.cache_qualifiers()}.{self.str_attr('type')} {{addr}}, "
                      f"{{v0}};", [self.value])
        finish(self, rewriter)


class _GlobalVectorOp(CuteOp):
    def check_cache(self, rule, allowed):
        cache = self.str_attr("cache")
        if cache and cache not in allowed:
            self.fail(rule, f"cache modifier must be one of {', '.join(allowed)} (or none), got {cache!r}")
        return cache


class LdGlobalOp(_GlobalVectorOp, name="ld_global"):
    """Load ``bits`` (32, 64, 128 or 256) bits of global memory at ``addr`` as ``bits // 32`` i32 words; 256 bits
    are two 128-bit loads, at ``addr`` and 16 bytes after it. ``cache`` is empty or a cache operator (``nc``: the
    read-only path).

    PTX: ld.global{.ca,.cg,.cs,.lu,.cv,.nc}{.v2,.v4}.b32 d, [addr];
    """

    addr: ext.Operand[llvm.PointerType]
    bits: ir.IntegerAttr
    cache: ir.StringAttr
    words: Sequence[ext.Result[I32]]

    def verify_rules(self):
        self.expect_space("addr", self.addr, AddressSpace.GLOBAL)
        bits = self.int_attr("bits")
        if bits not in GLOBAL_ACCESS_BITS:
            self.fail("ld-global-bits", f"the access width must be one of {GLOBAL_ACCESS_BITS} bits, got {bits}")
        n = len(self.operation.results)
        if n != bits // 32:
            self.fail("ld-global-words", f"a {bits}-bit load gives {bits // 32} words of 32 bits, got {n} results")
        self.check_cache("ld-global-cache", LD_GLOBAL_CACHE)

    @classmethod
    def builder(cls, addr, bits, cache=None):
        """Build ``cute_nvgpu.ld_global``; the op's ``words`` are ``bits // 32`` i32 results."""
        i32 = ir.IntegerType.get_signless(32)
        n = bits // 32 if type(bits) is int and bits > 0 else 1
        return cls.build(addr, i32_attr(bits), str_attr(cache or ""), [i32] * n)

    def lower(self, rewriter):
        cop, n = _cop(self), len(self.operation.results)
        if n == 8:
            lines = [f"ld.global{cop}.v4.b32 {{$0, $1, $2, $3}}, [$8];",
                     f"ld.global{cop}.v4.b32 {{$4, $5, $6, $7}}, [$8+16];"]
        else:
            outs = ", ".join(f"${i}" for i in range(n))
            lines = [f"ld.global{cop}{_vec(n)}.b32 {outs if n == 1 else '{' + outs + '}'}, [${n}];"]
        i32 = ir.IntegerType.get_signless(32)
        rtype = i32 if n == 1 else ir.Type.parse(f"!llvm.struct<({', '.join(['i32'] * n)})>")
        with rewriter.ip:
            asm = inline_ptx("\n\t".join(lines), ",".join(["=r"] * n + ["l", "~{memory}"]), [self.addr], rtype).result
            words = [asm] if n == 1 else [llvm.ExtractValueOp(i32, asm, [i]).result for i in range(n)]
        finish(self, rewriter, *words)


class StGlobalOp(_GlobalVectorOp, name="st_global"):
    """Store 1, 2, 4 or 8 i32 ``words`` to global memory at ``addr``; 8 words are two 128-bit stores, at ``addr``
    and 16 bytes after it. ``cache`` is empty or a cache operator.

    PTX: st.global{.wb,.cg,.cs,.wt}{.v2,.v4}.b32 [addr], a;
    """

    addr: ext.Operand[llvm.PointerType]
    words: Sequence[ext.Operand[I32]]
    cache: ir.StringAttr

    def verify_rules(self):
        self.expect_space("addr", self.addr, AddressSpace.GLOBAL)
        n = len(self.words)
        if n not in (1, 2, 4, 8):
            self.fail("st-global-words", f"st.global stores 1, 2, 4 or 8 words of 32 bits, got {n} words")
        for w in self.words:
            self.expect_int("word", w, 32)
        self.check_cache("st-global-cache", ST_GLOBAL_CACHE)

    @classmethod
    def builder(cls, addr, words, cache=None):
        """Build ``cute_nvgpu.st_global`` of the i32 ``words``."""
        return cls.build(addr, list(words), str_attr(cache or ""))

    def lower(self, rewriter):
        cop, words = _cop(self), list(self.words)
        n = len(words)
        if n == 8:
            lines = [f"st.global{cop}.v4.b32 [$0], {{$1, $2, $3, $4}};",
                     f"st.global{cop}.v4.b32 [$0+16], {{$5, $6, $7, $8}};"]
        else:
            ins = ", ".join(f"${i + 1}" for i in range(n))
            lines = [f"st.global{cop}{_vec(n)}.b32 [$0], {ins if n == 1 else '{' + ins + '}'};"]
        with rewriter.ip:
            inline_ptx("\n\t".join(lines), ",".join(["l"] + ["r"] * n + ["~{memory}"]), [self.addr] + words)
        finish(self, rewriter)


def _cop(op):
    cache = op.str_attr("cache")
    return f".{cache}" if cache else ""


def _vec(n):
    return "" if n == 1 else f".v{n}"


class CreatePolicyOp(CuteOp, name="createpolicy"):
    """A 64-bit L2 cache policy giving the lines of a ``fraction`` (in (0, 1]) of the accesses that use it the
    eviction priority ``priority``: the ``cache_hint`` operand of cp.async, TMA and other copies.

    PTX: createpolicy.fractional.L2::<priority>.b64 d, fraction;
    """

    priority: ir.StringAttr
    fraction: ir.FloatAttr
    policy: ext.Result[I64] = ext.infer_result()

    def verify_rules(self):
        self.check_choice("createpolicy-priority", "the L2 eviction priority", self.str_attr("priority"), L2_POLICIES)
        fraction = ir.FloatAttr(self.attributes["fraction"]).value
        if not 0.0 < fraction <= 1.0:
            self.fail("createpolicy-fraction", f"the fraction of accesses lies in (0, 1], got {fraction}")

    @classmethod
    def builder(cls, priority, fraction=1.0):
        """Build ``cute_nvgpu.createpolicy``; the op's ``policy`` is the i64 cache policy."""
        return cls.build(str_attr(priority), ir.FloatAttr.get(ir.F64Type.get(), float(fraction)))

    def lower(self, rewriter):
        fraction = ir.FloatAttr(self.attributes["fraction"]).value
        with rewriter.ip:
            policy = inline_ptx(f"createpolicy.fractional.L2::{self.str_attr('priority')}.b64 $0, {fraction!r};", "=l",
                                [], ir.IntegerType.get_signless(64)).result
        finish(self, rewriter, policy)
