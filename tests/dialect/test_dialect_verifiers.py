"""Every op builds and verifies; every verifier rule rejects what ptxas or the hardware would."""

import pytest

pytest.importorskip("mlir_dialects._backend", reason="needs the MLIR Python bindings (pip install numba-cuda-mlir==0.6.0)")

import mlir_dialects as md  # noqa: E402
from mlir_dialects._backend import ir, llvm  # noqa: E402
from mlir_dialects.errors import OperandTypeError, VerificationError  # noqa: E402


def test_the_sample_kernel_uses_every_op_and_verifies(ctx):
    module = md.build_sample_module()
    md.verify(module)
    text = str(module)
    for cls in md.all_op_classes():
        if cls.ARCH == "sm_90a":  # the sample is a Hopper kernel
            assert f"{cls.OPERATION_NAME}" in text, f"{cls.OPERATION_NAME} missing from the sample"


def _declared_op_classes():
    """The op classes each unit module of ``mlir_dialects.ops`` defines, read from the modules themselves."""
    import importlib
    import pkgutil

    from mlir_dialects import ops
    from mlir_dialects.dialect import CuteOp

    found = []
    for info in pkgutil.iter_modules(ops.__path__):
        module = importlib.import_module(f"mlir_dialects.ops.{info.name}")
        found += [v for v in vars(module).values() if isinstance(v, type) and issubclass(v, CuteOp)
                  and v.__module__ == module.__name__ and "OPERATION_NAME" in vars(v)]
    return found


def test_the_registry_holds_every_op_class_the_unit_modules_define():
    from mlir_dialects import registry

    declared = _declared_op_classes()
    assert declared and set(md.all_op_classes()) == set(declared)
    assert len(md.all_op_classes()) == len(declared)
    assert [m.__name__.rsplit(".", 1)[1] for m in registry.unit_modules()] == list(registry.UNITS)


@pytest.mark.parametrize("cls", _declared_op_classes(), ids=lambda c: c.OPERATION_NAME)
def test_every_op_class_has_a_verifier_a_ptx_line_a_lowering_rule_a_builder_and_an_export(cls):
    assert "PTX:" in (cls.__doc__ or ""), f"{cls.__name__} has no 'PTX:' line"
    takes = [f.name for f in cls._fields if type(f).__name__ in ("OperandDef", "AttributeDef")]
    if takes:  # an op of operands or attributes checks them (an op of results alone has IRDL's checks only)
        assert any("verify_rules" in vars(k) for k in cls.__mro__ if k is not md.CuteOp), \
            f"{cls.__name__} takes {takes} but has no verify_rules"
    assert md.rule_for(cls.OPERATION_NAME) is vars(cls)["lower"], f"{cls.__name__}: no lowering rule of its own"
    build = getattr(md, cls.builder_name())
    assert build.__name__ == cls.builder_name() and build.__wrapped__ == cls.builder
    assert getattr(md, cls.__name__) is cls
    assert cls.builder_name() in md.__all__ and cls.__name__ in md.__all__


def test_verifier_errors_are_value_errors_and_type_errors_for_operands():
    assert issubclass(VerificationError, ValueError)
    assert issubclass(OperandTypeError, TypeError) and issubclass(OperandTypeError, VerificationError)


# -- cp.async -----------------------------------------------------------------------------


def test_cp_async_cg_with_4_bytes_is_rejected(kernel):
    with kernel as k, pytest.raises(VerificationError, match=r"\[cp-async-cg-size\].*16 bytes, got 4"):
        md.cp_async(k.s["tile"], k.a["g"], 4, modifier="cg")


def test_cp_async_cg_with_8_bytes_is_rejected(kernel):
    with kernel as k, pytest.raises(VerificationError, match=r"\[cp-async-cg-size\].*got 8"):
        md.cp_async(k.s["tile"], k.a["g"], 8, modifier="cg")


def test_cp_async_of_12_bytes_is_rejected(kernel):
    with kernel as k, pytest.raises(VerificationError, match=r"\[cp-async-size\].*\(4, 8, 16\).*got 12"):
        md.cp_async(k.s["tile"], k.a["g"], 12)


