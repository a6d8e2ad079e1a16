"""The device-op tables are complete: every copy op has exactly one emission entry (the kernel compiler), one
CPU reference entry and dialect ops with lowering rules; every other device instruction has its emission
entry; the low-level forms and the tile copies issue the same op objects."""

import pytest

import mlir_dialects as md
from cute_py import device, reference
from cute_py.atom import CopyOp, CopyUniversalOp
from cute_py.compiler import emit as emission
from cute_py.mma import MmaOp
from cute_py.nvgpu import forms, sync, universal, warp, warpgroup
from cute_py.nvgpu.cpasync import ops as cpasync_ops
from cute_py.nvgpu.tma import ops as tma_ops


def _subclasses(cls):
    out = set()
    for sub in cls.__subclasses__():
        out.add(sub)
        out |= _subclasses(sub)
    return out


# each unit declares its copy ops (cp.async, TMA, st.async, then the warp's)
COPY_OPS = ((CopyUniversalOp,) + cpasync_ops.COPY_OP_CLASSES + tma_ops.COPY_OP_CLASSES + sync.COPY_OP_CLASSES
            + warp.COPY_OP_CLASSES)
MMA_OPS = warp.MMA_OP_CLASSES + warpgroup.MMA_OP_CLASSES + universal.MMA_OP_CLASSES


def test_every_copy_op_class_is_in_the_tables_list():
    concrete = {c for c in _subclasses(CopyOp) if not c.__name__.startswith("_") and c is not tma_ops.TmaOp}
    concrete = {c for c in concrete if c.__module__.startswith("cute_py.")}
    missing = sorted(c.__name__ for c in concrete - set(COPY_OPS))
    assert not missing, f"copy ops outside COPY_OP_CLASSES (so unchecked by the table tests): {missing}"


@pytest.mark.parametrize("op", COPY_OPS, ids=lambda c: c.__name__)
def test_every_copy_op_has_an_emission_entry_a_reference_entry_and_lowered_dialect_ops(op):
    assert op in emission.EMIT, f"{op.__name__} has no emission entry (the ENTRIES table of its unit under cute_py/compiler/emit/)"
    assert op in reference.REFERENCE, f"{op.__name__} has no entry in cute_py.reference.REFERENCE"
    names = {c.OPERATION_NAME.split(".", 1)[1]: c for c in md.all_op_classes()}
    for name in emission.DIALECT_OP[op]:
        if name.startswith("llvm."):  # plain arithmetic (the universal MMA's fma): LLVM's own op
            assert name == "llvm.intr.fma"
            continue
        assert name in names, f"{op.__name__} emits cute_nvgpu.{name}, which the dialect does not define"
        assert md.rule_for(names[name].OPERATION_NAME) is not None  # raises, naming the op, if there is none
    if op is not CopyUniversalOp:  # plain loads and stores are LLVM's own
        assert emission.DIALECT_OP[op], f"{op.__name__}'s emission entry names no dialect op"


@pytest.mark.parametrize("op", sync.INSTRUCTION_CLASSES, ids=lambda c: c.__name__)
def test_every_other_device_instruction_has_an_emission_entry(op):
    assert op in emission.EMIT
    names = {c.OPERATION_NAME.split(".", 1)[1] for c in md.all_op_classes()}
    assert set(emission.DIALECT_OP[op]) <= names


def test_every_device_instruction_class_is_listed():
    defined = {c for c in _subclasses(sync.DeviceInstruction) if c.__module__.startswith("cute_py.")}
    assert defined == set(sync.INSTRUCTION_CLASSES)


def test_every_mma_op_class_is_listed():
    concrete = {c for c in _subclasses(MmaOp) if not c.__name__.startswith("_")}
    concrete = {c for c in concrete if c.__module__.startswith("cute_py.")}
    missing = sorted(c.__name__ for c in concrete - set(MMA_OPS))
    assert not missing, f"MMA ops outside the MMA_OP_CLASSES lists (so unchecked by the table tests): {missing}"


@pytest.mark.parametrize("op", MMA_OPS, ids=lambda c: c.__name__)
def test_every_mma_op_has_an_emission_entry_and_lowered_dialect_ops(op):
    assert op in emission.EMIT, f"{op.__name__} has no emission entry"
    names = {c.OPERATION_NAME.split(".", 1)[1]: c for c in md.all_op_classes()}
    assert emission.DIALECT_OP[op], f"{op.__name__}'s emission entry names no dialect op"
    for name in emission.DIALECT_OP[op]:
        if name.startswith("llvm."):  # plain arithmetic (the universal MMA's fma): LLVM's own op
            assert name == "llvm.intr.fma"
            continue
        assert name in names, f"{op.__name__} emits cute_nvgpu.{name}, which the dialect does not define"
        assert md.rule_for(names[name].OPERATION_NAME) is not None


def test_the_tables_hold_nothing_else():
    assert set(emission.EMIT) == set(COPY_OPS) | set(sync.INSTRUCTION_CLASSES) | set(MMA_OPS)
    assert set(reference.REFERENCE) == set(COPY_OPS)


def test_an_op_without_an_entry_is_a_clear_error_in_a_kernel():
    class CopyNothingOp(CopyOp):
        pass

    with pytest.raises(Exception, match="CopyNothingOp is not supported in kernels"):
        emission.emit(CopyNothingOp())


def test_the_low_level_forms_issue_the_copy_op_objects():
    seen = []

    class Recorder(device.DeviceContext):
        def emit(self, op, **operands):
            seen.append((type(op), sorted(operands)))

    from cute_py.tensor.pointer import AddressSpace, Pointer

    smem = Pointer("Float16", AddressSpace.smem, 128, 0)
    bar = Pointer("Int64", AddressSpace.smem, 8, 1024)
    gmem = Pointer("Float16", AddressSpace.gmem, 16, 4096)
    with device.tracing(Recorder()):
        forms.tma_load(object(), bar, smem, (0, 0))
        forms.tma_load(object(), bar, smem, (0, 0), mcast_mask=3)
        forms.tma_store(object(), smem, (1, 2))
        forms.cp_async_gs(16, smem, gmem)
        forms.tma_store_arrive()
        forms.tma_store_wait(0)
    assert device.active() is None
    assert [t for t, _ in seen] == [tma_ops.CopyBulkTensorTileG2SOp, tma_ops.CopyBulkTensorTileG2SMulticastOp,
                                    tma_ops.CopyBulkTensorTileS2GOp, cpasync_ops.CopyG2SOp,
                                    sync.BulkCommitGroupOp, sync.BulkWaitGroupOp]
    # the same operands as the tile copies pass to the same entries
    assert seen[0][1] == ["cache_hint", "crd", "desc", "mbar", "smem"]


def test_one_front_door_per_builtin():
    from cute_py import arch
    from cute_py.nvgpu import cpasync

    assert arch.tma_store_wait is cpasync.tma_store_wait is forms.tma_store_wait
    assert arch.tma_store_arrive is cpasync.tma_store_arrive is forms.tma_store_arrive
