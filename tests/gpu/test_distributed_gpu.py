"""On 2 or more GPUs, one process per GPU under ``torchrun``: the all-gather GEMM (examples/all_gather_gemm.py;
its products against NCCL's all-gather and torch's matmul, A's buffer poisoned, late ranks, a CUDA graph) and
the symmetric-memory all-reduce (examples/all_reduce.py, examples/symmetric.py): exact integer sums and the bits of the ordered fp32 sum for floats against
NCCL's, poisoned guards around the outputs, a CUDA-graph replay, a rank 2 s late (no error), a rank that never
comes (a bounded wait that raises naming it) and ranks that disagree on the length (both raise). The PTX of the
kernel is checked and assembled everywhere."""

import os
import subprocess
import sys

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

import cute_py as cute  # noqa: E402
from cute_py.compiler import DeviceArraySpec as Spec  # noqa: E402
from examples.all_gather_gemm import all_gather_gemm  # noqa: E402
from examples.all_reduce import PAD_SHAPE, all_reduce, buffer_elements  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def _compile(world, n, dtype, two_shot):
    length = buffer_elements(n, 32 if dtype == "Float32" else 16, world, two_shot)
    return cute.compile(all_reduce, Spec(dtype, (n,)), Spec(dtype, (n,)),
                        tuple(Spec(dtype, (length,)) for _ in range(world)),
                        tuple(Spec("Int32", PAD_SHAPE) for _ in range(world)), Spec("Int32", (3,)), 0, 10 ** 9,
                        two_shot=two_shot)


@pytest.mark.parametrize("two_shot", [False, True])
def test_the_barrier_is_release_acquire_at_system_scope_and_nothing_is_multicast(two_shot, assemble_ptx):
    c = _compile(4, (1 << 16) + 8, "BFloat16", two_shot)
    # 4 peers x 2 barriers (two shot) or 1 (one shot: alternating halves); 64-bit flags (epoch, signal)
    assert c.ptx.count("st.release.sys.global.s64") == (8 if two_shot else 4)
    assert c.ptx.count("ld.acquire.sys.global.s64") == (8 if two_shot else 4)
    assert "atom.acq_rel.gpu.global.add.u32" in c.ptx or "atom.acq_rel.gpu.global.add.s32" in c.ptx
    assert "multimem" not in c.ptx and "%globaltimer" in c.ptx and ".local" not in c.ptx
    assert "ld.global.v4.b32" in c.ptx and "st.global.v4.b32" in c.ptx
    # the one shot stores x into the 3 peers' buffers and reads nothing remote: 3 + 1 (out) vector stores
    assert two_shot or c.ptx.count("st.global.v4.b32") == 4
    assert assemble_ptx(c.ptx)[:4] == b"\x7fELF"


def test_buffers_of_the_wrong_length_are_refused():
    with pytest.raises(cute.CuteValueError, match="buffer_elements for two shot of 1000"):
        cute.compile(all_reduce, Spec("Float32", (1000,)), Spec("Float32", (1000,)),
                     (Spec("Float32", (1000,)), Spec("Float32", (1000,))),
                     (Spec("Int32", PAD_SHAPE), Spec("Int32", PAD_SHAPE)), Spec("Int32", (3,)), 0, 10 ** 9,
                     two_shot=True)


def _torch_gpus():
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.mark.gpu
@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("worker", ["_all_reduce_worker.py", "_all_gather_gemm_worker.py"])
def test_across_gpus(worker, world):
    if _torch_gpus() < world:
        pytest.skip(f"needs {world} CUDA GPUs, found {_torch_gpus()}")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(HERE)),
                                                        os.environ.get("PYTHONPATH", "")]))
    # --standalone: a free port for each run (a fixed one can still be held by the run before)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={world}",
           os.path.join(HERE, worker)]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=400)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-8000:]
    for r in range(world):
        assert f"RANK {r} OK" in run.stdout


def _args(world=2, n=1024, dtype="Float32", pads=PAD_SHAPE, state=(3,), x_stride=None, out_n=None, two_shot=False):
    length = buffer_elements(n, 32 if dtype in ("Float32", "Int32") else 16, world, two_shot)
    x = Spec(dtype, (n,)) if x_stride is None else Spec(dtype, (n,), (x_stride,))
    return (x, Spec(dtype, (out_n or n,)), tuple(Spec(dtype, (length,)) for _ in range(world)),
            tuple(Spec("Int32", pads) for _ in range(world)), Spec("Int32", state))


