"""The cross-entropy backward (examples/cross_entropy.py) may write its gradient over the logits (``dlogits`` the same
memory as ``logits``): the one logit a thread reads again, the target's, is read before the row's first store and
its gradient stored after the row's last. Checked in the PTX of rows of one CTA, of several CTAs, shifted rows of
odd stride and rows of single elements."""

import re

import pytest

import cute_py as cute
import examples as ex

F = cute.compiler.DeviceArraySpec


@pytest.mark.parametrize("dtype, n", [("BFloat16", 4096), ("BFloat16", 50257), ("Float32", 4097),
                                      ("BFloat16", 262144), ("Float16", 7)])
def test_the_targets_logit_is_read_before_the_row_is_stored(dtype, n, assemble):
    m = 16
    x, s = F(dtype, (m, n), (n, 1)), F("Float32", (m,))
    c = cute.compile(ex.cross_entropy_backward, x, F("Int64", (m,)), s, s, x)
    lines = c.ptx.splitlines()
    width = "b32" if dtype == "Float32" else "b16"
    stores = [i for i, line in enumerate(lines) if "st.global" in line]
    loads = [i for i, line in enumerate(lines) if re.search(r"ld\.global", line)]
    single = [i for i, line in enumerate(lines) if re.search(rf"ld\.global(\.nc)?\.{width}\b", line)]
    assert stores and single
    # every load of the logits (the target's included) before the first store; the target's store is the last
    assert max(loads) < min(stores)
    assert re.search(rf"st\.global\.{width}\b", lines[max(stores)])
    assemble(c.ptx)
