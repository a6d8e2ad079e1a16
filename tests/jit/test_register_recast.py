"""``cute.recast_tensor`` of register fragments (cute_py/compiler/lang/register_view.py): what the PTX of a view
holds, and the errors for views that cannot be exact. The values, bit for bit, are checked on a GPU
(tests/gpu/test_register_recast_gpu.py); the shifts of examples/row_chunks.py that use such views, on the host
here (their index laws) and on a GPU through the norms (tests/gpu/test_shifted_rows_gpu.py)."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings (BindingsNotFoundError)
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

import cute_py as cute  # noqa: E402
from cute_py.errors import CuteValueError  # noqa: E402
from examples import row_chunks  # noqa: E402

from _trace_checks import assert_trace_error, compile_one as _compile  # noqa: E402


@cute.kernel
def pack_words(x, y):
    f = cute.make_rmem_tensor((8,), cute.BFloat16)
    for j in cute.range_constexpr(8):
        f[j] = x[j]
    w = cute.recast_tensor(f, cute.Int32)
    for i in cute.range_constexpr(4):
        y[i] = w[i]


def test_a_widened_view_moves_whole_words():
    """Eight bf16 values loaded one by one and stored as the four words of their Int32 view: the stores are of
    32-bit words (or packed pairs), never of single 16-bit elements."""
    body = _compile(pack_words, ("BFloat16", (8,)), ("Int32", (4,))).ptx.split(".entry", 1)[1]
    assert body.count("ld.global.b16") + body.count("ld.global.u16") == 8
    assert "st.global.b16" not in body and "st.global.u16" not in body


@cute.kernel
def to_bool(x, y):
    f = cute.make_rmem_tensor((8,), cute.Int32)
    cute.recast_tensor(f, cute.Boolean)


@cute.kernel
def off_word(x, y):
    f = cute.make_rmem_tensor((8,), cute.BFloat16)
    part = cute.local_tile(f, (1,), (1,))
    cute.recast_tensor(part, cute.Int32)


@cute.kernel
def past_end(x, y):
    f = cute.make_rmem_tensor((3,), cute.BFloat16)
    f.fill(1.0)
    w = cute.recast_tensor(f, cute.Int32)
    y[0] = w[1]


def test_views_that_cannot_be_exact_are_refused():
    with pytest.raises(CuteValueError, match="Boolean is not a whole number of bytes"):
        _compile(to_bool, ("Int32", (1,)), ("Int32", (1,)))
    with pytest.raises(CuteValueError, match="offset .*1 BFloat16 elements.* not a whole number of Int32"):
        _compile(off_word, ("Int32", (1,)), ("Int32", (1,)))
    with pytest.raises(Exception) as e:             # the second word would take a fourth bf16 the fragment lacks
        _compile(past_end, ("Int32", (1,)), ("Int32", (1,)))
    assert_trace_error(e, past_end, "w[1]", "register fragment index out of bounds")


@settings(max_examples=200, deadline=None)
@given(most=st.sampled_from([1, 2, 4, 8]), data=st.data())
def test_shift_takes_the_values_from_by_on(most, data):
    """``_shift(t, by, most, need)`` is ``t[by:by + need]`` wherever that lies inside ``t`` (run on host numbers,
    where ``cute.where`` selects between them)."""
    by = data.draw(st.integers(0, most))
    need = data.draw(st.integers(1, most + 1))
    t = list(range(100, 100 + 2 * most))
    got = row_chunks._shift(t, by, most, need)
    assert len(got) == need
    for j in range(need):
        if by + j < len(t):
            assert got[j] == t[by + j], (by, need, j)


def _prmt(a, b, sel):
    """PTX ``prmt.b32`` (default mode) from its definition: result byte i is byte (nibble i of sel) & 7 of the
    eight bytes b:a, a's lowest first; with the nibble's bit 3 set, that byte's sign bit replicated."""
    eight = (b << 32) | a
    out = 0
    for i in range(4):
        nib = (sel >> (4 * i)) & 0xF
        byte = (eight >> (8 * (nib & 7))) & 0xFF
        if nib & 8:
            byte = 0xFF if byte & 0x80 else 0
        out |= byte << (8 * i)
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.sampled_from([1, 2, 4]), data=st.data())
def test_shift_in_gives_the_last_s_elements_of_low_then_the_first_of_high(words, data, monkeypatch):
    """``shift_in`` on fragments of 16-bit pairs: ``out`` holds elements ``vec - s .. 2 vec - s`` of the elements of
    ``low`` followed by ``high``, for every ``s`` in ``[0, vec)`` (``prmt`` taken from its PTX definition; the
    same stand-in for every example)."""
    monkeypatch.setattr(cute.arch, "prmt", _prmt)
    vec = 2 * words
    s = data.draw(st.integers(0, vec - 1))
    elems = data.draw(st.lists(st.integers(0, 0xFFFF), min_size=2 * vec, max_size=2 * vec))
    pack = [elems[2 * i] | (elems[2 * i + 1] << 16) for i in range(vec)]
    low, high = pack[:words], pack[words:]
    out = cute.make_rmem_tensor((words,), cute.Uint32)
    row_chunks.shift_in(low, high, s, out)
    got = []
    for i in range(words):
        got += [int(out[i]) & 0xFFFF, int(out[i]) >> 16]
    assert got == elems[vec - s:2 * vec - s], (vec, s)


@cute.kernel
def copy_view(x, y, flag):
    f = cute.make_rmem_tensor((8,), cute.BFloat16)
    for j in cute.range_constexpr(8):
        f[j] = x[j]
    w = cute.recast_tensor(f, cute.Int32)
    if flag[0] > 0:                                  # a write through the view inside run-time control flow
        w[0] = w[3]
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cute.Int32, 128)
    cute.copy(atom, w, y)


def test_a_view_is_copied_whole_and_written_under_run_time_control_flow():
    """A view of a fragment goes to global memory through a 128-bit copy atom in one vector store, and a write
    through it inside an ``if`` is carried out of it (the fragment's elements merge there)."""
    body = _compile(copy_view, ("BFloat16", (8,)), ("Int32", (4,)), ("Int32", (1,))).ptx.split(".entry", 1)[1]
    assert body.count("st.global.v4.b32") == 1
