"""On 2 or more GPUs: the symmetric-memory all-reduce (examples/all_reduce.py, examples/symmetric.py) in one
process per GPU under ``torchrun``: exact integer sums and the bits of the ordered fp32 sum for floats against
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
    # 4 peers x 2 barriers (two shot) or 1 (one shot: alternating halves)
    assert c.ptx.count("atom.release.sys.global.cas.b32") == (8 if two_shot else 4)
    assert c.ptx.count("atom.acquire.sys.global.cas.b32") == (8 if two_shot else 4)
    assert ("atom.acq_rel.gpu.global.add.u32" in c.ptx or "atom.acq_rel.gpu.global.add.s32" in c.ptx) != two_shot
    assert "multimem" not in c.ptx and "%globaltimer" in c.ptx and ".local" not in c.ptx
    assert "ld.global.v4.b32" in c.ptx and "st.global.v4.b32" in c.ptx
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
def test_all_reduce_across_gpus(world):
    if _torch_gpus() < world:
        pytest.skip(f"needs {world} CUDA GPUs, found {_torch_gpus()}")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(HERE)),
                                                        os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={world}", "--master-port",
           str(29500 + world), os.path.join(HERE, "_all_reduce_worker.py")]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=400)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-8000:]
    for r in range(world):
        assert f"RANK {r} OK" in run.stdout
