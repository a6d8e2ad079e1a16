"""TMA descriptors (tensor maps) changed on the device: replace fields, copy, and the proxy fences."""

from .._backend import ext, ir, llvm, nvvm
from ..dialect import CuteOp, i32_attr, str_attr
from ..types import BYTES_PER_TENSORMAP, AddressSpace
from .common import const_int, finish, inline_ptx

__all__ = [
    "TensormapReplaceOp",
    "TensormapCopyOp",
    "FenceTensormapAcquireOp",
    "FenceTensormapReleaseOp",
    "CpFenceTensormapReleaseOp",
    "TENSORMAP_FIELDS",
    "FENCE_SCOPES",
]

# field -> (bit width of the new value, number of ordinals; 0 when the field takes none)
TENSORMAP_FIELDS = {"global_address": (64, 0), "global_dim": (32, 5), "global_stride": (64, 4)}
FENCE_SCOPES = ("cta", "cluster", "gpu", "sys")


class TensormapReplaceOp(CuteOp, name="tensormap_replace"):
    """Replace the global address, one global dim or one global stride of a 128-byte tensor map in memory.

    PTX: tensormap.replace.tile.<field>.<space>.b1024.<b32|b64> [addr], {ord,} value;
    """

    PTX_ISA = 83
    addr: ext.Operand[llvm.PointerType]
    value: ext.Operand[ir.IntegerType]
    field: ir.StringAttr
    ord: ir.IntegerAttr

    def verify_rules(self):
        field, ordinal = self.str_attr("field"), self.int_attr("ord")
        if field not in TENSORMAP_FIELDS:
            self.fail("tensormap-field", f"field must be one of {tuple(TENSORMAP_FIELDS)}, got {field!r}")
        width, count = TENSORMAP_FIELDS[field]
        self.expect_space("addr", self.addr, AddressSpace.GLOBAL, AddressSpace.SHARED)
        self.expect_int("value", self.value, width)
        if count and not 0 <= ordinal < count:
            self.fail("tensormap-ordinal", f"{field} takes an ordinal in [0, {count}), got {ordinal}")
        if not count and ordinal != 0:
            self.fail("tensormap-ordinal", f"{field} takes no ordinal, got {ordinal}")

    @classmethod
    def builder(cls, addr, field, value, ord=0):
        """Build ``cute_nvgpu.tensormap_replace`` (see ``TensormapReplaceOp``)."""
        return cls.build(addr, value, str_attr(field), i32_attr(ord))

    def lower(self, rewriter):
        # inline PTX: NVVM's tensormap.replace numbers ordinals from 1, the PTX instruction from 0
        field = self.str_attr("field")
        width, count = TENSORMAP_FIELDS[field]
        with rewriter.ip:
            addr, cons, space = _ptx_address(self.addr)
            space = "shared::cta" if space == "shared" else space
            ordinal = f"{self.int_attr('ord')}, " if count else ""
            ptx = f"tensormap.replace.tile.{field}.{space}.b1024.b{width} [$0], {ordinal}$1;"
            inline_ptx(ptx, f"{cons},{'l' if width == 64 else 'r'},~{{memory}}", [addr, self.value])
        finish(self, rewriter)


class TensormapCopyOp(CuteOp, name="tensormap_copy"):
    """Copy the 128 bytes of a tensor map between global and shared memory (either way), 16 bytes at a time;
    the source may also be a generic address (a kernel's ``__grid_constant__`` descriptor parameter).

    PTX: ld{.global,.shared,}.v2.b64 / st.<dst>.v2.b64, eight times
    """

    dst: ext.Operand[llvm.PointerType]
    src: ext.Operand[llvm.PointerType]

    def verify_rules(self):
        d = self.expect_space("dst", self.dst, AddressSpace.GLOBAL, AddressSpace.SHARED)
        s = self.expect_space("src", self.src, AddressSpace.GLOBAL, AddressSpace.SHARED, AddressSpace.GENERIC)
        if d == s:
            self.fail("tensormap-copy-direction",
                      f"a tensor map copy goes between global and shared memory; both ends are {AddressSpace(d).ptx}")

    def lower(self, rewriter):
        with rewriter.ip:
            dst, dc, ds = _ptx_address(self.dst)
            src, sc, ss = _ptx_address(self.src)
            lines = ["{", ".reg .b64 %tm<2>;"]
            for off in range(0, BYTES_PER_TENSORMAP, 16):
                lines.append(f"ld{'.' + ss if ss else ''}.v2.b64 {{%tm0, %tm1}}, [$1+{off}];")
                lines.append(f"st.{ds}.v2.b64 [$0+{off}], {{%tm0, %tm1}};")
            lines.append("}")
            inline_ptx("\n\t".join(lines), f"{dc},{sc},~{{memory}}", [dst, src])
        finish(self, rewriter)


