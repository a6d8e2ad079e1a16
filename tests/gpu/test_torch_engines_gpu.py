"""On a GPU: a cute_py kernel as a PyTorch operator, the pattern the README shows (``torch.library.custom_op``
around the jit function, launched on torch's current stream, with a fake implementation for tracing): it runs
under ``torch.compile(fullgraph=True)`` with no graph break and gives eager's bits, and under CUDA-graph capture
and replay, where new values copied into the captured inputs give new outputs (never a stale replay)."""

import math

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings (BindingsNotFoundError)
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

from examples import attention  # noqa: E402
from examples.attention_backward import attention_backward  # noqa: E402
from _tma_copy_check import hopper_torch  # noqa: E402

pytestmark = pytest.mark.gpu
_OPS = {}


def _attention_op(torch):
    """``cute_py_tests::attention(q, k, v, causal) -> (out, lse)``, registered once per process."""
    if "attention" in _OPS:
        return _OPS["attention"]

    @torch.library.custom_op("cute_py_tests::attention", mutates_args=())
    def op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
        b, s, h, _ = q.shape
        out = torch.empty_like(q)
        lse = torch.empty((b, h, s), device=q.device, dtype=torch.float32)
        attention(q, k, v, out, lse, causal=causal, stream=torch.cuda.current_stream())
        return out, lse

    @op.register_fake
    def _(q, k, v, causal):
        b, s, h, _ = q.shape
        return torch.empty_like(q), q.new_empty((b, h, s), dtype=torch.float32)

    @torch.library.custom_op("cute_py_tests::attention_backward", mutates_args=())
    def backward_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor, lse: torch.Tensor,
                    dout: torch.Tensor, causal: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        attention_backward(q, k, v, out, lse, dout, dq, dk, dv, causal=causal, stream=torch.cuda.current_stream())
        return dq, dk, dv

    @backward_op.register_fake
    def _(q, k, v, out, lse, dout, causal):
        return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)

    def setup_context(ctx, inputs, output):
        q, k, v, causal = inputs
        ctx.save_for_backward(q, k, v, *output)
        ctx.causal = causal
        ctx.set_materialize_grads(False)      # an unused lse gets no gradient tensor

    def backward(ctx, dout, dlse):            # (an operator too: a compiled backward must not trace the kernel)
        if dlse is not None:
            raise NotImplementedError("the attention operator has no gradient through its lse")
        q, k, v, out, lse = ctx.saved_tensors
        return (*backward_op(q, k, v, out, lse, dout.contiguous(), ctx.causal), None)

    op.register_autograd(backward, setup_context=setup_context)
    _OPS["attention"] = op
    return op


def _inputs(torch, seed, b=2, s=256, h=4, hk=2, d=128):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16, generator=g)
    k = torch.randn(b, s, hk, d, device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn(b, s, hk, d, device="cuda", dtype=torch.bfloat16, generator=g)
    return q, k, v


def test_the_operator_compiles_with_fullgraph_and_gives_eagers_bits():
    torch = hopper_torch()
    op = _attention_op(torch)

    def block(q, k, v):
        out, lse = op(q * 0.5, k, v, True)       # (a scale by 0.5 is exact: the operator sees eager's inputs)
        return out, lse, out.float().sum(dim=-1) + lse.transpose(1, 2)

    compiled = torch.compile(block, fullgraph=True)   # a graph break would raise
    for seed in (0, 1):
        q, k, v = _inputs(torch, seed)
        got, want = compiled(q, k, v), block(q, k, v)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
        torch.testing.assert_close(got[2], want[2])   # (the compiled graph may sum in another order)


def test_a_captured_graph_replays_on_the_values_copied_into_its_inputs():
    torch = hopper_torch()
    op = _attention_op(torch)
    static = _inputs(torch, 0)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):                    # warm-up off the capture: compiles, loads the module
        op(*static, False)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out, lse = op(*static, False)
    for seed in (1, 2):
        fresh = _inputs(torch, seed)
        for dst, src in zip(static, fresh):
            dst.copy_(src)
        out.fill_(math.nan)
        graph.replay()
        torch.cuda.synchronize()
        want_out, want_lse = op(*fresh, False)
        assert torch.equal(out, want_out) and torch.equal(lse, want_lse), f"replay {seed} is stale"


def test_the_operators_gradients_are_sdpas():
    """Autograd through the operator (its backward kernel) against torch's attention in fp32, eager and compiled;
    a loss that reads lse is refused rather than given a wrong gradient."""
    torch = hopper_torch()
    op = _attention_op(torch)
    q, k, v = (t.requires_grad_() for t in _inputs(torch, 3, h=4, hk=4))
    dout = torch.randn_like(q)
    for run in (lambda: op(q, k, v, True)[0], torch.compile(lambda: op(q, k, v, True)[0], fullgraph=True)):
        grads = torch.autograd.grad(run(), (q, k, v), dout)
        qf, kf, vf = (t.detach().float().transpose(1, 2).requires_grad_() for t in (q, k, v))
        ref = torch.nn.functional.scaled_dot_product_attention(qf, kf, vf, is_causal=True)
        want = torch.autograd.grad(ref, (qf, kf, vf), dout.float().transpose(1, 2))
        for g, w in zip(grads, want):
            torch.testing.assert_close(g.float(), w.transpose(1, 2), rtol=5e-2, atol=5e-2)
    out, lse = op(q, k, v, True)
    with pytest.raises(NotImplementedError, match="no gradient through its lse"):
        (out.float().sum() + lse.sum()).backward()


def test_reduce_overhead_graphs_take_new_input_tensors():
    """``torch.compile(mode="reduce-overhead")`` replays CUDA graphs of the operator; inputs in new tensors at new
    addresses each call (as a model's activations are) are copied into the graph's static inputs by torch, so
    every call gives the eager operator's bits, never a replay of stale inputs."""
    torch = hopper_torch()
    op = _attention_op(torch)
    compiled = torch.compile(lambda q, k, v: op(q, k, v, True)[0], mode="reduce-overhead", fullgraph=True)
    for seed in range(4):
        q, k, v = _inputs(torch, seed)
        got = compiled(q, k, v).clone()
        assert torch.equal(got, op(q, k, v, True)[0]), f"call {seed} replayed stale inputs"
