"""The shortcuts a kernel's trace takes for speed give what the long way gives:

- ``KernelBuilder.at_end`` inside another ``at_end`` of the same block builds at the end of that block, in order,
  and a dialect rule broken there names the user's line as before;
- an int index into a host array or a register fragment whose static layout has been indexed before takes the
  offset kept for that layout: the same element, the same errors for indices outside, and views shifted by
  ``domain_offset`` still check each element;
- the same PTX assembled again by the same nvJitLink in a process is the cubin of the first time; a failure is
  never kept;
- the lowering reuses the traced module's text: the PTX is the one of the module printed again.
"""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cute_py as cute
from cute_py import Layout, arch
from cute_py.compiler.lang.builder import current
from cute_py.errors import CuteError, CuteIndexError, TraceError
from mlir_dialects import assembler
from mlir_dialects.errors import DialectError

from _control_flow_helpers import kernel_body, line_of


def _compile(k, n):
    """A jit function launching ``k(out)`` on one warp, ``out`` ``n`` Int32s."""
    def host(out):
        k(out).launch(grid=1, block=32)

    return cute.compile(host, cute.compiler.DeviceArraySpec("Int32", (n,)))


def test_ops_built_inside_nested_at_ends_go_to_the_end_of_the_block_in_order():
    @cute.kernel
    def k(out):
        b = current()
        with b.at_end():
            b.const(1234567, 32)
            with b.at_end():
                b.const(7654321, 32)
            b.const(2345678, 32)
        b.const(3456789, 32)
        out[0] = 1

    body = kernel_body(_compile(k, 4).mlir)
    found = [int(v) for v in re.findall(r"arith\.constant (\d{7}) : i32", body)]
    assert found == [1234567, 7654321, 2345678, 3456789]


class _Stop(BaseException):
    """Ends a trace from its kernel (an exception the compiler does not turn into another)."""


def test_a_nested_at_end_builds_into_the_block_the_trace_has_moved_to():
    seen = {}

    @cute.kernel
    def k(out):
        b = current()
        home = b.block
        with b.at_end():
            other = b.new_block()
            b.set_block(other)
            b.const(5555555, 32)
            b.set_block(home)
            b.const(6666666, 32)
        seen["other"] = " ".join(str(op) for op in other.operations)
        seen["home"] = " ".join(str(op) for op in home.operations)
        raise _Stop  # the trace is looked at, not compiled (the other block has no terminator)

    with pytest.raises(_Stop):
        _compile(k, 4)
    assert "5555555" in seen["other"] and "6666666" not in seen["other"]
    assert "6666666" in seen["home"] and "5555555" not in seen["home"]


def test_a_dialect_rule_broken_inside_nested_at_ends_names_the_outer_users_line():
    @cute.kernel
    def k(out):
        b = current()
        with b.at_end():  # outer at_end
            with b.at_end():
                raise DialectError("a rule of the dialect")

    with pytest.raises(TraceError) as info:
        _compile(k, 4)
    assert str(info.value) == f"{__file__}:{line_of('outer at_end', __file__)}: a rule of the dialect"


def test_after_a_failed_at_end_the_next_one_builds_again():
    @cute.kernel
    def k(out):
        b = current()
        try:
            with b.at_end():
                raise ValueError("not a dialect error")
        except ValueError:
            pass
        with b.at_end():
            b.const(4567890, 32)
        out[0] = 1

    body = kernel_body(_compile(k, 4).mlir)
    assert "arith.constant 4567890 : i32" in body


MODES = st.lists(st.tuples(st.integers(1, 5), st.integers(0, 7)), min_size=1, max_size=3)


def _fresh(layout):
    """An equal layout made anew (no object shared with ``layout``)."""
    return Layout(layout.shape, layout.stride)


def _outcome(fn):
    try:
        return ("value", fn())
    except CuteError as e:
        return ("error", type(e).__name__, str(e))


# ints in and out of range, and numpy and bool indices (never kept: they take the long way every time)
INDICES = st.one_of(st.integers(-3, 130), st.integers(-3, 130).map(np.int64), st.booleans())


@settings(max_examples=200, deadline=None)
@given(modes=MODES, indices=st.lists(INDICES, min_size=1, max_size=12))
def test_indexing_a_host_array_again_reads_and_writes_what_the_layout_says(modes, indices):
    layout = Layout(tuple(s for s, _ in modes), tuple(d for _, d in modes))
    a = np.arange(cute.cosize(layout), dtype=np.float64)
    t = cute.make_tensor(a, layout)
    for i in indices + indices:  # each index twice: the second read takes the kept offset
        first = _outcome(lambda: cute.make_tensor(a, _fresh(layout))[i])  # a layout object never indexed
        assert _outcome(lambda: t[i]) == first
        if first[0] == "value":
            assert first[1] == a[t.engine.offset + layout(i)]
            t[i] = -1.0 - i
            assert a[t.engine.offset + layout(i)] == -1.0 - i
            t[i] = first[1]