def test_cp_async_with_an_unknown_cache_modifier_is_rejected(kernel):
    with kernel as k, pytest.raises(VerificationError, match=r"\[cp-async-modifier\].*'cs'"):
        md.cp_async(k.s["tile"], k.a["g"], 16, modifier="cs")


def test_cp_async_into_global_memory_is_rejected(kernel):
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[dst-address-space\].*!llvm.ptr<3>.*got !llvm.ptr<1>"):
        md.cp_async(k.a["g"], k.a["g"], 16)


def test_cp_async_from_shared_memory_is_rejected(kernel):
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[src-address-space\].*got !llvm.ptr<3>"):
        md.cp_async(k.s["tile"], k.s["tile"], 16)


def test_cp_async_src_size_beyond_the_copy_is_rejected(kernel, const):
    with kernel as k, pytest.raises(VerificationError, match=r"\[cp-async-src-size\].*\[0, 16\].*got 32"):
        md.cp_async(k.s["tile"], k.a["g"], 16, modifier="cg", src_size=const(32))


def test_cp_async_wait_group_with_a_negative_count_is_rejected(kernel):
    with kernel, pytest.raises(VerificationError, match=r"\[cp-async-wait-count\].*got -1"):
        md.cp_async_wait_group(-1)


def test_cp_async_mbarrier_arrive_on_global_memory_is_rejected(kernel):
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[mbar-address-space\]"):
        md.cp_async_mbarrier_arrive(k.a["g"])


def test_a_rejected_op_is_not_left_in_the_module(kernel):
    with kernel as k, pytest.raises(VerificationError):
        md.cp_async(k.s["tile"], k.a["g"], 4, modifier="cg")
    assert "cute_nvgpu.cp_async" not in str(k.module)


# -- TMA ----------------------------------------------------------------------------------


@pytest.mark.parametrize("rank", [0, 6])
def test_tma_load_with_rank_outside_1_to_5_is_rejected(kernel, rank):
    with kernel as k, pytest.raises(VerificationError, match=rf"\[tma-rank\].*1 to 5 coordinates, got {rank}"):
        md.tma_load(k.s["tile"], k.a["desc"], k.s["bar"], [k.a["x"]] * rank)


def test_tma_store_with_rank_6_is_rejected(kernel):
    with kernel as k, pytest.raises(VerificationError, match=r"\[tma-rank\].*got 6"):
        md.tma_store(k.a["desc"], k.s["tile"], [k.a["x"]] * 6)


def test_tma_prefetch_tile_with_no_coordinates_is_rejected(kernel):
    with kernel as k, pytest.raises(VerificationError, match=r"\[tma-rank\].*got 0"):
        md.tma_prefetch_tile(k.a["desc"], [])


def test_multicast_on_a_tma_store_is_rejected(kernel):
    with kernel as k, pytest.raises(VerificationError, match=r"\[tma-multicast-load-only\]"):
        md.tma_store(k.a["desc"], k.s["tile"], [k.a["x"], k.a["y"]], multicast_mask=k.a["small"])


def test_multicast_on_a_tma_reduce_is_rejected(kernel):
    with kernel as k, pytest.raises(VerificationError, match=r"\[tma-multicast-load-only\]"):
        md.tma_reduce(k.a["desc"], k.s["tile"], [k.a["x"]], "add", multicast_mask=k.a["small"])


def test_tma_reduce_with_an_unknown_reduction_is_rejected(kernel):
    with kernel as k, pytest.raises(VerificationError, match=r"\[tma-reduce-kind\].*'mul'"):
        md.tma_reduce(k.a["desc"], k.s["tile"], [k.a["x"]], "mul")


def test_tma_load_into_global_memory_is_rejected(kernel):
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[dst-address-space\].*shared::cta.*shared::cluster"):
        md.tma_load(k.a["g"], k.a["desc"], k.s["bar"], [k.a["x"]])


def test_tma_load_with_a_global_space_descriptor_is_rejected(kernel):
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[desc-address-space\].*generic.*got !llvm.ptr<1>"):
        md.tma_load(k.s["tile"], k.a["g"], k.s["bar"], [k.a["x"]])


def test_tma_load_with_an_mbarrier_outside_shared_memory_is_rejected(kernel):
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[mbar-address-space\]"):
        md.tma_load(k.s["tile"], k.a["desc"], k.a["g"], [k.a["x"]])


