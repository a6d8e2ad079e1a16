"""The kernel under construction: one ``llvm.func`` in a ``gpu.module``, its blocks and parameters.

A :class:`KernelBuilder` is active while a ``@cute_py.kernel`` function runs (``current()``).
Every op is built at the end of the current block, with the user's ``file:line`` as its
location; a rule of the ``cute_nvgpu`` dialect that an op breaks while it is built is raised as
a :class:`TraceError` at that line. Control flow uses LLVM-dialect blocks and branches
(``cf``/``scf`` cannot be lowered inside a ``gpu.module`` by the pipeline of ``mlir_dialects``).

**Scopes.** The kernel body and the body of each run-time loop or branch are :class:`Scope` s.
Every traced value records the scope open when it was made (``values``), and a scope is closed
when its construct ends: a value made inside a run-time loop or branch is only defined there
(it depends on the iteration, or on whether the branch ran), so using it after the construct
raises a :class:`TraceError` that names where it came from and how to carry it out.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..cache import deps as _deps
from ...errors import TraceError, user_location

if TYPE_CHECKING:
    from ...nvgpu.tma.atom import TmaCopyAtom

__all__ = ["KernelBuilder", "Scope", "current", "active", "current_scope", "DESC_PARAM",
           "SMEM_SYMBOL", "SMEM_BASE_ALIGN"]

# a TMA descriptor passed by value: 128 bytes, 64-byte aligned, read in place (__grid_constant__)
DESC_PARAM = "!llvm.ptr {llvm.byval = !llvm.array<16 x i64>, llvm.align = 64 : i64, nvvm.grid_constant}"
SMEM_SYMBOL = "__cute_py_dyn_smem"
SMEM_BASE_ALIGN = 1024  # the largest TMA swizzle repeat (128B swizzle)

_stack = []


def current() -> KernelBuilder:
    """The active :class:`KernelBuilder`; ``TraceError`` when no kernel is being traced."""
    if not _stack:
        raise TraceError("this is a device operation: call it inside a @cute_py.kernel function")
    return _stack[-1]


def active() -> KernelBuilder | None:
    """The active builder or ``None``."""
    return _stack[-1] if _stack else None


def current_scope() -> Scope | None:
    """The innermost open :class:`Scope` of the kernel being traced (``None`` outside a kernel)."""
    return _stack[-1].scope if _stack else None


class _AtEnd:
    """The context of :meth:`KernelBuilder.at_end` (a class: entered for every op a kernel's trace builds)."""

    __slots__ = ("b", "where", "paused", "ip", "loc", "outer")

    def __init__(self, b: KernelBuilder) -> None:
        self.b = b

    def __enter__(self) -> None:
        b = self.b
        self.outer = b.at_end_block is b.block
        if self.outer:
            return
        self.where = where = user_location()
        self.paused = _deps.pause()  # op builders call no user code: not recorded (see deps)
        try:
            self.ip = b.ir.InsertionPoint(b.block)
            self.loc = b.loc(where)
            self.ip.__enter__()
            self.loc.__enter__()
        except BaseException:
            _deps.resume(self.paused)
            raise
        b.at_end_block = b.block

    def __exit__(self, kind, exc, tb) -> bool:
        if self.outer:
            return False
        try:
            self.b.at_end_block = None
            self.loc.__exit__(kind, exc, tb)
            self.ip.__exit__(kind, exc, tb)
        finally:
            _deps.resume(self.paused)
        if kind is not None:
            from mlir_dialects.errors import DialectError

            if issubclass(kind, DialectError):
                raise TraceError(str(exc), where=self.where) from None
        return False


class Scope:
    """A run-time region of a kernel: the kernel body, or the body of a run-time loop or branch.

    ``kind`` names the construct (``"cute_py.range loop"``, ``"if_ branch"``...), ``file``/``line``
    where it starts, ``parent`` the scope around it; ``open`` is true until the construct ends.
    """

    __slots__ = ("kind", "file", "line", "parent", "open")

    def __init__(self, kind: str, file: str, line: int, parent: Scope | None) -> None:
        self.kind, self.file, self.line, self.parent = kind, file, line, parent
        self.open = True

    def __repr__(self):
        return f"Scope({self.kind} at {self.file}:{self.line}, {'open' if self.open else 'closed'})"


class KernelBuilder:
    """Builds the body of kernel ``name`` with parameters ``param_types`` (MLIR type texts) in ``gpu_block``."""

    def __init__(self, mlir: ModuleType, gpu_block: Any, name: str, param_types: Iterable[str],
                 block: tuple[int, int, int] | None = None) -> None:
        self.mlir = mlir  # mlir_dialects.bindings, the IR façade
        ir = mlir.ir
        self.ir = ir
        self.name = name
        args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(param_types))
        # the launch's block as the kernel's .maxntid: the back end then keeps the registers per thread within
        # what a block of that size can hold (a launch never fails for lack of registers)
        bounds = "" if block is None else f", nvvm.maxntid = array<i32: {block[0]}, {block[1]}, {block[2]}>"
        text = f"llvm.func @{name}({args}) attributes {{nvvm.kernel{bounds}}} {{\n  llvm.return\n}}"
        with ir.InsertionPoint(gpu_block):
            self.func = ir.Operation.parse(text)
        gpu_block.append(self.func)
        entry = self.func.regions[0].blocks[0]
        ret = list(entry.operations)[0]
        ret.erase()
        self.region = self.func.regions[0]
        self.block = entry
        self.at_end_block = None  # the block an open at_end builds into (see _AtEnd)
        # run-time loops being traced whose trace may be thrown away, and the loops that stood in for their
        # exits there (flow.loops: _Loop.run)
        self.loop_trials = 0
        self.loop_stand_ins = 0
        self.params = list(entry.arguments)
        self.open_regions = []  # (kind, file, line) of loops / ifs not closed yet
        self.scope = Scope("kernel", "<kernel>", 0, None)  # the innermost open run-time scope
        self.launch = None  # the launch being traced (grid, block, cluster are static)
        self._i32 = ir.IntegerType.get_signless(32)
        self._smem_base = None
        self.locations = {}
        self.gmem_bases = []  # (tag, byte span, param value) of tensor arguments
        self.smem_region = None
        self.descriptors = {}  # id(TMA atom) -> its descriptor parameter
        self.param_leaves = {}  # id(parameter value) -> the run-time extent or stride (leaf name) it holds
        self.assumed = {}  # leaf name -> the divisor cute.assume promised of it in this kernel (checked per call)
        self.write_logs = []  # register-fragment writes of the open run-time constructs (see carry.note_write)
        self.undo_log = []  # callables restoring Python-side trace state if the trace is abandoned (abandon)
        self.fragment_births = {}  # id(fragment array) -> (array, the write logs open when it was made)
        self.loop_frames = []  # the loops being traced (see flow)
        self.cooperative = False  # the kernel syncs its grid: launched cooperatively
        self.arch = "sm_90a"  # the compile's target (--gpu-arch)
        self.reg_plan = None  # the register reallocation plan (builtins.arch_sync.RegisterPlan), when one is used
        self.threads = None if block is None else block[0] * block[1] * block[2]  # per CTA, when static
        self.setmaxnreg_counts = {}  # "inc" / "dec" -> the register counts the kernel's setmaxnreg ask for
        self.finish_checks = []  # callables run on the builder when the kernel is finished (rules of the whole kernel)

    def descriptor_of(self, atom: TmaCopyAtom) -> Any:
        """The ``!llvm.ptr`` parameter holding ``atom``'s TMA descriptor."""
        desc = self.descriptors.get(id(atom))
        if desc is None:
            raise TraceError(f"the TMA atom {atom!r} is not an argument of this kernel: pass it to the kernel")
        return desc

    def gmem_base_of(self, address: int) -> tuple[Any, int] | None:
        """(param value, byte offset) of the tensor argument whose tagged range holds ``address``."""
        for tag, span, param in self.gmem_bases:
            if tag <= address < tag + span:
                return param, address - tag
        return None

    # -- where ops go -------------------------------------------------------------------------
    def loc(self, where: tuple[str, int] | None = None) -> Any:
        """The MLIR location of ``where`` (``(file, line)``; default: the user's current line)."""
        key = where or user_location()
        loc = self.locations.get(key)
        if loc is None:
            loc = self.locations[key] = self.ir.Location.file(key[0], key[1], 0)
        return loc

    def at_end(self) -> _AtEnd:
        """Build ops at the end of the current block, located at the user's line; the body must call no user code
        (it is not recorded in the compile's dependencies).

        A dialect rule broken by an op built here (``mlir_dialects.DialectError``) becomes a
        :class:`TraceError` that starts with the user's ``file:line``. Inside another ``at_end`` of the same block
        it adds nothing (the outer one has set the place, the line and the pause): a body that builds an op
        through helpers that each ask for ``at_end`` pays for it once.
        """
        return _AtEnd(self)

    # -- run-time scopes ----------------------------------------------------------------------
    def push_scope(self, kind: str, file: str, line: int) -> Scope:
        """Open the scope of a run-time loop or branch body (inside the current scope)."""
        self.scope = Scope(kind, file, line, self.scope)
        return self.scope

    def pop_scope(self, scope: Scope) -> None:
        """Close ``scope`` (the innermost one): values made in it can no longer be used."""
        if scope is not self.scope:  # pragma: no cover - the constructs close their scopes in order
            raise TraceError(f"internal error: closing {scope!r}, but the innermost scope is {self.scope!r}")
        scope.open = False
        self.scope = scope.parent

    def mark(self) -> tuple[Any, ...]:
        """Where the trace stands (for :meth:`abandon`): the current block, its op count, the block count, the
        open scopes and constructs."""
        return (self.block, len(self.block.operations), len(self.region.blocks), self.scope,
                len(self.open_regions), len(self.loop_frames), len(self.write_logs), len(self.undo_log))

    def abandon(self, mark: tuple[Any, ...]) -> None:
        """Undo the trace since ``mark``: erase the ops built since (the blocks made since stay, empty and
        unreachable), close the scopes opened since (their values can no longer be used), undo the Python-side
        state changes logged since (``undo_log``, latest first) and go back to the block of the mark."""
        block, nops, nblocks, scope, nregions, nframes, nlogs, nundo = mark
        new_blocks = [self.region.blocks[i] for i in range(nblocks, len(self.region.blocks))]
        ops = [op.operation for blk in new_blocks for op in blk.operations]
        ops += [op.operation for j, op in enumerate(block.operations) if j >= nops]
        self._erase(ops, new_blocks)
        s = self.scope
        while s is not None and s is not scope:
            s.open = False
            s = s.parent
        self.scope = scope
        del self.open_regions[nregions:]
        del self.loop_frames[nframes:]
        del self.write_logs[nlogs:]
        while len(self.undo_log) > nundo:
            self.undo_log.pop()()
        self.block = block

    def _erase(self, ops: list[Any], dead_blocks: list[Any]) -> None:
        """Erase ``ops`` (users before the values they use) and end each of ``dead_blocks`` with
        ``llvm.unreachable``."""
        while ops:
            rest = []
            for op in reversed(ops):
                for r in op.results:
                    if len(list(r.uses)):
                        rest.append(op)
                        break
                else:
                    op.erase()
            if len(rest) == len(ops):  # pragma: no cover - every user is among the ops erased
                raise TraceError("internal error: erasing ops of the trace left ops with uses")
            ops = rest[::-1]
        for blk in dead_blocks:
            with self.ir.InsertionPoint(blk), self.ir.Location.unknown():
                self.mlir.llvm.UnreachableOp()

    def prune(self) -> None:
        """Empty the blocks no path from the entry reaches (code after a jump, a loop latch no path continues
        to): they end with ``llvm.unreachable``, and their ops, which the conversion to LLVM leaves alone, go."""
        blocks = list(self.region.blocks)
        seen, todo = {0}, [blocks[0]]
        index = {b: i for i, b in enumerate(blocks)}
        while todo:
            blk = todo.pop()
            ops = list(blk.operations)
            if not ops:
                continue
            for succ in ops[-1].operation.successors:
                i = index[succ]
                if i not in seen:
                    seen.add(i)
                    todo.append(succ)
        dead = [b for i, b in enumerate(blocks) if i not in seen]
        dead = [b for b in dead if not (len(b.operations) == 1 and b.operations[0].operation.name == "llvm.unreachable")]
        if dead:
            self._erase([op.operation for b in dead for op in b.operations], dead)

    def new_block(self, *arg_types: Any) -> Any:
        return self.region.blocks.append(*arg_types)

    def set_block(self, block: Any) -> None:
        self.block = block

    def int_type(self, width: int) -> Any:
        return self.ir.IntegerType.get_signless(width)

    # -- frequently used values ---------------------------------------------------------------
    def const(self, value: int, width: int = 32) -> Any:
        """An ``i<width>`` constant; ``value`` must fit in ``width`` bits (signed, or unsigned)."""
        value = int(value)
        if not -(1 << (width - 1)) <= value < 1 << width:
            raise TraceError(f"the integer {value} does not fit in {width} bits")
        arith = self.mlir.arith
        with self.at_end():
            return arith.ConstantOp(self.int_type(width), value).result

    def smem_base(self) -> Any:
        """``!llvm.ptr<3>`` to the start of the kernel's dynamic shared memory."""
        llvm = self.mlir.llvm
        with self.at_end():
            return llvm.AddressOfOp(self.ir.Type.parse("!llvm.ptr<3>"), SMEM_SYMBOL).result

    def smem_ptr(self, byte_offset: int | Any) -> Any:
        """``!llvm.ptr<3>`` ``byte_offset`` bytes into dynamic shared memory (an int or an i32/i64 value)."""
        llvm = self.mlir.llvm
        base = self.smem_base()
        if type(byte_offset) is int and byte_offset == 0:
            return base
        with self.at_end():
            i8 = self.int_type(8)
            if type(byte_offset) is int:
                return llvm.GEPOp(base.type, base, [], [byte_offset], i8, 0).result
            return llvm.GEPOp(base.type, base, [byte_offset], [-2147483648], i8, 0).result

    # -- lifetime -----------------------------------------------------------------------------
    def __enter__(self) -> KernelBuilder:
        _stack.append(self)
        return self

    def __exit__(self, *exc: object) -> bool:
        _stack.pop()
        scope = self.scope
        while scope is not None:  # the kernel is done: none of its values can be used by another one
            scope.open = False
            scope = scope.parent
        return False

    def finish(self) -> None:
        """Close the kernel with ``llvm.return``; ``TraceError`` for a loop or branch left open."""
        if self.open_regions:
            kind, f, line = self.open_regions[-1]
            raise TraceError(f"this {kind} was left without finishing its body (a `break`, `return` or exception "
                             f"inside a run-time loop/branch is not supported)", where=(f, line))
        with self.at_end():
            self.mlir.llvm.ReturnOp()
        self.prune()
        for check in self.finish_checks:
            check(self)
        self.scope.open = False  # values of this kernel cannot be used by another one
