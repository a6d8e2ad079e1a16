"""``print_tensor`` prints what the CuTe DSL prints: the outputs below are those of NVIDIA's public
``print.ipynb`` notebook (the same arrays through ``from_dlpack``), with the host address masked."""

import io
import re

import numpy as np
import pytest

import cute_py as cute
from cute_py.runtime import from_dlpack

ADDRESS = re.compile(r"0x[0-9a-f]{16}")


def _printed(t, **kw):
    out = io.StringIO()
    cute.print_tensor(t, file=out, **kw)
    return ADDRESS.sub("0xADDR", out.getvalue())


def test_a_rank_3_tensor_prints_as_the_dsl_prints_it():
    data = np.arange(24, dtype=np.float32).reshape(4, 3, 2)
    assert _printed(from_dlpack(data)) == """\
tensor(raw_ptr(0xADDR: f32, generic, align<4>) o (4,3,2):(6,2,1), data=
       [[[ 0.000000,  2.000000,  4.000000, ],
         [ 6.000000,  8.000000,  10.000000, ],
         [ 12.000000,  14.000000,  16.000000, ],
         [ 18.000000,  20.000000,  22.000000, ]],

        [[ 1.000000,  3.000000,  5.000000, ],
         [ 7.000000,  9.000000,  11.000000, ],
         [ 13.000000,  15.000000,  17.000000, ],
         [ 19.000000,  21.000000,  23.000000, ]]])
"""


def test_a_rank_2_tensor_prints_rows_of_mode_0_with_signs_aligned():
    data = np.array([[-0.690547, -0.274619, -1.659539], [-1.843524, -1.648711, 1.163431]], dtype=np.float32)
    assert _printed(from_dlpack(data)) == """\
tensor(raw_ptr(0xADDR: f32, generic, align<4>) o (2,3):(3,1), data=
       [[-0.690547, -0.274619, -1.659539, ],
        [-1.843524, -1.648711,  1.163431, ]])
"""


def test_a_slice_prints_one_element_per_line():
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    assert _printed(from_dlpack(data)[None, 0]).splitlines()[1:] == [
        "       [ 0.000000, ],", "       [ 3.000000, ],", "       [ 6.000000, ],", "       [ 9.000000, ])"]


def test_verbose_prints_each_coordinate_last_mode_fastest():
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    lines = _printed(from_dlpack(data), verbose=True).splitlines()
    assert lines[0].endswith("o (2,3):(3,1), data= (")
    assert [ln.split("=")[0] for ln in lines[1:-1]] == ["\t(0,0)", "\t(0,1)", "\t(0,2)", "\t(1,0)", "\t(1,1)",
                                                        "\t(1,2)"]
    assert [float(ln.split("=")[1]) for ln in lines[1:-1]] == [0, 1, 2, 3, 4, 5]
    assert lines[-1] == ")"


def test_every_value_of_a_random_strided_tensor_is_printed_where_numpy_puts_it():
    rng = np.random.default_rng(0)
    for _ in range(20):
        shape = tuple(int(s) for s in rng.integers(1, 4, size=rng.integers(2, 5)))
        data = rng.integers(-50, 50, size=shape).astype(np.int32)
        text = _printed(from_dlpack(data))
        numbers = [int(x) for x in re.findall(r"-?\d+", text.split("data=")[1])]
        # the DSL's order: the last mode outermost, then modes 2.., then rows (mode 0) of columns (mode 1)
        expect = np.transpose(data, list(range(len(shape) - 1, 1, -1)) + [0, 1]).ravel().tolist()
        assert numbers == expect


def test_a_tensor_over_an_unknown_device_pointer_is_refused():
    t = cute.make_tensor(cute.make_ptr(cute.Float32, None), cute.Layout((2, 2)))
    with pytest.raises(cute.CuteValueError, match="not readable on the host"):
        cute.print_tensor(t)