class FenceTensormapAcquireOp(CuteOp, name="fence_tensormap_acquire"):
    """Order later TMA uses of a descriptor after its update through generic stores (acquire side).

    PTX: fence.proxy.tensormap::generic.acquire.<scope> [desc], 128;
    """

    PTX_ISA = 83
    desc: ext.Operand[llvm.PointerType]
    scope: ir.StringAttr

    def verify_rules(self):
        self.expect_space("desc", self.desc, AddressSpace.GENERIC)
        _check_scope(self)

    @classmethod
    def builder(cls, desc, scope="gpu"):
        """Build ``cute_nvgpu.fence_tensormap_acquire``."""
        return cls.build(desc, str_attr(scope))

    def lower(self, rewriter):
        with rewriter.ip:
            nvvm.FenceProxyAcquireOp(_SCOPE[self.str_attr("scope")], self.desc, const_int(BYTES_PER_TENSORMAP),
                                     fromProxy=nvvm.ProxyKind.GENERIC, toProxy=nvvm.ProxyKind.TENSORMAP)
        finish(self, rewriter)


class FenceTensormapReleaseOp(CuteOp, name="fence_tensormap_release"):
    """Make this thread's generic-proxy writes of a tensor map visible to the tensormap proxy (release side).

    PTX: fence.proxy.tensormap::generic.release.<scope>;
    """

    PTX_ISA = 83
    scope: ir.StringAttr

    def verify_rules(self):
        _check_scope(self)

    @classmethod
    def builder(cls, scope="gpu"):
        """Build ``cute_nvgpu.fence_tensormap_release``."""
        return cls.build(str_attr(scope))

    def lower(self, rewriter):
        with rewriter.ip:
            nvvm.FenceProxyReleaseOp(_SCOPE[self.str_attr("scope")], fromProxy=nvvm.ProxyKind.GENERIC,
                                     toProxy=nvvm.ProxyKind.TENSORMAP)
        finish(self, rewriter)


class CpFenceTensormapReleaseOp(CuteOp, name="cp_fence_tensormap_release"):
    """Copy a tensor map from shared to global memory and release it to the tensormap proxy, warp-wide.

    PTX: tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [dst], [src], 128;
    """

    PTX_ISA = 83
    dst: ext.Operand[llvm.PointerType]
    src: ext.Operand[llvm.PointerType]

    def verify_rules(self):
        self.expect_space("dst", self.dst, AddressSpace.GLOBAL)
        self.expect_space("src", self.src, AddressSpace.SHARED)

    def lower(self, rewriter):
        with rewriter.ip:
            src = llvm.PtrToIntOp(ir.IntegerType.get_signless(32), self.src).result
            inline_ptx("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned"
                       f" [$0], [$1], {BYTES_PER_TENSORMAP};", "l,r,~{memory}", [self.dst, src])
        finish(self, rewriter)


def _check_scope(op):
    scope = op.str_attr("scope")
    if scope not in FENCE_SCOPES:
        op.fail("fence-scope", f"scope must be one of {FENCE_SCOPES}, got {scope!r}")


_SCOPE = {s: getattr(nvvm.MemScopeKind, s.upper()) for s in FENCE_SCOPES}


def _ptx_address(ptr):
    """(operand, constraint, state space) for a global, shared or generic pointer in inline PTX."""
    if ptr.type.address_space == AddressSpace.SHARED:
        return llvm.PtrToIntOp(ir.IntegerType.get_signless(32), ptr).result, "r", "shared"
    if ptr.type.address_space == AddressSpace.GENERIC:
        return ptr, "l", ""
    return ptr, "l", "global"
