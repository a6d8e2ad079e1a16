"""``torch_guard.tensor_guard``: torch's one-call tensor check, used by the generated launch paths only where it
accepts exactly the tensors like its templates (law over arbitrary tensor pairs), and never where torch lacks it
or where it would let a probe through (stand-ins that are too permissive). Needs torch (CPU tensors suffice)."""

import pytest
from hypothesis import given, strategies as st

torch = pytest.importorskip("torch", reason="the guard checks torch tensors")

from cute_py.compiler.runtime import torch_guard  # noqa: E402
from cute_py.compiler.runtime.torch_guard import tensor_guard  # noqa: E402

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int8, torch.uint8, torch.float64,
          torch.int64, torch.bool]


@st.composite
def tensors(draw):
    """A CPU tensor of any listed dtype, 0-3 dimensions of extent 0-4, as a view (transposed, sliced, expanded
    or offset) or fresh."""
    dtype = draw(st.sampled_from(DTYPES))
    shape = tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
    t = torch.zeros(tuple(n + 2 for n in shape), dtype=dtype)
    t = t[tuple(slice(1, 1 + n) for n in shape)] if draw(st.booleans()) else torch.zeros(shape, dtype=dtype)
    if t.dim() >= 2 and draw(st.booleans()):
        t = t.transpose(0, 1)
    if t.dim() and draw(st.booleans()):
        t = t.unsqueeze(draw(st.integers(0, t.dim())))
    if t.dim() and draw(st.booleans()) and 1 in t.shape:
        k = t.shape.index(1)
        t = t.expand(*(3 if j == k else -1 for j in range(t.dim())))
    return t


def _alike(a, b, dynamic):
    return type(a) is type(b) and a.dtype is b.dtype and a.device == b.device and a.dim() == b.dim() and \
        a.requires_grad == b.requires_grad and (dynamic or (a.shape == b.shape and a.stride() == b.stride()))


@given(tensors(), tensors(), st.booleans())
def test_the_guard_accepts_exactly_the_tensors_like_its_template(template, other, dynamic):
    check = tensor_guard([template], [dynamic])
    if check is None:  # declined: the Python checks run instead (allowed, never wrong)
        return
    assert check(template)
    assert check(other) == _alike(template, other, dynamic), (template.shape, template.stride(), other.shape,
                                                                other.stride(), template.dtype, other.dtype)


@given(st.lists(tensors(), min_size=1, max_size=3), st.data())
def test_with_several_tensors_one_mismatch_anywhere_is_a_refusal(templates, data):
    dynamic = [data.draw(st.booleans()) for _ in templates]
    check = tensor_guard(templates, dynamic)
    if check is None:
        return
    assert check(*templates)
    k = data.draw(st.integers(0, len(templates) - 1))
    other = data.draw(tensors())
    args = templates[:k] + [other] + templates[k + 1:]
    assert check(*args) == _alike(templates[k], other, dynamic[k])
    assert not check(*templates[:k], 3, *templates[k + 1:])  # not a tensor
    for wrong_count in (templates + templates[:1], templates[1:]):  # the generated calls pass exactly their own
        with pytest.raises(TypeError):
            check(*wrong_count)


def test_the_guard_is_used_for_ordinary_tensors():
    t = torch.zeros(128, 64)
    assert tensor_guard([t, t.t()], [False, True]) is not None  # this torch has it and it passes its probes


def test_one_tensor_at_two_positions_is_refused_by_the_guard_not_by_the_call():
    t, u = torch.zeros(8, 8), torch.zeros(8, 8)
    check = tensor_guard([t, u], [False, False])
    assert check is not None and check(u, t)
    assert not check(t, t)  # torch's guard refuses aliased arguments: the generated call checks them in Python
    assert tensor_guard([t, t], [False, False]) is None


def test_requires_grad_and_subclasses_are_told_apart():
    t = torch.zeros(8, 8)
    check = tensor_guard([t], [False])
    assert check is not None
    assert not check(torch.zeros(8, 8, requires_grad=True))
    assert not check(torch.nn.Parameter(torch.zeros(8, 8)))
    assert not check(torch.zeros(8, 8).resize_(4, 16))