@pytest.mark.parametrize("args, rank, match", [
    (_args(world=9), 0, "1 to 8 ranks"),
    (_args(), 2, r"rank must be in \[0, 2\)"),
    (_args(dtype="Float64"), 0, "all_reduce sums Float32, BFloat16, Float16, Int32"),
    (_args(pads=(64, 8, 2)), 0, "pads\\[0\\] must be an Int32 tensor of shape"),
    (_args(state=(1,)), 0, "state must be an Int32 tensor of 3 elements"),
    (_args(out_n=1000), 0, "out must be a 1-D Float32 tensor of 1024 elements"),
    (_args(x_stride=2), 0, "x must be contiguous"),
])
def test_hostile_arguments_are_refused_with_the_rule(args, rank, match):
    with pytest.raises(cute.CuteError, match=match):
        cute.compile(all_reduce, *args, rank, 10 ** 9)


@pytest.mark.parametrize("n, two_shot", [((1 << 29) + 1, False), ((1 << 31) - 1, True), ((1 << 34) - 1, False)])
def test_buffers_of_more_vectors_than_32_bit_indices_reach_are_refused(n, two_shot):
    # odd lengths: one element a vector (the one shot's buffers: 2 W n elements)
    with pytest.raises(cute.CuteValueError, match="indexes the buffers' vectors in 32 bits"):
        cute.compile(all_reduce, *_args(n=n, two_shot=two_shot), 0, 10 ** 9, two_shot=two_shot)


def test_the_largest_buffers_32_bit_indices_reach_compile():
    c = cute.compile(all_reduce, *_args(n=(1 << 29) - 1), 0, 10 ** 9)     # 2^31 - 4 vectors: the last one reached
    assert c.ptx.count("st.release.sys.global.s64") == 2 and "ld.global.b32" in c.ptx


@pytest.mark.parametrize("timeout", [0, -5, 1.5, 1 << 62])
def test_a_timeout_that_is_not_a_positive_int_of_nanoseconds_is_refused(timeout):
    with pytest.raises(cute.CuteValueError, match="timeout_ns must be a positive int"):
        cute.compile(all_reduce, *_args(), 0, timeout)


class _Handle:
    """The part of a symmetric-memory handle ``SymmetricAllReduce`` calls on each call: each rank's buffer as a
    view at an offset (CPU tensors here)."""

    def __init__(self, torch, world, size):
        self.buffers = [torch.zeros(size) for _ in range(world)]

    def get_buffer(self, r, shape, dtype, offset):
        return self.buffers[r][offset:offset + shape[0]].view(shape)


