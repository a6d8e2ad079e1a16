"""An op is four library files with one name: a toy copy op is added to the ``sync`` unit of a temporary copy of
the library by editing exactly ``nvgpu/sync.py``, ``mlir_dialects/ops/sync.py``, ``compiler/emit/sync.py`` and
``reference/sync.py``, and then it is in every table (checked by the op-table tests, run in the copy), the
dialect builds, verifies and lowers it, and a kernel issuing it compiles to PTX holding its instruction.

Should an op need a fifth file (a hand-kept export list, a registration import, a table elsewhere), the tests run
in the copy fail."""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("numba_cuda_mlir", reason="the dialect needs the MLIR bindings (the jit extra)")

ROOT = pathlib.Path(__file__).resolve().parents[1]

EDITS = {
    "cute_py/nvgpu/sync.py": '''

class CopyToyOp(CopyOp):
    """A toy copy op: one 32-bit register value stored to shared memory."""

    def valid_bits(self, dtype: DType) -> set[int]:
        return {32}


COPY_OP_CLASSES = COPY_OP_CLASSES + (CopyToyOp,)
''',
    "mlir_dialects/ops/sync.py": '''

class ToyStoreOp(CuteOp, name="toy_store"):
    """Store a 32-bit value to shared memory.

    PTX: st.shared.b32 [addr], value;
    """

    addr: ext.Operand[llvm.PointerType]
    value: ext.Operand[I32]

    def verify_rules(self):
        self.expect_space("addr", self.addr, AddressSpace.SHARED)

    @classmethod
    def builder(cls, addr, value):
        """Build ``cute_nvgpu.toy_store``."""
        return cls.build(addr, value)

    def lower(self, rewriter):
        with rewriter.ip:
            addr = llvm.PtrToIntOp(ir.IntegerType.get_signless(32), self.addr).result
            inline_ptx("st.shared.b32 [$0], $1;", "r,r,~{memory}", [addr, self.value])
        finish(self, rewriter)
''',
    "cute_py/compiler/emit/sync.py": '''

def _toy_store(b, op, dst, value):
    d = pointer_value(dst, "dst")
    with b.at_end():
        md.toy_store(d, as_value(value, 32))


ENTRIES = {**ENTRIES, sync_ops.CopyToyOp: (_toy_store, ("toy_store",))}
''',
    "cute_py/reference/sync.py": '''

def toy_store(value_bytes, dst_smem, dst_byte):
    """The toy store: 4 bytes of ``value_bytes`` at ``dst_byte`` of ``dst_smem``."""
    dst_smem.view(np.uint8)[dst_byte:dst_byte + 4] = np.frombuffer(bytes(value_bytes), dtype=np.uint8)


ENTRIES = {**ENTRIES, sync_ops.CopyToyOp: toy_store}
''',
}
IMPORTS = {  # what the two compiler-side files need to name the op's module
    "cute_py/compiler/emit/sync.py": "from ...nvgpu import sync as sync_ops\n",
    "cute_py/reference/sync.py": "from ..nvgpu import sync as sync_ops\n",
}

_KERNEL = '''
import cute_py as cute
from cute_py import arch, device
from cute_py.nvgpu.sync import CopyToyOp

@cute.kernel
def k(x: cute.Int32):
    s = arch.SmemAllocator().allocate_tensor(cute.Int32, cute.Layout(32))
    device.active().emit(CopyToyOp(), dst=s.iterator, value=x)

@cute.jit
def host(x: cute.Int32):
    k(x).launch(grid=1, block=32)

c = cute.compile(host, 5)
assert "st.shared.b32" in c.ptx and "cute_nvgpu.toy_store" in c.mlir, c.ptx
import mlir_dialects as md
assert md.toy_store.__name__ == "toy_store"
print("TOY OK")
'''


def _library_files(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for top in ("cute_py", "mlir_dialects")
            for p in (root / top).rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def test_a_toy_op_is_four_library_files(tmp_path):
    copy = tmp_path / "lib"
    for top in ("cute_py", "mlir_dialects"):
        shutil.copytree(ROOT / top, copy / top, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "tests").mkdir()
    for name in ("test_op_tables.py", "conftest.py"):
        shutil.copy(ROOT / "tests" / name, copy / "tests" / name)
    before = _library_files(copy)
    for rel, text in EDITS.items():
        path = copy / rel
        src = path.read_text()
        if rel in IMPORTS:  # after the module's last top-level import
            lines = src.splitlines(keepends=True)
            last = max(i for i, line in enumerate(lines) if line.startswith(("from ", "import ")))
            src = "".join(lines[:last + 1] + [IMPORTS[rel]] + lines[last + 1:])
        path.write_text(src + text)
    after = _library_files(copy)
    assert sorted(k for k in after if before.get(k) != after[k]) == sorted(EDITS)
    env = dict(os.environ, PYTHONPATH=str(copy), CUTE_PY_CACHE_DIR="")
    out = subprocess.run([sys.executable, "-c", _KERNEL], cwd=copy, env=env, capture_output=True, text=True)
    assert out.returncode == 0 and "TOY OK" in out.stdout, out.stderr[-3000:]
    tables = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-p", "no:xdist",
                             "tests/test_op_tables.py"], cwd=copy, env=env, capture_output=True, text=True)
    assert tables.returncode == 0, tables.stdout[-3000:]
    # the op-table tests saw the toy op, and checked its entries
    assert "test_every_copy_op_has_an_emission_entry_a_reference_entry_and_lowered_dialect_ops[CopyToyOp] PASSED" \
        in tables.stdout, tables.stdout[-3000:]