def test_tma_store_from_global_memory_is_rejected(kernel):
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[src-address-space\]"):
        md.tma_store(k.a["desc"], k.a["g"], [k.a["x"]])


def test_tma_store_wait_with_a_negative_count_is_rejected(kernel):
    with kernel, pytest.raises(VerificationError, match=r"\[tma-store-wait-count\].*got -2"):
        md.tma_store_wait(-2)


def test_prefetch_tensormap_of_a_shared_address_is_rejected(kernel):
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[desc-address-space\]"):
        md.prefetch_tensormap(k.s["tmap"])


def test_tma_coordinates_must_be_i32(kernel):
    with kernel as k:
        md.tma_load(k.s["tile"], k.a["desc"], k.s["bar"], [k.a["hint"]])
    with pytest.raises(VerificationError, match=r"cute_nvgpu.tma_load"):
        md.verify(k.module)


# -- descriptors --------------------------------------------------------------------------


def test_tensormap_replace_of_an_unsupported_field_is_rejected(kernel):
    with kernel as k, pytest.raises(VerificationError, match=r"\[tensormap-field\].*'box_dim'"):
        md.tensormap_replace(k.s["tmap"], "box_dim", k.a["x"], 0)


def test_tensormap_replace_of_the_address_with_an_i32_is_rejected(kernel):
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[value-type\].*i64, got i32"):
        md.tensormap_replace(k.s["tmap"], "global_address", k.a["x"])


@pytest.mark.parametrize("field,ordinal,value", [("global_dim", 5, "x"), ("global_stride", 4, "addr"),
                                                 ("global_dim", -1, "x"), ("global_address", 1, "addr")])
def test_tensormap_replace_with_an_ordinal_out_of_range_is_rejected(kernel, field, ordinal, value):
    with kernel as k, pytest.raises(VerificationError, match=rf"\[tensormap-ordinal\].*{field}.*got {ordinal}"):
        md.tensormap_replace(k.s["tmap"], field, k.a[value], ordinal)


def test_tensormap_replace_in_a_generic_address_is_rejected(kernel):
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[addr-address-space\]"):
        md.tensormap_replace(k.a["desc"], "global_dim", k.a["x"], 0)


def test_tensormap_copy_between_two_shared_buffers_is_rejected(kernel):
    with kernel as k, pytest.raises(VerificationError, match=r"\[tensormap-copy-direction\].*shared::cta"):
        md.tensormap_copy(k.s["tmap"], k.s["tile"])


def test_fence_tensormap_with_an_unknown_scope_is_rejected(kernel):
    with kernel as k, pytest.raises(VerificationError, match=r"\[fence-scope\].*'device'"):
        md.fence_tensormap_acquire(k.a["desc"], "device")
    with kernel, pytest.raises(VerificationError, match=r"\[fence-scope\]"):
        md.fence_tensormap_release("block")


def test_cp_fence_tensormap_release_into_shared_memory_is_rejected(kernel):
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[dst-address-space\].*global"):
        md.cp_fence_tensormap_release(k.s["tile"], k.s["tmap"])


# -- mbarriers ----------------------------------------------------------------------------


@pytest.mark.parametrize("count", [0, 1 << 20])
def test_mbarrier_init_with_a_count_outside_1_to_2_pow_20_minus_1_is_rejected(kernel, const, count):
    with kernel as k, pytest.raises(VerificationError, match=rf"\[mbarrier-count-range\].*got {count}"):
        md.mbarrier_init(k.s["bar"], const(count))


def test_mbarrier_init_in_global_memory_is_rejected(kernel, const):
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[mbar-address-space\].*shared::cta"):
        md.mbarrier_init(k.a["g"], const(1))


def test_mbarrier_expect_tx_beyond_2_pow_20_minus_1_bytes_is_rejected(kernel, const):
    with kernel as k, pytest.raises(VerificationError, match=r"\[mbarrier-tx-range\].*got 1048576"):
        md.mbarrier_arrive_expect_tx(k.s["bar"], const(1 << 20))
    with kernel as k, pytest.raises(VerificationError, match=r"\[mbarrier-tx-range\]"):
        md.mbarrier_expect_tx(k.s["bar"], const(-1))