def test_without_torchs_guard_the_python_checks_run(monkeypatch):
    import torch._C._dynamo.guards as guards

    monkeypatch.delattr(guards, "TensorGuards")
    assert tensor_guard([torch.zeros(4, 4)], [False]) is None


class _Lax:
    """A stand-in for torch's guard that ignores some property: the probes must find it out."""
    ignores = ()

    def __init__(self, *tensors, dynamic_dims_sizes, dynamic_dims_strides):
        self.dynamic = [None in sizes for sizes in dynamic_dims_sizes]
        self.want = [self.props(t, d) for t, d in zip(tensors, self.dynamic)]

    @classmethod
    def props(cls, t, dynamic):
        p = {"type": type(t), "dtype": t.dtype, "device": t.device.type, "dim": t.dim()}
        if not dynamic:
            p.update(shape=tuple(t.shape), stride=t.stride())
        return {k: v for k, v in p.items() if k not in cls.ignores}

    def check(self, *tensors):
        return len(tensors) == len(self.want) and all(
            isinstance(t, torch.Tensor) and self.props(t, d) == w for t, d, w in zip(tensors, self.dynamic, self.want))


@pytest.mark.parametrize("ignored, dynamic", [("dtype", False), ("dtype", True), ("device", False),
                                              ("device", True), ("dim", True), ("shape", False), ("stride", False)])
def test_a_guard_that_ignores_a_property_is_not_used(monkeypatch, ignored, dynamic):
    import torch._C._dynamo.guards as guards

    lax = type("Lax", (_Lax,), {"ignores": (ignored,)})
    monkeypatch.setattr(guards, "TensorGuards", lax)
    t = torch.zeros(16, 8)
    assert tensor_guard([t], [dynamic]) is None
    exact = type("Exact", (_Lax,), {"ignores": ()})
    monkeypatch.setattr(guards, "TensorGuards", exact)
    assert tensor_guard([t], [dynamic]) is not None  # the stand-in that checks everything passes


def test_a_guard_that_raises_or_answers_oddly_is_not_used(monkeypatch):
    import torch._C._dynamo.guards as guards

    class Raises(_Lax):
        def check(self, *tensors):
            raise RuntimeError("unexpected")

    class Truthy(_Lax):
        def check(self, *tensors):
            return 1 if super().check(*tensors) else 0

    for cls in (Raises, Truthy):
        monkeypatch.setattr(guards, "TensorGuards", cls)
        assert tensor_guard([torch.zeros(4, 4)], [False]) is None
    assert torch_guard.__all__ == ["tensor_guard"]


def test_the_probes_run_once_per_kind_of_tensor_list(monkeypatch):
    probed = []
    real = torch_guard._probes
    monkeypatch.setattr(torch_guard, "_probes", lambda torch_, t, d: probed.append(t.shape) or real(torch_, t, d))
    monkeypatch.setattr(torch_guard, "_PROBED", set())
    assert tensor_guard([torch.zeros(4, 4)], [False]) is not None
    assert tensor_guard([torch.zeros(7, 3)], [False]) is not None  # same kind, other extents: not probed again
    assert probed == [(4, 4)]
    for other in ([torch.zeros(4, 4, dtype=torch.int32)], [torch.zeros(4)], [torch.zeros(4, 4), torch.zeros(4, 4)]):
        assert tensor_guard(other, [False] * len(other)) is not None
    assert tensor_guard([torch.zeros(4, 4)], [True]) is not None
    assert len(probed) == 1 + 1 + 1 + 2 + 1  # each new kind probed: dtype, dimensions, count, run-time extents


def test_anything_but_torch_tensors_gets_no_guard():
    class Lookalike:  # what a torch tensor's checks read, without being one
        shape, dtype, is_cuda = (4, 4), torch.float32, True

        def stride(self):
            return (4, 1)

    assert tensor_guard([Lookalike()], [False]) is None
    assert tensor_guard([torch.zeros(4, 4), Lookalike()], [False, True]) is None
    assert tensor_guard([torch.zeros(4, 4), 3], [False, False]) is None


def test_the_guard_comes_from_the_torch_already_loaded(monkeypatch):
    import sys

    t = torch.zeros(4, 4)
    monkeypatch.delitem(sys.modules, "torch")  # the guard imports nothing: no torch loaded, no guard
    assert tensor_guard([t], [False]) is None
