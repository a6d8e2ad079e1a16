"""The compiler's named stages: each product of a compile is exposed with the time its stage took."""

import cute_py as cute
from cute_py.compiler import stages
import examples as ex

F = cute.compiler.DeviceArraySpec


def test_the_stage_table_is_trace_mlir_lowered_ptx_cubin():
    assert [s[0] for s in stages.STAGES] == ["trace", "mlir", "lowered", "ptx", "cubin"]


def test_a_compile_exposes_every_stage_and_its_time():
    c = cute.compile(ex.dsmem_exchange, F("Float32", (4, 128)), F("Float32", (4, 128)), 2, 4)
    assert "cute_nvgpu.dsmem_store" in c.mlir and "cute_nvgpu." not in c.lowered
    assert "llvm.inline_asm" in c.lowered and "st.async" in c.lowered
    assert ".entry" in c.ptx and c.cubin[:4] == b"\x7fELF"
    assert set(c.stage_times) == {"trace", "mlir", "ptx", "cubin"}
    assert all(t >= 0 for t in c.stage_times.values())