def test_mbarrier_wait_on_parity_2_is_rejected(kernel, const):
    with kernel as k, pytest.raises(VerificationError, match=r"\[mbarrier-parity\].*got 2"):
        md.mbarrier_try_wait_parity(k.s["bar"], const(2))
    with kernel as k, pytest.raises(VerificationError, match=r"\[mbarrier-parity\]"):
        md.mbarrier_wait_parity(k.s["bar"], const(2))


def test_remote_arrive_on_a_cluster_address_is_rejected(kernel):
    with kernel as k:
        remote = llvm.AddrSpaceCastOp(md.cluster_ptr_type(), k.s["bar"]).result
        with pytest.raises(OperandTypeError, match=r"\[mbar-address-space\].*got !llvm.ptr<7>"):
            md.mbarrier_arrive_cluster(remote, k.a["peer"])


# -- fences and sync -----------------------------------------------------------------------


def test_fence_proxy_async_of_an_unknown_space_is_rejected(kernel):
    with kernel, pytest.raises(VerificationError, match=r"\[fence-proxy-async-space\].*'shared'"):
        md.fence_proxy_async("shared")


def test_dsmem_store_of_an_i16_is_rejected(kernel):
    with kernel as k, pytest.raises(VerificationError, match=r"\[dsmem-value-type\].*got i16"):
        md.dsmem_store(k.s["tile"], k.a["small"], k.s["bar"], k.a["peer"])


def test_dsmem_store_to_a_global_address_is_rejected(kernel):
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[addr-address-space\]"):
        md.dsmem_store(k.a["g"], k.a["val"], k.s["bar"], k.a["peer"])


# -- verification of parsed IR goes through the same rules -----------------------------------


def test_parsing_a_cp_async_cg_of_8_bytes_fails_on_the_rule(ctx):
    text = """
      llvm.func @f(%d: !llvm.ptr<3>, %s: !llvm.ptr<1>) {
        "cute_nvgpu.cp_async"(%d, %s) {modifier = "cg", size = 8 : i32,
            operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (!llvm.ptr<3>, !llvm.ptr<1>) -> ()
        llvm.return
      }"""
    with pytest.raises(ir.MLIRError, match=r"\[cp-async-cg-size\].*got 8"):
        ir.Module.parse(text)


def test_lowering_refuses_a_module_that_does_not_verify(kernel):
    from mlir_dialects.dialect import i32_attr, str_attr
    from mlir_dialects.ops.cpasync import CpAsyncOp

    with kernel as k:
        CpAsyncOp(k.s["tile"], k.a["g"], i32_attr(3), str_attr("ca"))  # the raw constructor checks nothing
    with pytest.raises(VerificationError, match=r"\[cp-async-size\].*got 3"):
        md.lower(k.module)


@pytest.mark.parametrize("ncoords,noffs,match", [
    (2, 0, r"\[tma-im2col-rank\].*3 to 5 coordinates, got 2"),
    (6, 4, r"\[tma-im2col-rank\].*got 6"),
    (4, 1, r"\[tma-im2col-offsets\].*4 coordinates takes 2 im2col offsets .*got 1"),
    (5, 2, r"\[tma-im2col-offsets\].*5 coordinates takes 3"),
])
def test_tma_load_im2col_rank_and_offsets(kernel, ncoords, noffs, match):
    with kernel as k, pytest.raises(VerificationError, match=match):
        md.tma_load_im2col(k.s["tile"], k.a["desc"], k.s["bar"], [k.a["x"]] * ncoords, [k.a["small"]] * noffs)


def test_tma_load_im2col_offsets_are_16_bit(kernel):
    with kernel as k, pytest.raises(Exception, match=r"i16|16"):
        md.tma_load_im2col(k.s["tile"], k.a["desc"], k.s["bar"], [k.a["x"]] * 4, [k.a["x"], k.a["x"]])


def test_tma_load_im2col_destination_is_shared(kernel):
    with kernel as k, pytest.raises(VerificationError, match=r"\[dst-address-space\]"):
        md.tma_load_im2col(k.a["g"], k.a["desc"], k.s["bar"], [k.a["x"]] * 4, [k.a["small"]] * 2)
