"""The host side as the CuTe DSL's: ``runtime.from_dlpack`` views host arrays (readable and writable on the
host, with numpy's meaning of their shape and strides), ``runtime.make_ptr`` to raw host memory makes tensors
readable on the host, ``Tensor.type``, and ``cute_py.testing`` without hypothesis."""

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cute_py as cute
from cute_py.runtime import from_dlpack, make_ptr
from cute_py.tensor.dlpack import dlpack_info


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=4), st.data())
def test_from_dlpack_of_any_numpy_view_reads_every_element_numpy_reads(shape, data):
    base = np.arange(int(np.prod(shape)) * 4, dtype=np.float32).reshape([s * 2 if i == 0 else s for i, s in
                                                                          enumerate(shape)] + [2])
    # a strided view: every other row of mode 0, the first of the trailing pair, maybe a transpose
    view = base[::2, ..., 0]
    if data.draw(st.booleans()) and view.ndim > 1:
        view = view.transpose()
    t = from_dlpack(view)
    assert tuple(np.atleast_1d(cute.product_each(t.shape))) == view.shape
    for idx in np.ndindex(view.shape):
        assert t[idx if len(idx) > 1 else idx[0]] == view[idx]


def test_from_dlpack_writes_reach_the_array_and_the_view_keeps_it_alive():
    a = np.zeros((3, 4), dtype=np.int32)
    t = from_dlpack(a)
    del a
    t[2, 3] = 7
    assert t[2, 3] == 7 and t.element_type is cute.Int32 and t.layout == cute.Layout((3, 4), (4, 1))


def test_from_dlpack_refuses_writes_to_a_read_only_array():
    a = np.arange(4, dtype=np.float32)
    a.flags.writeable = False
    t = from_dlpack(a)
    assert t[3] == 3.0
    with pytest.raises(cute.CuteValueError, match="read-only"):
        t[0] = 1.0


@pytest.mark.parametrize("bad, match", [(np.array(3.0, dtype=np.float32), "rank >= 1"), ([1, 2], "__dlpack__"),
                                        (np.zeros(3, dtype=np.complex64), "no cute_py element type")])
def test_from_dlpack_names_what_it_cannot_view(bad, match):
    with pytest.raises((cute.CuteTypeError, cute.CuteValueError), match=match):
        from_dlpack(bad)


def test_from_dlpack_checks_the_assumed_alignment_against_the_address():
    a = np.zeros(64, dtype=np.float32)
    addr = dlpack_info(a[1:])[3]
    assert addr % 8 == 4
    with pytest.raises(cute.CuteValueError, match="not 16-byte aligned"):
        from_dlpack(a[1:], assumed_align=16)
    assert from_dlpack(a[1:], assumed_align=4)[0] == 0.0


def test_a_host_pointer_makes_a_tensor_readable_and_writable_on_the_host():
    a = np.arange(40, dtype=np.float32)
    ptr = make_ptr(cute.Float32, a.ctypes.data)
    t = cute.make_tensor(ptr, cute.make_layout((8, 5), stride=(5, 1)))
    assert t[2, 3] == 13.0
    t.fill(1)
    t[7, 4] = 9.0
    assert (a[:39] == 1).all() and a[39] == 9.0


def test_make_ptr_takes_ctypes_pointers_and_refuses_other_values():
    import ctypes

    buf = (ctypes.c_int32 * 4)(1, 2, 3, 4)
    t = cute.make_tensor(make_ptr(cute.Int32, ctypes.pointer(buf)), cute.Layout(4))
    assert [t[i] for i in range(4)] == [1, 2, 3, 4]
    with pytest.raises(cute.CuteTypeError, match="int address"):
        make_ptr(cute.Int32, 1.5)


def test_tensor_type_names_element_memory_alignment_and_layout():
    assert from_dlpack(np.zeros((4, 3), np.float16)).type == "memref<f16, host, (4,3):(3,1)>"
    t = cute.make_tensor(cute.make_ptr(cute.BFloat16, None, cute.AddressSpace.gmem, 16), cute.Layout((8, 4)))
    assert t.type == "memref<bf16, gmem, align<16>, (8,4):(1,8)>"
    assert cute.make_identity_tensor((2, 3)).type == "coord_tensor<(0,0) o (2,3):(1@0,1@1)>"


def test_cute_py_testing_imports_without_hypothesis():
    code = ("import sys; sys.modules['hypothesis'] = None\n"
            "import cute_py.testing as testing\n"
            "assert callable(testing.benchmark) and testing.JitArguments(1, a=2).kwargs == {'a': 2}\n"
            "try:\n    testing.layouts\nexcept ImportError:\n    print('lazy')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "lazy", out.stderr


@pytest.mark.parametrize("kw, match", [({"iterations": 0}, "iterations"), ({"use_cupti": True}, "cupti"),
                                       ({"kernel_arguments": 1, "workspace_generator": list}, "not both")])
def test_benchmark_refuses_bad_settings_before_running_anything(kw, match):
    pytest.importorskip("cuda.bindings")
    from cute_py.testing import benchmark

    with pytest.raises(cute.CuteError, match=match):
        benchmark(lambda: None, **kw)