def test_a_shifted_view_checks_each_element_however_often_it_is_read():
    a = np.arange(32, dtype=np.float64)
    t = cute.make_tensor(a, Layout((4, 8)))
    v = cute.domain_offset((0, -3), t)
    for _ in range(3):
        assert v[13] == t[1]  # (1, 3) of the view is (1, 0) of t
        with pytest.raises(CuteIndexError):
            v[0]
        with pytest.raises(CuteIndexError):
            v[0] = 5.0
    assert a.tolist() == list(range(32))


def test_a_register_fragments_kept_offsets_give_its_elements():
    @cute.kernel
    def k(out):
        frag = cute.make_fragment(Layout((4, 2), (2, 1)), cute.Int32)
        for i in cute.range_constexpr(8):
            frag[i] = i * 10
        for r in cute.range_constexpr(2):
            for i in cute.range_constexpr(8):
                out[i + 8 * r] = frag[i]

    body = kernel_body(_compile(k, 16).mlir)
    # element i of the (4, 2):(2, 1) fragment holds i * 10 wherever it lives; both rounds store the same values
    assert [int(v) for v in re.findall(r"llvm\.store %c(\d+)_i32", body)] == [i * 10 for i in range(8)] * 2


class _Library:
    """A stand-in nvJitLink: counts its links, fails on PTX that says so."""

    def __init__(self):
        self.links = 0

    def link(self, data, options, name):
        from mlir_dialects.nvjitlink import NvJitLinkError

        self.links += 1
        if b"fail" in data:
            raise NvJitLinkError("asked to fail", 7)
        return b"\x7fELF" + data[:8] + options[0].encode()


@pytest.fixture
def library(monkeypatch):
    lib = _Library()
    monkeypatch.setattr(assembler, "load_nvjitlink", lambda: (lib, (13, 5)))
    monkeypatch.setattr(assembler, "_CUBINS", {})
    return lib


def test_the_same_ptx_is_assembled_once_by_the_same_library(library, monkeypatch):
    first = assembler._nvjitlink_in_process(b"// ptx one", "sm_90a")
    assert assembler._nvjitlink_in_process(b"// ptx one", "sm_90a") == first and library.links == 1
    assert assembler._nvjitlink_in_process(b"// ptx one", "sm_100a") != first and library.links == 2
    assert assembler._nvjitlink_in_process(b"// ptx two", "sm_90a") != first and library.links == 3
    other = _Library()
    monkeypatch.setattr(assembler, "load_nvjitlink", lambda: (other, (13, 5)))
    assert assembler._nvjitlink_in_process(b"// ptx one", "sm_90a") == first and other.links == 1


def test_a_failed_assembly_is_not_kept(library):
    for n in (1, 2):
        with pytest.raises(assembler.AssemblyError, match="asked to fail"):
            assembler._nvjitlink_in_process(b"// fail", "sm_90a")
        assert library.links == n


def test_the_kept_cubins_are_few(library):
    for i in range(assembler._CUBINS_KEPT + 5):
        assembler._nvjitlink_in_process(f"// ptx {i}".encode(), "sm_90a")
    assert len(assembler._CUBINS) == assembler._CUBINS_KEPT
    assembler._nvjitlink_in_process(b"// ptx 0", "sm_90a")  # the oldest went first
    assert library.links == assembler._CUBINS_KEPT + 6


def test_the_lowering_from_the_traced_text_gives_the_ptx_of_the_module():
    from mlir_dialects import pipeline
    from mlir_dialects._backend import ir
    from mlir_dialects.registry import make_context

    @cute.kernel
    def k(out):
        tid, _, _ = arch.thread_idx()
        out[tid] = 3

    c = _compile(k, 32)
    with make_context() as ctx:
        module = ir.Module.parse(c.mlir, context=ctx)
        text = str(module)
        assert text == str(module.operation)  # what the stage hands on
        given_text, features = pipeline.lower_for_ptx(module, text=text)
        printed, _ = pipeline.lower_for_ptx(module)
        assert str(given_text) == str(printed)
        assert pipeline.lowered_to_ptx(given_text, features=features) == c.ptx
