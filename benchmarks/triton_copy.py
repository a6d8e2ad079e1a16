"""Triton tiled copies of a 2-D row-major tensor through TMA descriptors (the baseline of ``bench_copy.py``).

::

    from triton_copy import probe, TritonCopy
    apis, why_not = probe()                  # e.g. (["host", "device"], None)
    c = TritonCopy("host", src, dst, (64, 128))
    c()                                      # one launch: dst <- src
    python benchmarks/triton_copy.py         # a small correctness check of every available variant (needs a GPU)

Each program loads a ``[BM, BN]`` block through a TMA descriptor of ``src`` and stores it through one
of ``dst`` (out-of-bounds parts of edge blocks are zero-filled on load and clipped on store).
Three descriptor APIs are supported, whichever the installed Triton has:

- ``"host"``: ``triton.tools.tensor_descriptor.TensorDescriptor`` built on the host and passed as a
  kernel argument (Triton >= 3.3; the launcher encodes the ``CUtensorMap`` at each launch);
- ``"device"``: ``tl.make_tensor_descriptor`` (``tl._experimental_make_tensor_descriptor`` in 3.3),
  descriptors created inside the kernel in a global scratch buffer that ``triton.set_allocator``
  provides (Triton >= 3.3);
- ``"experimental"``: ``triton.tools.experimental_descriptor.create_2d_tma_descriptor`` with
  ``tl._experimental_descriptor_load/store`` (Triton 3.0-3.3).

Two kernels per API: one block per program (grid = number of blocks), and a persistent one (grid =
SMs x ``programs_per_sm``, program ``p`` copies blocks ``p, p + G, ...``; ``num_stages`` is then
passed to Triton's software pipeliner for that loop).
"""

import sys

import triton
import triton.language as tl

__all__ = ["probe", "TritonCopy", "triton_version", "APIS"]

APIS = ("host", "device", "experimental")


def triton_version():
    return getattr(triton, "__version__", "unknown")


# -- kernels -------------------------------------------------------------------------------------
# Kernels are compiled on first launch only, so a kernel naming an API that this Triton lacks is harmless
# as long as it is never launched (``probe`` decides which are).