def _wrapper(monkeypatch, world=4, one_shot_bytes=1024, max_elements=4096):
    """A ``SymmetricAllReduce`` without GPUs or a process group (the state its constructor leaves, on CPU tensors),
    whose kernel call is recorded instead of launched."""
    torch = pytest.importorskip("torch")
    import examples.symmetric as sym
    ar = object.__new__(sym.SymmetricAllReduce)
    ar.rank, ar.world, ar.dtype, ar.max_elements, ar.bits = 1, world, torch.float32, max_elements, 32
    ar.timeout_ns, ar.one_shot_bytes, ar.one_shot_elements = 10 ** 9, one_shot_bytes, one_shot_bytes // 4
    ar._two_shot_at = 64 * -(-buffer_elements(ar.one_shot_elements, 32, world, False) // 64)
    ar.handle = _Handle(torch, world, ar._two_shot_at + buffer_elements(max_elements, 32, world, True))
    ar.pads, ar.state, ar._bufs, ar._torch, ar._device = ("pads",) * world, "state", {}, torch, 0
    ar._current_stream = lambda device: 1234 + device
    calls = []
    monkeypatch.setattr(sym, "all_reduce", lambda *args, **kw: calls.append((args, kw)))
    return torch, ar, calls


@pytest.mark.parametrize("n, shape, algorithm, two_shot", [
    (100, (100,), "auto", False), (256, (16, 16), "auto", False), (257, (257,), "auto", True),
    (10, (2, 5), "two_shot", True), (256, (256,), "one_shot", False)])
def test_a_call_passes_the_flat_tensors_the_buffers_for_its_length_and_the_stream(monkeypatch, n, shape, algorithm,
                                                                                  two_shot):
    torch, ar, calls = _wrapper(monkeypatch)
    x = torch.arange(n, dtype=torch.float32).reshape(shape)
    out = ar(x, algorithm=algorithm, check=False)
    ar(x, out, algorithm=algorithm, check=False)
    assert out.shape == x.shape and len(calls) == 2
    for args, kw in calls:
        xv, ov, bufs, pads, state, rank, timeout, flag = args
        assert kw == {"stream": 1234} and flag is two_shot and (rank, timeout, pads, state) == (1, 10 ** 9, ar.pads,
                                                                                               "state")
        assert xv.shape == (n,) and xv.data_ptr() == x.data_ptr()
        assert ov.shape == (n,) and ov.data_ptr() == out.data_ptr()
        length = buffer_elements(n, 32, 4, two_shot)
        at = ar._two_shot_at if two_shot else 0
        assert [(b.shape, b.data_ptr()) for b in bufs] == [((length,), ar.handle.buffers[r][at:].data_ptr())
                                                          for r in range(4)]
    assert calls[0][0][2] is calls[1][0][2]          # the buffers' views made once per length and algorithm


@pytest.mark.parametrize("x, algorithm, match", [
    (lambda t: t.zeros(257), "one_shot", "the one shot takes at most 256 elements here"),
    (lambda t: t.zeros(4097), "auto", "x has 4097 elements"),
    (lambda t: t.zeros(8, dtype=t.float16), "auto", "contiguous"),
    (lambda t: t.zeros(4, 4).t(), "auto", "contiguous"),
    (lambda t: t.zeros(8), "ring", "algorithm must be one of"),
])
def test_a_call_the_wrapper_cannot_take_is_refused_before_any_launch(monkeypatch, x, algorithm, match):
    torch, ar, calls = _wrapper(monkeypatch)
    with pytest.raises(cute.CuteValueError, match=match):
        ar(x(torch), algorithm=algorithm, check=False)
    assert calls == []


def _gather_specs(rows=1024, k=512, n=256, world=4):
    return (Spec("BFloat16", (rows, k)), Spec("BFloat16", (n, k)), Spec("BFloat16", (rows, n)), Spec("Int32", (world,)),
            Spec("Int32", (1,)))


def test_the_gathered_gemm_waits_for_each_shard_by_acquire_and_fences_the_tma_loads(assemble_ptx):
    c = cute.compile(all_gather_gemm, *_gather_specs(), 256, 1, 4, 10 ** 10)
    ptx = c.ptx
    assert ptx.count("ld.acquire.sys.global") == 1 and ptx.count("fence.proxy.async.global") == 1
    assert ptx.index("ld.acquire.sys.global") < ptx.index("cp.async.bulk.tensor")   # the wait before the loads
    assert "%globaltimer" in ptx and "wgmma.mma_async" in ptx and "multimem" not in ptx and ".local" not in ptx
    assert assemble_ptx(ptx)[:4] == b"\x7fELF"


@pytest.mark.parametrize("shard_rows, rank, world, match", [
    (200, 0, 4, "multiple of 128"), (256, 4, 4, "0 <= rank"), (128, 0, 4, "A has 1024 rows")])
def test_a_gathered_gemm_of_inconsistent_shards_is_refused(shard_rows, rank, world, match):
    with pytest.raises(cute.CuteValueError, match=match):
        cute.compile(all_gather_gemm, *_gather_specs(world=world), shard_rows, rank, world, 10 ** 10)


class _StubTorch:
    """Enough of torch.cuda for ``RecordedErrors``: a capture flag and a stream that counts its waits."""

    def __init__(self):
        self.capturing, self.waits = False, 0
        self.cuda = self

    def is_current_stream_capturing(self):
        return self.capturing

    def current_stream(self):
        return self

    def synchronize(self):
        self.waits += 1


class _Word:
    def __init__(self, value):
        self.value = value

    def item(self):
        return self.value


def test_a_recorded_error_is_raised_by_check_and_by_every_later_call():
    from examples.symmetric import RecordedErrors

    class Op(RecordedErrors):
        def __init__(self):
            self._torch, self.state = _StubTorch(), [_Word(0)]

        def _describe(self, code, rank):
            return f"code {code} rank {rank}"

    op = Op()
    op._before_call(True)
    op.check()                                           # nothing recorded: no error, one wait
    assert op._torch.waits == 1
    op._torch.capturing = True
    with pytest.raises(cute.CuteValueError, match="check=True waits for the kernel"):
        op._before_call(True)
    op._before_call(False)                               # check=False is fine under a capture
    op._torch.capturing = False
    op.state[0].value = 2 << 8 | 3
    op._before_call(False)                               # not seen yet: nothing waits for it
    with pytest.raises(cute.CuteError, match="code 2 rank 3"):
        op.check()
    op.state[0].value = 0                                # the word may change: the first error seen stays
    for _ in range(2):
        with pytest.raises(cute.CuteError, match="code 2 rank 3"):
            op._before_call(False)