@triton.jit
def _host_tiles(src_desc, dst_desc, N, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(N, BN)
    om = (pid // tiles_n) * BM
    on = (pid % tiles_n) * BN
    dst_desc.store([om, on], src_desc.load([om, on]))


@triton.jit
def _host_persistent(src_desc, dst_desc, M, N, BM: tl.constexpr, BN: tl.constexpr):
    tiles_n = tl.cdiv(N, BN)
    num_tiles = tl.cdiv(M, BM) * tiles_n
    for t in range(tl.program_id(0), num_tiles, tl.num_programs(0)):
        om = (t // tiles_n) * BM
        on = (t % tiles_n) * BN
        dst_desc.store([om, on], src_desc.load([om, on]))


@triton.jit
def _device_tiles(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr):
    src_desc = tl.make_tensor_descriptor(src, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst_desc = tl.make_tensor_descriptor(dst, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(N, BN)
    om = (pid // tiles_n) * BM
    on = (pid % tiles_n) * BN
    dst_desc.store([om, on], src_desc.load([om, on]))


@triton.jit
def _device_persistent(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr):
    src_desc = tl.make_tensor_descriptor(src, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst_desc = tl.make_tensor_descriptor(dst, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    tiles_n = tl.cdiv(N, BN)
    num_tiles = tl.cdiv(M, BM) * tiles_n
    for t in range(tl.program_id(0), num_tiles, tl.num_programs(0)):
        om = (t // tiles_n) * BM
        on = (t % tiles_n) * BN
        dst_desc.store([om, on], src_desc.load([om, on]))


# Triton 3.3 spells the device-side constructor with a leading underscore
@triton.jit
def _device33_tiles(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr):
    src_desc = tl._experimental_make_tensor_descriptor(src, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst_desc = tl._experimental_make_tensor_descriptor(dst, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(N, BN)
    om = (pid // tiles_n) * BM
    on = (pid % tiles_n) * BN
    dst_desc.store([om, on], src_desc.load([om, on]))


@triton.jit
def _device33_persistent(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr):
    src_desc = tl._experimental_make_tensor_descriptor(src, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst_desc = tl._experimental_make_tensor_descriptor(dst, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    tiles_n = tl.cdiv(N, BN)
    num_tiles = tl.cdiv(M, BM) * tiles_n
    for t in range(tl.program_id(0), num_tiles, tl.num_programs(0)):
        om = (t // tiles_n) * BM
        on = (t % tiles_n) * BN
        dst_desc.store([om, on], src_desc.load([om, on]))


# the experimental API: ``src`` (the tensor itself) only gives the element type of the loads
@triton.jit
def _exp_tiles(src_desc, dst_desc, src, N, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(N, BN)
    om = (pid // tiles_n) * BM
    on = (pid % tiles_n) * BN
    x = tl._experimental_descriptor_load(src_desc, [om, on], [BM, BN], src.dtype.element_ty)
    tl._experimental_descriptor_store(dst_desc, x, [om, on])


@triton.jit
def _exp_persistent(src_desc, dst_desc, src, M, N, BM: tl.constexpr, BN: tl.constexpr):
    tiles_n = tl.cdiv(N, BN)
    num_tiles = tl.cdiv(M, BM) * tiles_n
    for t in range(tl.program_id(0), num_tiles, tl.num_programs(0)):
        om = (t // tiles_n) * BM
        on = (t % tiles_n) * BN
        x = tl._experimental_descriptor_load(src_desc, [om, on], [BM, BN], src.dtype.element_ty)
        tl._experimental_descriptor_store(dst_desc, x, [om, on])


# -- host side -----------------------------------------------------------------------------------


def _host_descriptor_class():
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
    except Exception:  # any failure means "not this API"
        return None
    return TensorDescriptor


def _device_constructor():
    """``"new"`` (``tl.make_tensor_descriptor``), ``"3.3"`` (the underscored name) or ``None``."""
    if hasattr(tl, "make_tensor_descriptor"):
        return "new"
    if hasattr(tl, "_experimental_make_tensor_descriptor"):
        return "3.3"
    return None


def _experimental_module():
    try:
        from triton.tools import experimental_descriptor
    except Exception:
        return None
    if not (hasattr(experimental_descriptor, "create_2d_tma_descriptor") and hasattr(tl, "_experimental_descriptor_load")
            and hasattr(tl, "_experimental_descriptor_store")):
        return None
    return experimental_descriptor


def probe():
    """``(apis, reason)``: the descriptor APIs of the installed Triton usable here, in order of preference
    (host-side descriptors first: ``"host"``, else ``"experimental"``; then ``"device"``), and why none
    is when the list is empty."""
    reasons = []
    try:
        import torch
    except Exception as e:
        return [], f"torch not importable: {e}"
    if not torch.cuda.is_available():
        return [], "no CUDA device"
    major, minor = torch.cuda.get_device_capability()
    if major < 9:
        return [], f"TMA needs sm_90+, device is sm_{major}{minor}"
    apis = []
    if _host_descriptor_class() is not None:
        apis.append("host")
    else:
        reasons.append("no triton.tools.tensor_descriptor.TensorDescriptor")
    if _device_constructor() is not None and hasattr(triton, "set_allocator"):
        apis.append("device")
    else:
        reasons.append("no tl.make_tensor_descriptor + triton.set_allocator")
    if "host" not in apis:  # the older host-side API stands in for TensorDescriptor (Triton 3.0-3.3)
        if _experimental_module() is not None:
            apis.insert(0, "experimental")
        else:
            reasons.append("no triton.tools.experimental_descriptor.create_2d_tma_descriptor + "
                           "tl._experimental_descriptor_load/store")
    return apis, None if apis else f"triton {triton_version()}: " + "; ".join(reasons)


_ALLOCATOR_SET = []


def _ensure_allocator():
    """Device-side descriptors live in a global scratch buffer: let Triton allocate it through torch."""
    if _ALLOCATOR_SET:
        return
    import torch

    def alloc(size, alignment, stream):
        return torch.empty(size, device="cuda", dtype=torch.int8)

    triton.set_allocator(alloc)
    _ALLOCATOR_SET.append(alloc)


def _sm_count():
    import torch

    return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count


class TritonCopy:
    """One configuration of the Triton copy ``dst <- src`` (2-D, contiguous, same shape and dtype), with its
    descriptors built once; calling it launches the kernel on the current stream.

    ``api``: one of ``APIS``; ``block``: (BM, BN); ``persistent``: grid of ``SMs x programs_per_sm`` programs
    looping over the blocks (``num_stages`` goes to the pipeliner), else one block per program."""

    def __init__(self, api, src, dst, block, persistent=False, num_warps=4, num_stages=1, programs_per_sm=1):
        if api not in APIS:
            raise ValueError(f"api must be one of {APIS}, got {api!r}")
        if src.dim() != 2 or src.shape != dst.shape or src.dtype != dst.dtype:
            raise ValueError(f"src and dst must be 2-D of the same shape and dtype, got {tuple(src.shape)} "
                             f"{src.dtype} and {tuple(dst.shape)} {dst.dtype}")
        if not (src.is_contiguous() and dst.is_contiguous()):
            raise ValueError("src and dst must be contiguous (row-major)")
        self.api, self.src, self.dst = api, src, dst
        self.block = (int(block[0]), int(block[1]))
        self.persistent, self.num_warps, self.num_stages = bool(persistent), int(num_warps), int(num_stages)
        self.programs_per_sm = int(programs_per_sm)
        M, N = (int(v) for v in src.shape)
        BM, BN = self.block
        self.M, self.N = M, N
        self.num_tiles = triton.cdiv(M, BM) * triton.cdiv(N, BN)
        if self.persistent:
            self.grid = (max(1, min(self.num_tiles, _sm_count() * self.programs_per_sm)),)
        else:
            self.grid = (self.num_tiles,)
        opts = dict(BM=BM, BN=BN, num_warps=self.num_warps, num_stages=self.num_stages)
        if api == "host":
            TD = _host_descriptor_class()
            if TD is None:
                raise RuntimeError("this Triton has no triton.tools.tensor_descriptor.TensorDescriptor")
            self._sd = TD(src, [M, N], [N, 1], [BM, BN])
            self._dd = TD(dst, [M, N], [N, 1], [BM, BN])
            if self.persistent:
                k = _host_persistent[self.grid]
                self._launch = lambda: k(self._sd, self._dd, M, N, **opts)
            else:
                k = _host_tiles[self.grid]
                self._launch = lambda: k(self._sd, self._dd, N, **opts)
        elif api == "device":
            which = _device_constructor()
            if which is None or not hasattr(triton, "set_allocator"):
                raise RuntimeError("this Triton has no tl.make_tensor_descriptor / triton.set_allocator")
            _ensure_allocator()
            if which == "new":
                fn = _device_persistent if self.persistent else _device_tiles
            else:
                fn = _device33_persistent if self.persistent else _device33_tiles
            k = fn[self.grid]
            self._launch = lambda: k(src, dst, M, N, **opts)
        else:
            mod = _experimental_module()
            if mod is None:
                raise RuntimeError("this Triton has no experimental TMA descriptor API")
            self._sd = self._exp_descriptor(mod, src, M, N, BM, BN)
            self._dd = self._exp_descriptor(mod, dst, M, N, BM, BN)
            if self.persistent:
                k = _exp_persistent[self.grid]
                self._launch = lambda: k(self._sd, self._dd, src, M, N, **opts)
            else:
                k = _exp_tiles[self.grid]
                self._launch = lambda: k(self._sd, self._dd, src, N, **opts)

    @staticmethod
    def _exp_descriptor(mod, t, M, N, BM, BN):
        d = mod.create_2d_tma_descriptor(t.data_ptr(), M, N, BM, BN, t.element_size())
        # 3.1+: an object the launcher passes by value; 3.0: the 128 descriptor bytes in a tensor (moved to the GPU)
        if hasattr(d, "tma_desc_cpu_ptr"):
            return d
        import torch

        if isinstance(d, torch.Tensor):
            return d if d.is_cuda else d.cuda()
        return torch.as_tensor(d).cuda()

    def __call__(self):
        self._launch()

    def describe(self):
        BM, BN = self.block
        kind = (f"persistent grid {self.grid[0]:4d} st {self.num_stages}" if self.persistent
                else f"1 block/program grid {self.grid[0]}")
        return f"{self.api:6s} {str(self.src.dtype).replace('torch.', ''):8s} block {BM:3d}x{BN:<3d} w{self.num_warps} {kind}"


def _self_check():
    """Copy a few small tensors (partial edge blocks included) with every available API and kernel kind."""
    import torch

    apis, why = probe()
    print(f"triton {triton_version()}: APIs {apis or 'none'}" + (f" ({why})" if why else ""))
    if not apis:
        return 1
    cases = [(torch.float32, (1000, 1000), (64, 128)), (torch.float32, (256, 512), (128, 64)),
             (torch.bfloat16, (777, 4096), (128, 128)), (torch.bfloat16, (300, 520), (64, 64))]
    bad = 0
    for api in apis:
        for dtype, shape, block in cases:
            for persistent, stages in ((False, 1), (True, 1), (True, 3)):
                src = torch.randn(shape, device="cuda").to(dtype)
                dst = torch.zeros_like(src)
                try:
                    c = TritonCopy(api, src, dst, block, persistent=persistent, num_stages=stages)
                    c()
                    torch.cuda.synchronize()
                    ok = torch.equal(dst.view(torch.uint8), src.view(torch.uint8))
                    msg = "ok" if ok else "MISMATCH"
                except Exception as e:
                    ok, msg = False, f"failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                bad += not ok
                print(f"{api:12s} {str(dtype):15s} {str(shape):12s} block {block} "
                      f"{'persistent st ' + str(stages) if persistent else 'tiles':15s} {msg}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(_self_check())
